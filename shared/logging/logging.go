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
func New(w io.Writer, level slog.Level) *slog.Logger {
	json := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(NewContextHandler(NewRedactingHandler(json)))
}
