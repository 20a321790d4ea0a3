// Package logging builds the services' structured loggers and keeps card
// numbers and secrets out of them.
//
// A logger from New writes JSON lines, adds request_id from the context, and
// redacts as described at NewRedactingHandler. LogCatcher is the test-side
// counterpart: it collects log output and fails a test when a card number
// appears in it ("prove the negative").
package logging

import (
	"io"
	"log/slog"
)

// New returns the standard service logger: JSON lines on w at level and
// above, with request ids from the context and card numbers and secrets
// redacted. Use the *Context logging methods (InfoContext, ...) so the
// request id is found.
//
// When w buffers (a *BufferedWriter, or anything with a Flush method), the
// logger flushes it after every record at LevelWarn or above, so that what
// explains a failure is written before the process can die of it.
func New(w io.Writer, level slog.Level) *slog.Logger {
	json := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	h := NewContextHandler(NewRedactingHandler(json))
	if f, ok := w.(interface{ Flush() error }); ok {
		h = flushOnWarn{Handler: h, f: f}
	}
	return slog.New(newAccessHandler(h, w))
}
