package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/requestid"
)

var accessTime = time.Date(2026, 11, 24, 13, 5, 7, 123456789, time.UTC)

// viaSlog is the oracle: the record writeAccess stands for, logged
// through the same logger's handler.
func viaSlog(t testing.TB, ctx context.Context, h slog.Handler, l AccessLine) {
	t.Helper()
	r := slog.NewRecord(l.Time, slog.LevelInfo, AccessMessage, 0)
	r.AddAttrs(l.Attrs()...)
	if err := h.Handle(ctx, r); err != nil {
		t.Fatal(err)
	}
}

// pair returns two handlers of the same shape, one writing to each catcher.
func pair(with func(*slog.Logger) *slog.Logger) (fast, slow slog.Handler, fastOut, slowOut *LogCatcher) {
	fastOut, slowOut = &LogCatcher{}, &LogCatcher{}
	return with(New(fastOut, slog.LevelDebug)).Handler(), with(New(slowOut, slog.LevelDebug)).Handler(), fastOut, slowOut
}

func TestWriteAccessWritesWhatSlogWrites(t *testing.T) {
	line := AccessLine{Time: accessTime, RequestID: "0f8fad5b-d9cb-469f-a165-70867728950e", Method: "POST",
		Path: "/vault-forward", Status: 200, Duration: 1234567}
	withCtxID := requestid.WithID(context.Background(), "req_from_context")
	cases := []struct {
		name string
		ctx  context.Context
		with func(*slog.Logger) *slog.Logger
		line AccessLine
	}{
		{"bare logger", context.Background(), func(l *slog.Logger) *slog.Logger { return l }, line},
		{"service and listener", context.Background(),
			func(l *slog.Logger) *slog.Logger { return l.With("service", "vault-proxy").With("listener", "public") }, line},
		{"no request id attribute", context.Background(), func(l *slog.Logger) *slog.Logger { return l.With("service", "core-api") },
			AccessLine{Time: accessTime, Method: "GET", Path: "/buyers", Status: 404, Duration: time.Millisecond}},
		{"request id from the context", withCtxID, func(l *slog.Logger) *slog.Logger { return l.With("service", "core-api") },
			AccessLine{Time: accessTime, Method: "GET", Path: "/buyers", Status: 200, Duration: 42}},
		{"both request ids", withCtxID, func(l *slog.Logger) *slog.Logger { return l }, line},
		{"html characters, which slog does not escape", context.Background(), func(l *slog.Logger) *slog.Logger { return l },
			AccessLine{Time: accessTime, Method: "GET", Path: "/a<b>&c?'", Status: 400, Duration: 1}},
		{"zone offset and a whole second", context.Background(), func(l *slog.Logger) *slog.Logger { return l },
			AccessLine{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Method: "GET", Path: "/", Status: 200}},
		{"longest duration that cannot be a card number", context.Background(), func(l *slog.Logger) *slog.Logger { return l },
			AccessLine{Time: accessTime, Method: "GET", Path: "/", Status: 200, Duration: minPANValue - 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow, fastOut, slowOut := pair(tc.with)
			if !writeAccess(tc.ctx, fast, tc.line) {
				t.Fatal("writeAccess declined a plain line")
			}
			viaSlog(t, tc.ctx, slow, tc.line)
			if fastOut.String() != slowOut.String() {
				t.Fatalf("writeAccess wrote\n%s\nslog wrote\n%s", fastOut, slowOut)
			}
		})
	}
}

// Whatever needs redacting or escaping is left to slog: writeAccess
// declines, writes nothing, and the caller's slog record is redacted.
func TestWriteAccessDeclinesWhatNeedsRedactingOrEscaping(t *testing.T) {
	const pan = "4111111111111111"
	plainLine := AccessLine{Time: accessTime, Method: "GET", Path: "/x", Status: 200, Duration: 5}
	withPath := func(p string) AccessLine { l := plainLine; l.Path = p; return l }
	same := func(l *slog.Logger) *slog.Logger { return l }
	cases := []struct {
		name string
		ctx  context.Context
		with func(*slog.Logger) *slog.Logger
		line AccessLine
	}{
		{"a card number in the path", context.Background(), same, withPath("/cards/" + pan)},
		{"a spaced card number in the path", context.Background(), same, withPath("/cards/4111 1111 1111 1111")},
		{"a card number as request id", context.Background(), same, AccessLine{Time: accessTime, RequestID: pan, Method: "GET", Path: "/"}},
		{"a card number in the context's request id", requestid.WithID(context.Background(), "id-"+pan), same, plainLine},
		{"a card number as method", context.Background(), same, AccessLine{Time: accessTime, Method: pan, Path: "/"}},
		{"a quote", context.Background(), same, withPath(`/a"b`)},
		{"a backslash", context.Background(), same, withPath(`/a\b`)},
		{"a control character", context.Background(), same, withPath("/a\nb")},
		{"non-ASCII", context.Background(), same, withPath("/é")},
		{"invalid UTF-8", context.Background(), same, withPath("/\xff")},
		{"a duration with a card number's digits", context.Background(), same,
			AccessLine{Time: accessTime, Method: "GET", Path: "/", Status: 200, Duration: 4111111111111111}},
		{"a duration with a 12-digit card number's digits", context.Background(), same,
			AccessLine{Time: accessTime, Method: "GET", Path: "/", Status: 200, Duration: 600000000007}},
		{"a year past 9999", context.Background(), same, AccessLine{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Method: "GET", Path: "/"}},
		{"a secret-looking With key", context.Background(), func(l *slog.Logger) *slog.Logger { return l.With("api_key", "abc") }, plainLine},
		{"a card number in a With value", context.Background(), func(l *slog.Logger) *slog.Logger { return l.With("note", pan) }, plainLine},
		{"a With value that needs escaping", context.Background(), func(l *slog.Logger) *slog.Logger { return l.With("note", "a\tb") }, plainLine},
		{"a number With", context.Background(), func(l *slog.Logger) *slog.Logger { return l.With("port", 8443) }, plainLine},
		{"a group", context.Background(), func(l *slog.Logger) *slog.Logger { return l.WithGroup("http") }, plainLine},
		{"a plain With after a group", context.Background(),
			func(l *slog.Logger) *slog.Logger { return l.WithGroup("http").With("service", "x") }, plainLine},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow, fastOut, slowOut := pair(tc.with)
			if writeAccess(tc.ctx, fast, tc.line) {
				t.Fatalf("writeAccess wrote %s", fastOut)
			}
			if fastOut.String() != "" {
				t.Fatalf("declined but wrote %s", fastOut)
			}
			viaSlog(t, tc.ctx, slow, tc.line)
			slowOut.AssertNoPAN(t, pan)
			// LogAccess falls back to exactly that.
			LogAccess(tc.ctx, fast, tc.line)
			if fastOut.String() != slowOut.String() {
				t.Fatalf("LogAccess wrote\n%s\nslog wrote\n%s", fastOut, slowOut)
			}
			var m map[string]any
			// slog itself writes no valid line for a year past 9999.
			if err := json.Unmarshal([]byte(slowOut.String()), &m); err != nil && tc.line.Time.Year() <= 9999 {
				t.Fatalf("slog's line is not JSON: %v", err)
			}
		})
	}
}

func TestWriteAccessOnlyForItsOwnSafeWriters(t *testing.T) {
	line := AccessLine{Time: accessTime, Method: "GET", Path: "/", Status: 200}
	var buf bytes.Buffer // not safe for concurrent writes: slog's lock must guard it
	if writeAccess(context.Background(), New(&buf, slog.LevelInfo).Handler(), line) || buf.Len() != 0 {
		t.Fatal("took the short path to a bytes.Buffer")
	}
	plainJSON := slog.NewJSONHandler(io.Discard, nil)
	if writeAccess(context.Background(), plainJSON, line) {
		t.Fatal("took the short path for a handler not from New")
	}
	bw := NewBufferedWriter(io.Discard, BufferOptions{})
	defer bw.Close()
	for _, w := range []io.Writer{&LogCatcher{}, bw, io.Discard} {
		if !writeAccess(context.Background(), New(w, slog.LevelInfo).Handler(), line) {
			t.Fatalf("declined for %T", w)
		}
	}
}

func TestWriteAccessBelowTheLevelWritesNothing(t *testing.T) {
	var out LogCatcher
	h := New(&out, slog.LevelWarn).Handler()
	if !writeAccess(context.Background(), h, AccessLine{Time: accessTime, Method: "GET", Path: "/", Status: 200}) {
		t.Fatal("writeAccess should report the line handled: the level drops it")
	}
	if out.String() != "" {
		t.Fatalf("wrote %q below the level", out.String())
	}
}

// Lines written by both paths at once stay whole: the short path writes
// outside slog's lock, to writers that keep each Write together.
func TestWriteAccessConcurrentWithSlog(t *testing.T) {
	var out LogCatcher
	log := New(&out, slog.LevelInfo).With("service", "vault-proxy")
	var wg sync.WaitGroup
	const n = 200
	for g := range 4 {
		wg.Go(func() {
			for i := range n {
				l := AccessLine{Time: time.Now(), Method: "GET", Path: "/p", Status: 200 + g, Duration: time.Duration(i)}
				if g%2 == 0 {
					if !writeAccess(context.Background(), log.Handler(), l) {
						t.Error("declined")
						return
					}
				} else {
					log.LogAttrs(context.Background(), slog.LevelInfo, AccessMessage, l.Attrs()...)
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4*n {
		t.Fatalf("%d lines, want %d", len(lines), 4*n)
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["service"] != "vault-proxy" || m["msg"] != AccessMessage {
			t.Fatalf("broken line %q: %v", l, err)
		}
	}
}

// FuzzWriteAccess: whenever the short path writes, it writes what slog
// would, and never a card number.
func FuzzWriteAccess(f *testing.F) {
	f.Add("POST", "/vault-forward", "0f8fad5b-d9cb-469f-a165-70867728950e", 200, int64(1234567))
	f.Add("GET", "/cards/4111111111111111", "", 404, int64(0))
	f.Add("GET", "/a b/<c>", "id with spaces", 500, int64(999999999999))
	f.Fuzz(func(t *testing.T, method, path, id string, status int, dur int64) {
		l := AccessLine{Time: accessTime, RequestID: id, Method: method, Path: path, Status: status, Duration: time.Duration(dur)}
		fast, slow, fastOut, slowOut := pair(func(l *slog.Logger) *slog.Logger { return l.With("service", "vault-proxy") })
		if !writeAccess(context.Background(), fast, l) {
			return
		}
		viaSlog(t, context.Background(), slow, l)
		if fastOut.String() != slowOut.String() {
			t.Fatalf("writeAccess wrote\n%q\nslog wrote\n%q", fastOut, slowOut)
		}
		fastOut.AssertNoPAN(t)
	})
}

func BenchmarkAccessLineShortPath(b *testing.B) {
	h := New(io.Discard, slog.LevelInfo).With("service", "vault-proxy").Handler()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		LogAccess(ctx, h, AccessLine{Time: time.Now(), RequestID: "0f8fad5b-d9cb-469f-a165-70867728950e", Method: "POST",
			Path: "/vault-forward", Status: 200, Duration: 1234567})
	}
}
