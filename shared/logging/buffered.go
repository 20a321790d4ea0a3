package logging

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// BufferedWriter collects log lines in memory and writes them to its sink in
// batches: when FlushInterval has passed since the first waiting line, when
// FlushBytes are waiting, on Flush and on Close. The services write an
// access line per request; unbuffered, each is a write(2) to stderr on the
// request path (~3 us on our VMs, more than rendering the line). Batched,
// a line costs a copy.
//
// What it trades: a process killed without Close loses the lines of at
// most the last FlushInterval. Warnings and errors are not delayed: a
// logger from New flushes after every record at LevelWarn or above (see
// New), so the lines that explain a crash are out before it. The audit
// trail of card access does not go through logs (auditspool).
//
// A sink slower than the lines arrive makes Write wait once MaxBytes are
// buffered, instead of growing without bound or dropping lines.
type BufferedWriter struct {
	w    io.Writer
	opts BufferOptions

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a flush empties the buffer
	buf     []byte     // lines waiting
	spare   []byte     // the other buffer, swapped in while buf is written
	writing bool       // a flush is writing outside mu
	closed  bool
	err     error // the sink's last error, returned by Flush and Close

	wake chan struct{} // cap 1: buf reached FlushBytes, or a first line waits
	done chan struct{}
}

// BufferOptions tune a BufferedWriter; zero values take the defaults.
type BufferOptions struct {
	FlushInterval time.Duration // default 100 ms
	FlushBytes    int           // default 64 KiB
	MaxBytes      int           // default 4 MiB
}

// NewBufferedWriter starts a writer in front of w. Close it to flush and
// stop its goroutine.
func NewBufferedWriter(w io.Writer, opts BufferOptions) *BufferedWriter {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 100 * time.Millisecond
	}
	if opts.FlushBytes <= 0 {
		opts.FlushBytes = 64 << 10
	}
	if opts.MaxBytes < opts.FlushBytes {
		opts.MaxBytes = max(4<<20, opts.FlushBytes)
	}
	b := &BufferedWriter{w: w, opts: opts, wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.cond = sync.NewCond(&b.mu)
	go b.run()
	return b
}

// ErrWriterClosed is returned by Write after Close.
var ErrWriterClosed = errors.New("logging: buffered writer closed")

// Write buffers p. It returns an error only after Close; the sink's errors
// come back from Flush and Close.
func (b *BufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.buf)+len(p) > b.opts.MaxBytes && len(b.buf) > 0 && !b.closed {
		b.signal()
		b.cond.Wait()
	}
	if b.closed {
		b.mu.Unlock()
		return 0, ErrWriterClosed
	}
	first := len(b.buf) == 0
	b.buf = append(b.buf, p...)
	full := len(b.buf) >= b.opts.FlushBytes
	b.mu.Unlock()
	if first || full {
		b.signal()
	}
	return len(p), nil
}

func (b *BufferedWriter) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Flush writes everything buffered before the call and returns the sink's
// error, if any.
func (b *BufferedWriter) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.err
}

// flushLocked writes buf out with mu released during the write, so that
// other goroutines can keep adding lines; one flush writes at a time.
func (b *BufferedWriter) flushLocked() {
	for b.writing {
		b.cond.Wait()
	}
	if len(b.buf) == 0 {
		return
	}
	out := b.buf
	b.buf, b.spare = b.spare[:0], nil
	b.writing = true
	b.mu.Unlock()
	_, err := b.w.Write(out)
	b.mu.Lock()
	b.writing = false
	if err != nil {
		b.err = err
	}
	if cap(out) <= b.opts.MaxBytes { // keep it for the next swap, unless a burst made it huge
		b.spare = out[:0]
	}
	b.cond.Broadcast()
}

// run flushes FlushInterval after the first waiting line, or at once when
// FlushBytes wait, until Close.
func (b *BufferedWriter) run() {
	defer close(b.done)
	var timer *time.Timer
	var due <-chan time.Time // nil while no line waits for the interval
	for {
		fired := false
		select {
		case <-b.wake:
		case <-due:
			fired, due = true, nil
		}
		b.mu.Lock()
		if b.closed {
			b.flushLocked()
			b.mu.Unlock()
			return
		}
		if len(b.buf) >= b.opts.FlushBytes || (fired && len(b.buf) > 0) {
			b.flushLocked()
		}
		waiting := len(b.buf) > 0
		b.mu.Unlock()
		if waiting && due == nil {
			if timer == nil {
				timer = time.NewTimer(b.opts.FlushInterval)
			} else {
				timer.Reset(b.opts.FlushInterval)
			}
			due = timer.C
		}
	}
}

// Close flushes what is buffered, stops the writer and returns the sink's
// last error. Later Writes fail with ErrWriterClosed.
func (b *BufferedWriter) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.done
		return nil
	}
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
	b.signal()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// flushOnWarn makes a logger whose writer buffers flush it after each record
// at LevelWarn or above.
type flushOnWarn struct {
	slog.Handler
	f interface{ Flush() error }
}

func (h flushOnWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		_ = h.f.Flush()
	}
	return err
}

func (h flushOnWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushOnWarn{Handler: h.Handler.WithAttrs(attrs), f: h.f}
}

func (h flushOnWarn) WithGroup(name string) slog.Handler {
	return flushOnWarn{Handler: h.Handler.WithGroup(name), f: h.f}
}
