package logging

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/requestid"
)

// AccessLine is the line every request writes when it ends.
type AccessLine struct {
	Time      time.Time
	RequestID string // omitted when empty
	Method    string
	Path      string // never the query or the body
	Status    int
	Duration  time.Duration
}

// AccessMessage is the access line's msg.
const AccessMessage = "request"

// Attrs are the line's attributes as the slog record carries them.
func (l AccessLine) Attrs() []slog.Attr {
	attrs := make([]slog.Attr, 0, 5)
	if l.RequestID != "" {
		attrs = append(attrs, slog.String(RequestIDKey, l.RequestID))
	}
	return append(attrs, slog.String("method", l.Method), slog.String("path", l.Path),
		slog.Int("status", l.Status), slog.Duration("duration", l.Duration))
}

// LogAccess logs l through h, a handler of a logger from New, as the
// record (l.Time, LevelInfo, AccessMessage, l.Attrs()) would be logged.
// Every request pays for this line, and slog's record, its JSON handler and
// the redactor's pass cost it ~1 us in a running service, so when there is
// nothing to redact or escape (writeAccess) the bytes are written directly.
// Anything else, and a handler not from New, goes through h, which
// redacts: the short path never has to decide what to redact.
//
// Method, Path and RequestID may point into a request's buffers: nothing
// of them is kept once LogAccess returns.
func LogAccess(ctx context.Context, h slog.Handler, l AccessLine) {
	if writeAccess(ctx, h, l) || !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// A handler may keep a record beyond this call: its strings are copies.
	l.RequestID, l.Method, l.Path = strings.Clone(l.RequestID), strings.Clone(l.Method), strings.Clone(l.Path)
	r := slog.NewRecord(l.Time, slog.LevelInfo, AccessMessage, 0)
	r.AddAttrs(l.Attrs()...)
	_ = h.Handle(ctx, r)
}

// writeAccess writes exactly the bytes h would write for l's record, and
// reports whether it did. It does so only when there is nothing to redact
// or escape: every string plain printable ASCII without a card number in
// it, every number too short to be one, every attribute h was given by
// With plain too, no group, and a writer that keeps concurrent lines whole.
func writeAccess(ctx context.Context, h slog.Handler, l AccessLine) bool {
	ah, ok := h.(*accessHandler)
	if !ok || ah.fast == nil {
		return false
	}
	if !ah.Enabled(ctx, slog.LevelInfo) {
		return true // nothing to write
	}
	ctxID := requestid.FromContext(ctx)
	if y := l.Time.Year(); y < 0 || y > 9999 ||
		!plain(l.RequestID) || !plain(l.Method) || !plain(l.Path) || !plain(ctxID) ||
		!tooShortForPAN(int64(l.Status)) || !tooShortForPAN(int64(l.Duration)) {
		return false
	}
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = l.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"`+AccessMessage+`"`...)
	b = append(b, ah.fast.attrs...)
	if l.RequestID != "" {
		b = appendPlain(b, RequestIDKey, l.RequestID)
	}
	b = appendPlain(b, "method", l.Method)
	b = appendPlain(b, "path", l.Path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.Status), 10)
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, int64(l.Duration), 10)
	if ctxID != "" { // as the context handler adds it
		b = appendPlain(b, RequestIDKey, ctxID)
	}
	b = append(b, "}\n"...)
	_, _ = ah.fast.w.Write(b)
	*bp = b
	linePool.Put(bp)
	return true
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// plain reports whether s goes into a JSON string unescaped (by slog's
// JSON handler, which leaves <, > and & as they are) and holds no card
// number.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return !panscan.Contains(s)
}

func appendPlain(b []byte, key, value string) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":"`...)
	b = append(b, value...)
	return append(b, '"')
}

// accessHandler is the outermost handler of a logger from New. It passes
// every record on to the chain and keeps what writeAccess needs to write
// an access line on its own: the writer, and the attributes added with
// With as the chain writes them.
type accessHandler struct {
	slog.Handler
	fast *accessFast // nil: writeAccess declines (a group, or an attribute it does not write)
}

type accessFast struct {
	w     io.Writer
	attrs []byte // `,"service":"vault-proxy",...`
}

// newAccessHandler wraps chain, which writes to w. The short path writes
// to w itself, outside the JSON handler's lock, so it is only taken for
// writers that are safe for concurrent writes of whole lines.
func newAccessHandler(chain slog.Handler, w io.Writer) slog.Handler {
	h := &accessHandler{Handler: chain}
	switch w.(type) {
	case *BufferedWriter, *LogCatcher, *os.File: // each Write whole, under its own lock
		h.fast = &accessFast{w: w}
	}
	if w == io.Discard {
		h.fast = &accessFast{w: w}
	}
	return h
}

func (h *accessHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &accessHandler{Handler: h.Handler.WithAttrs(attrs), fast: h.fast.with(attrs)}
}

func (h *accessHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &accessHandler{Handler: h.Handler.WithGroup(name)}
}

// with returns f with attrs appended, or nil unless every one is a string
// the chain would write unchanged under a key it would write unchanged.
func (f *accessFast) with(attrs []slog.Attr) *accessFast {
	if f == nil || len(attrs) == 0 {
		return f
	}
	out := &accessFast{w: f.w, attrs: append([]byte(nil), f.attrs...)}
	for _, a := range attrs {
		if a.Value.Kind() != slog.KindString || !plainKey(a.Key) || !plain(a.Value.String()) {
			return nil
		}
		out.attrs = appendPlain(out.attrs, a.Key, a.Value.String())
	}
	return out
}

// plainKey: lower-case letters, digits and underscores, not secret-looking.
func plainKey(k string) bool {
	if k == "" || IsSensitiveKey(k) {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return !panscan.Contains(k)
}
