package logging

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// recorder is a TestingT that records failures instead of failing.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestLogCatcherAssertNoPAN(t *testing.T) {
	tests := []struct {
		name    string
		written string
		pans    []string
		fails   int
	}{
		{"clean", "order 1234567890123456 at 1732258500123\n", []string{"4111111111111111"}, 0},
		{"luhn run", "ok\ncard 5555555555554444\n", nil, 1},
		{"separated luhn run", "card 4111 1111 1111 1111\n", nil, 1},
		{"listed non-luhn pan", "card 4111111111111112\n", []string{"4111111111111112"}, 1},
		{"listed pan embedded in longer digits", "ref 004111111111111111999\n", []string{"4111-1111-1111-1111"}, 1},
		{"listed pan written with spaces", "ref 4111 1111 1111 1112\n", []string{"4111111111111112"}, 1},
		{"one failure per line", "a 4111111111111111 b 4242424242424242\nc 4111111111111111\n", nil, 2},
		{"unterminated last line", "x\n378282246310005", nil, 1},
		{"digitless argument", "x\n", []string{"none"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c LogCatcher
			fmt.Fprint(&c, tt.written)
			var r recorder
			c.AssertNoPAN(&r, tt.pans...)
			if len(r.errs) != tt.fails {
				t.Fatalf("got %d failures %q, want %d", len(r.errs), r.errs, tt.fails)
			}
			for _, e := range r.errs {
				for _, p := range append(tt.pans, testPANs...) {
					if d := digitsOnly(p); d != "" && strings.Contains(e, d) {
						t.Errorf("failure message prints the PAN: %s", e)
					}
				}
			}
		})
	}
}

func TestLogCatcherWithLogger(t *testing.T) {
	var c LogCatcher
	l := New(&c, slog.LevelDebug)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range testPANs {
				l.Info("charge", "worker", i, "card", p, "err", fmt.Errorf("declined %s", p))
			}
		}()
	}
	wg.Wait()
	if got, want := len(c.Lines()), 8*len(testPANs); got != want {
		t.Fatalf("got %d lines, want %d", got, want)
	}
	c.AssertNoPAN(t, testPANs...)
	c.Reset()
	if c.String() != "" || c.Lines() != nil {
		t.Error("Reset left data behind")
	}
}

func TestAssertNoPANIn(t *testing.T) {
	var r recorder
	AssertNoPANIn(&r, "dump", "id|pan\n1|6011111111111117\n")
	if len(r.errs) != 1 || !strings.HasPrefix(r.errs[0], "dump line 2:") {
		t.Errorf("got %q", r.errs)
	}
}

// Writes of every size, across chunk boundaries and larger than a chunk,
// come back whole and in order; Reset empties the catcher.
func TestLogCatcherKeepsEveryWriteInOrder(t *testing.T) {
	var c LogCatcher
	var want strings.Builder
	for i, size := range []int{1, 200, catcherChunk - 150, 300, catcherChunk * 2, 0, 17} {
		p := strings.Repeat(string(rune('a'+i)), size) + "\n"
		want.WriteString(p)
		if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
	}
	if got := c.String(); got != want.String() {
		t.Fatalf("got %d bytes, want %d in order", len(got), want.Len())
	}
	if lines := c.Lines(); len(lines) != 7 || len(lines[4]) != catcherChunk*2 {
		t.Fatalf("%d lines", len(lines))
	}
	c.Reset()
	if c.String() != "" || c.Lines() != nil {
		t.Fatal("Reset kept data")
	}
}
