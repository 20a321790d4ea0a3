package logging

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/payorch/shared/logging/panscan"
)

// SecretReplacement is the value logged in place of an attribute whose key
// looks like a secret (see IsSensitiveKey).
const SecretReplacement = "[REDACTED]"

// PANReplacement is what replaces a card number inside a logged string.
const PANReplacement = panscan.Replacement

// maxDepth bounds recursion through nested groups, so that a LogValuer that
// returns a group containing itself cannot exhaust the stack.
const maxDepth = 32

// redactingHandler masks card numbers and secret-named attributes before
// records reach the inner handler. It is immutable: With* return copies.
type redactingHandler struct {
	inner slog.Handler
	// all is set once a group with a sensitive name has been opened: every
	// attribute added inside it is a secret too.
	all  bool
	keys *keyMemo // shared by every handler derived from this one
}

// NewRedactingHandler wraps inner so that no card number (see ContainsPAN)
// and no value of a secret-named attribute (see IsSensitiveKey) reaches it:
//
//   - the message and every string value are scanned, including values
//     inside groups, WithAttrs attributes and what a slog.LogValuer returns;
//   - error values are logged as their Error() text, []byte as text, and
//     fmt.Stringer and any other value as their %+v formatting, each
//     scanned; the inner handler receives the scanned string, so what was
//     checked is exactly what is written;
//   - integers and floats whose decimal form is a card number are replaced;
//   - attributes with a secret-looking key are kept with the value
//     SecretReplacement, so a reader can see the field was present.
//
// Structure inside arbitrary values (a struct field named Password) is not
// understood: give such types a LogValue method or use package secret.
func NewRedactingHandler(inner slog.Handler) slog.Handler {
	if h, ok := inner.(*redactingHandler); ok {
		return h
	}
	return &redactingHandler{inner: inner, keys: &keyMemo{}}
}

func (h *redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.clean(r) {
		return h.inner.Handle(ctx, r) // nothing to change: no copy of the record
	}
	out := slog.NewRecord(r.Time, r.Level, panscan.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.keys.redactAttr(a, h.all, 0))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// clean reports whether r would pass redaction unchanged: every key
// judged harmless and every value a kind whose check is cheap and found
// nothing. Anything else (groups, LogValuers, arbitrary values, large
// numbers) takes the full path. Most lines, the access line of every
// request among them, are clean, and passing them on as they are saves
// rebuilding the record.
func (h *redactingHandler) clean(r slog.Record) bool {
	if h.all || panscan.Contains(r.Message) {
		return false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if v := h.keys.judge(a.Key); v.secret || v.key != a.Key {
			ok = false
			return false
		}
		switch a.Value.Kind() {
		case slog.KindString:
			ok = !panscan.Contains(a.Value.String())
		case slog.KindInt64:
			ok = tooShortForPAN(a.Value.Int64())
		case slog.KindDuration:
			ok = tooShortForPAN(int64(a.Value.Duration()))
		case slog.KindBool:
		default:
			ok = false
		}
		return ok
	})
	return ok
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = h.keys.redactAttr(a, h.all, 0)
	}
	return &redactingHandler{inner: h.inner.WithAttrs(out), all: h.all, keys: h.keys}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &redactingHandler{
		inner: h.inner.WithGroup(panscan.Redact(name)),
		all:   h.all || IsSensitiveKey(name),
		keys:  h.keys,
	}
}

func (km *keyMemo) redactAttr(a slog.Attr, all bool, depth int) slog.Attr {
	v := km.judge(a.Key)
	key := v.key
	if all || v.secret {
		// An inline group (empty key) has no name to judge; its members are
		// judged by their own keys, or are all secret inside a secret group.
		if a.Key == "" && a.Value.Kind() == slog.KindGroup {
			return slog.Attr{Key: key, Value: km.redactGroup(a.Value, all, depth)}
		}
		// The value is not even resolved: a LogValue of a secret has
		// nothing to show and might have side effects.
		return slog.String(key, SecretReplacement)
	}
	return slog.Attr{Key: key, Value: km.redactValue(a.Value.Resolve(), all, depth)}
}

func (km *keyMemo) redactGroup(v slog.Value, all bool, depth int) slog.Value {
	if depth >= maxDepth {
		return slog.StringValue("[TOO DEEP]")
	}
	members := v.Group()
	out := make([]slog.Attr, len(members))
	for i, m := range members {
		out[i] = km.redactAttr(m, all, depth+1)
	}
	return slog.GroupValue(out...)
}

func (km *keyMemo) redactValue(v slog.Value, all bool, depth int) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(panscan.Redact(v.String()))
	case slog.KindGroup:
		return km.redactGroup(v, all, depth)
	case slog.KindInt64:
		return intValue(v, v.Int64())
	case slog.KindDuration:
		// JSON handlers write a duration as its integer nanoseconds.
		return intValue(v, int64(v.Duration()))
	case slog.KindUint64:
		if v.Uint64() < minPANValue {
			return v
		}
		return numberValue(v, strconv.FormatUint(v.Uint64(), 10))
	case slog.KindFloat64:
		// A fraction or a mantissa can spell a card number as well as an
		// integer part can ("0.<16 digits>"), so the float is judged
		// by the digits a JSON or text handler would write.
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return v
		}
		if panscan.Contains(strconv.FormatFloat(f, jsonFloatFormat(f), -1, 64)) || panscan.Contains(strconv.FormatFloat(f, 'g', -1, 64)) {
			return slog.StringValue(PANReplacement)
		}
		return v
	case slog.KindAny:
		return slog.StringValue(panscan.Redact(formatAny(v.Any())))
	default: // bool, time
		return v
	}
}

// minPANValue is the smallest number with a card number's 12 digits
// (panscan's shortest); smaller ones (statuses, sizes, most durations) need
// no formatting to be cleared.
const minPANValue = 100_000_000_000

// jsonFloatFormat is the format encoding/json (and so slog's JSON handler)
// writes f in.
func jsonFloatFormat(f float64) byte {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return 'e'
	}
	return 'f'
}

func tooShortForPAN(n int64) bool { return n > -minPANValue && n < minPANValue }

func intValue(v slog.Value, n int64) slog.Value {
	if tooShortForPAN(n) {
		return v
	}
	return numberValue(v, strconv.FormatInt(n, 10))
}

// numberValue replaces a number whose decimal digits form a card number.
// Only large numbers pay for the formatting the caller did; the check is
// cheap next to the JSON encoding that follows.
func numberValue(v slog.Value, decimal string) slog.Value {
	if panscan.Contains(decimal) {
		return slog.StringValue(PANReplacement)
	}
	return v
}

// formatAny renders a value once, the way the caller would read it. fmt
// recovers from panics in Error and String methods, which calling them
// directly would not.
func formatAny(x any) string {
	switch t := x.(type) {
	case nil:
		return "<nil>"
	case error, fmt.Stringer:
		return fmt.Sprintf("%v", t)
	case []byte:
		return string(t)
	case json.RawMessage:
		return string(t)
	}
	// Any other byte or rune slice or array would print as decimal values
	// ("[52 49 49 ...]"), which hides digits from the scanner without hiding
	// them from a reader: it is written as the text it holds.
	rv := reflect.ValueOf(x)
	if isByteSequence(rv) {
		return sequenceText(rv)
	}
	// Nested deeper (a struct's Body, a map's values, a slice of them), the
	// sequence cannot be written as text in fmt's layout: the value is not
	// written at all.
	budget := maxScanValues
	if holdsByteSequence(rv, 0, &budget) {
		return fmt.Sprintf("[%T holding bytes, not logged]", x)
	}
	return fmt.Sprintf("%+v", x)
}

func isByteSequence(rv reflect.Value) bool {
	k := rv.Kind()
	if k != reflect.Slice && k != reflect.Array {
		return false
	}
	e := rv.Type().Elem().Kind()
	return e == reflect.Uint8 || e == reflect.Int32
}

func sequenceText(rv reflect.Value) string {
	if rv.Type().Elem().Kind() == reflect.Int32 {
		r := make([]rune, rv.Len())
		reflect.Copy(reflect.ValueOf(r), rv)
		return string(r)
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return string(b)
}

// maxScanValues bounds holdsByteSequence's walk; a value too large to walk
// is not written.
const maxScanValues = 10_000

// holdsByteSequence reports whether fmt's %+v of rv would write a non-empty
// byte or rune sequence as numbers. It walks as fmt prints: an error or a
// Stringer below the top is written by its method, and a pointer below the
// top as an address.
func holdsByteSequence(rv reflect.Value, depth int, budget *int) bool {
	if *budget--; *budget < 0 || depth > maxDepth {
		return true
	}
	if !rv.IsValid() {
		return false
	}
	if depth > 0 && rv.CanInterface() {
		switch rv.Interface().(type) {
		case error, fmt.Stringer:
			return false
		}
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if isByteSequence(rv) {
			return rv.Len() > 0
		}
		for i := 0; i < rv.Len(); i++ {
			if holdsByteSequence(rv.Index(i), depth+1, budget) {
				return true
			}
		}
	case reflect.Pointer:
		return depth == 0 && !rv.IsNil() && holdsByteSequence(rv.Elem(), depth+1, budget)
	case reflect.Interface:
		return !rv.IsNil() && holdsByteSequence(rv.Elem(), depth+1, budget)
	case reflect.Struct:
		for i := 0; i < rv.NumField(); i++ {
			if holdsByteSequence(rv.Field(i), depth+1, budget) {
				return true
			}
		}
	case reflect.Map:
		for it := rv.MapRange(); it.Next(); {
			if holdsByteSequence(it.Key(), depth+1, budget) || holdsByteSequence(it.Value(), depth+1, budget) {
				return true
			}
		}
	}
	return false
}

// keyMemo remembers the verdict on attribute keys. A service logs with a
// few dozen constant keys, and judging one (IsSensitiveKey, then a card
// number scan of the key itself) costs more than writing its value; every
// request's access line would pay for it five times. The table is
// replaced, never changed, so reads take no lock; it stops growing at
// maxMemoKeys, past which keys built at run time are judged every time.
type keyMemo struct {
	mu    sync.Mutex // serialises writers
	table atomic.Pointer[map[string]keyVerdict]
}

type keyVerdict struct {
	key    string // the key as written: card numbers in it replaced
	secret bool   // IsSensitiveKey
}

const maxMemoKeys = 256

func (km *keyMemo) judge(key string) keyVerdict {
	if km == nil {
		return keyVerdict{key: panscan.Redact(key), secret: IsSensitiveKey(key)}
	}
	if t := km.table.Load(); t != nil {
		if v, ok := (*t)[key]; ok {
			return v
		}
	}
	v := keyVerdict{key: panscan.Redact(key), secret: IsSensitiveKey(key)}
	if v.key != key {
		return v // a key holding a card number is not kept, even in memory
	}
	km.mu.Lock()
	defer km.mu.Unlock()
	old := km.table.Load()
	if old != nil && len(*old) >= maxMemoKeys {
		return v
	}
	next := make(map[string]keyVerdict, 1+lenOf(old))
	if old != nil {
		maps.Copy(next, *old)
	}
	next[strings.Clone(key)] = v
	km.table.Store(&next)
	return v
}

func lenOf(m *map[string]keyVerdict) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
