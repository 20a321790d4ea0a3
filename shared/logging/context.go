package logging

import (
	"context"
	"log/slog"

	"github.com/payorch/shared/requestid"
)

// RequestIDKey is the attribute key under which log lines carry the request
// id, matching the request_id field of error bodies.
const RequestIDKey = "request_id"

// contextHandler adds the request id found in the context to every record.
//
// The id must be a top-level attribute even when the logger has opened
// groups (log searches look for request_id, not db.request_id). slog has no
// way to add a top-level attribute below an open group, so the handler keeps
// the inner handler as it was before the first WithGroup (base) and the
// operations applied since (ops), and replays them behind the id when a
// grouped logger logs with an id. Loggers without groups, the common case,
// just append the attribute.
type contextHandler struct {
	cur  slog.Handler // base with ops applied, used when there is no id
	base slog.Handler
	ops  []handlerOp
}

type handlerOp struct {
	group string      // WithGroup(group) when attrs is nil
	attrs []slog.Attr // WithAttrs(attrs) otherwise
}

// NewContextHandler wraps inner so that each record logged with a context
// carrying a request id (see requestid.WithID) gets a request_id attribute.
// Wrap it around the redacting handler, not inside it, so the id is scanned
// like everything else.
func NewContextHandler(inner slog.Handler) slog.Handler {
	return &contextHandler{cur: inner, base: inner}
}

func (h *contextHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.cur.Enabled(ctx, level)
}

func (h *contextHandler) Handle(ctx context.Context, r slog.Record) error {
	id := requestid.FromContext(ctx)
	if id == "" {
		return h.cur.Handle(ctx, r)
	}
	idAttr := slog.String(RequestIDKey, id)
	if len(h.ops) == 0 {
		r = r.Clone()
		r.AddAttrs(idAttr)
		return h.cur.Handle(ctx, r)
	}
	inner := h.base.WithAttrs([]slog.Attr{idAttr})
	for _, op := range h.ops {
		if op.attrs != nil {
			inner = inner.WithAttrs(op.attrs)
		} else {
			inner = inner.WithGroup(op.group)
		}
	}
	return inner.Handle(ctx, r)
}

func (h *contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	if len(h.ops) == 0 {
		// Before any group, attributes can be folded into the base.
		next := h.cur.WithAttrs(attrs)
		return &contextHandler{cur: next, base: next}
	}
	return h.with(handlerOp{attrs: attrs}, h.cur.WithAttrs(attrs))
}

func (h *contextHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name}, h.cur.WithGroup(name))
}

func (h *contextHandler) with(op handlerOp, cur slog.Handler) *contextHandler {
	ops := make([]handlerOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &contextHandler{cur: cur, base: h.base, ops: append(ops, op)}
}
