package logging

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkAccessLine is the line every request writes, through the service
// logger; BenchmarkAccessLinePlainJSON the same line through slog's JSON
// handler alone, the cost of redaction being the difference.
func BenchmarkAccessLine(b *testing.B) {
	benchAccessLine(b, New(io.Discard, slog.LevelInfo).With("service", "vault-proxy").Handler())
}

func BenchmarkAccessLinePlainJSON(b *testing.B) {
	benchAccessLine(b, slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}).
		WithAttrs([]slog.Attr{slog.String("service", "vault-proxy")}))
}

func benchAccessLine(b *testing.B, h slog.Handler) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
		r.AddAttrs(slog.String("request_id", "0f8fad5b-d9cb-469f-a165-70867728950e"), slog.String("method", "POST"),
			slog.String("path", "/vault-forward"), slog.Int("status", 200), slog.Duration("duration", 1234567))
		_ = h.Handle(ctx, r)
	}
}
