package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/payorch/shared/requestid"
)

func TestContextHandlerAddsRequestID(t *testing.T) {
	ctx := requestid.WithID(context.Background(), "req-123")
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string // the whole line, minus time
	}{
		{"plain", func(l *slog.Logger) { l.InfoContext(ctx, "m", "a", 1) },
			`{"level":"INFO","msg":"m","a":1,"request_id":"req-123"}`},
		{"no id in context", func(l *slog.Logger) { l.InfoContext(context.Background(), "m") },
			`{"level":"INFO","msg":"m"}`},
		{"with attrs", func(l *slog.Logger) { l.With("svc", "core").InfoContext(ctx, "m") },
			`{"level":"INFO","msg":"m","svc":"core","request_id":"req-123"}`},
		{"stays top level under groups", func(l *slog.Logger) {
			l.With("svc", "core").WithGroup("db").With("table", "buyers").WithGroup("q").InfoContext(ctx, "m", "rows", 2)
		}, `{"level":"INFO","msg":"m","svc":"core","request_id":"req-123","db":{"table":"buyers","q":{"rows":2}}}`},
		{"grouped logger without id", func(l *slog.Logger) {
			l.WithGroup("db").InfoContext(context.Background(), "m", "rows", 2)
		}, `{"level":"INFO","msg":"m","db":{"rows":2}}`},
		{"id is scanned", func(l *slog.Logger) {
			l.InfoContext(requestid.WithID(ctx, "4111111111111111"), "m")
		}, `{"level":"INFO","msg":"m","request_id":"[REDACTED-PAN]"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(New(&buf, slog.LevelInfo))
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			delete(got, "time")
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if !bytes.Equal(g, w) {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}

func TestNewHonoursLevel(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, slog.LevelWarn)
	l.Info("dropped")
	if buf.Len() != 0 {
		t.Errorf("info written at warn level: %s", buf.String())
	}
}
