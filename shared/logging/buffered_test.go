package logging

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/testsupport"
)

// sink records what reaches it and how many writes it took. gate, when
// set, holds every write until it is closed.
type sink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	err    error
	gate   chan struct{}
}

func (s *sink) Write(p []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.buf.Write(p)
	return len(p), s.err
}

func (s *sink) snapshot() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String(), s.writes
}

func TestBufferedWriterBatchesLines(t *testing.T) {
	tests := []struct {
		name  string
		opts  BufferOptions
		lines int
	}{
		{"by interval", BufferOptions{FlushInterval: 30 * time.Millisecond}, 200},
		{"by size", BufferOptions{FlushInterval: time.Hour, FlushBytes: 1 << 10}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			w := NewBufferedWriter(s, tc.opts)
			defer w.Close()
			var want strings.Builder
			for i := range tc.lines {
				line := fmt.Sprintf("line %04d of the batch\n", i)
				want.WriteString(line)
				if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if tc.opts.FlushInterval == time.Hour {
				// Size alone must push out all but the last partial batch.
				testsupport.Eventually(t, "size-triggered flushes", func() bool { got, _ := s.snapshot(); return len(got) >= want.Len()-tc.opts.FlushBytes })
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			} else {
				testsupport.Eventually(t, "the interval flush", func() bool { got, _ := s.snapshot(); return len(got) == want.Len() })
			}
			got, writes := s.snapshot()
			if got != want.String() {
				t.Fatalf("the sink got %d bytes, want the %d written, in order", len(got), want.Len())
			}
			if writes > tc.lines/10 {
				t.Errorf("%d writes for %d lines: not batched", writes, tc.lines)
			}
		})
	}
}

// A logger from New flushes a buffering writer after a warning, not after
// an info line: the lines that explain a failure are out before the
// process can die of it.
func TestNewFlushesOnWarning(t *testing.T) {
	s := &sink{}
	w := NewBufferedWriter(s, BufferOptions{FlushInterval: time.Hour})
	defer w.Close()
	l := New(w, slog.LevelInfo).With("service", "test")
	l.Info("request", "path", "/x")
	time.Sleep(20 * time.Millisecond)
	if got, _ := s.snapshot(); got != "" {
		t.Fatalf("an info line was written at once: %s", got)
	}
	l.Error("request failed", "code", "x")
	got, _ := s.snapshot()
	if !strings.Contains(got, `"msg":"request"`) || !strings.Contains(got, `"msg":"request failed"`) {
		t.Fatalf("after an error both lines must be out: %q", got)
	}
	// The buffered path still redacts: it only changes when bytes move.
	l.Warn("m", "n", testPANs[0])
	if got, _ := s.snapshot(); strings.Contains(got, testPANs[0]) || !strings.Contains(got, PANReplacement) {
		t.Fatalf("card number through the buffered logger: %s", got)
	}
}

func TestBufferedWriterCloseFlushesAndRefuses(t *testing.T) {
	s := &sink{}
	w := NewBufferedWriter(s, BufferOptions{FlushInterval: time.Hour})
	_, _ = w.Write([]byte("last words\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.snapshot(); got != "last words\n" {
		t.Fatalf("Close did not flush: %q", got)
	}
	if _, err := w.Write([]byte("late\n")); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestBufferedWriterReportsSinkErrors(t *testing.T) {
	s := &sink{err: errors.New("disk on fire")}
	w := NewBufferedWriter(s, BufferOptions{FlushInterval: time.Hour})
	_, _ = w.Write([]byte("x\n"))
	if err := w.Flush(); err == nil || err.Error() != "disk on fire" {
		t.Fatalf("Flush = %v", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close hid the sink's error")
	}
}

// A sink slower than the lines makes writers wait at MaxBytes: nothing is
// dropped and memory stays bounded.
func TestBufferedWriterBackPressure(t *testing.T) {
	s := &sink{gate: make(chan struct{})}
	w := NewBufferedWriter(s, BufferOptions{FlushInterval: time.Millisecond, FlushBytes: 64, MaxBytes: 256})
	line := []byte(strings.Repeat("z", 63) + "\n")
	wrote := make(chan int)
	go func() {
		n := 0
		for range 40 {
			if _, err := w.Write(line); err != nil {
				break
			}
			n++
		}
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("%d lines (%d bytes) went into a buffer capped at 256 while the sink was stuck", n, n*len(line))
	case <-time.After(100 * time.Millisecond):
	}
	w.mu.Lock()
	held := len(w.buf)
	w.mu.Unlock()
	if held > 256 {
		t.Fatalf("%d bytes buffered, cap 256", held)
	}
	close(s.gate)
	if n := <-wrote; n != 40 {
		t.Fatalf("%d of 40 lines written", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.snapshot(); got != strings.Repeat(string(line), 40) {
		t.Fatalf("the sink got %d bytes, want %d", len(got), 40*len(line))
	}
}

// Lines from many goroutines arrive whole: each Write is one line, never
// interleaved with another.
func TestBufferedWriterConcurrentLinesStayWhole(t *testing.T) {
	s := &sink{}
	w := NewBufferedWriter(s, BufferOptions{FlushInterval: time.Millisecond, FlushBytes: 512})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				_, _ = fmt.Fprintf(w, "goroutine %d line %03d %s\n", g, i, strings.Repeat("-", i%40))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := s.snapshot()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines, want %d", len(lines), 8*500)
	}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l, "goroutine %d line %d", &g, &i); err != nil {
			t.Fatalf("torn line %q", l)
		}
		if want := fmt.Sprintf("goroutine %d line %03d %s", g, i, strings.Repeat("-", i%40)); l != want {
			t.Fatalf("line %q, want %q", l, want)
		}
	}
}
