package bank

import (
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

// Number is a validated, normalized sensitive bank number: an ACH or Bacs
// account number (digits) or an IBAN (upper case, no spaces). It is a
// handle: copies share one buffer and Zero on any copy clears them all. It
// redacts itself in every printed or serialised form ("bank(****3000)");
// Reveal is the only way to the value.
type Number struct {
	b *[]byte // a pointer, so fmt prints an address for a nested Number, never the bytes
}

func newNumber(b []byte) Number { c := append([]byte(nil), b...); return Number{&c} }

// Reveal returns the Number's own buffer (not a copy): do not modify or
// keep it. nil when empty or zeroed.
func (n Number) Reveal() []byte {
	if n.IsZero() {
		return nil
	}
	return (*n.b)[:len(*n.b):len(*n.b)]
}

// Zero overwrites the value and empties the Number and all its copies.
func (n Number) Zero() {
	if n.b == nil {
		return
	}
	clear(*n.b)
	*n.b = (*n.b)[:0]
}

// IsZero reports whether n holds nothing.
func (n Number) IsZero() bool { return n.b == nil || len(*n.b) == 0 }

// Last4 is the last four characters (the payment method's label); "" when
// empty.
func (n Number) Last4() string {
	d := n.Reveal()
	if len(d) < 4 {
		return ""
	}
	return string(d[len(d)-4:])
}

// String is the redacted form, "bank(****3000)" or "bank(empty)".
func (n Number) String() string {
	if n.IsZero() {
		return "bank(empty)"
	}
	return "bank(****" + n.Last4() + ")"
}

// GoString is String, so %#v redacts too.
func (n Number) GoString() string { return n.String() }

// Format writes String for every verb.
func (n Number) Format(f fmt.State, verb rune) {
	s := n.String()
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(f, s)
}

// MarshalJSON writes String as a JSON string.
func (n Number) MarshalJSON() ([]byte, error) { return json.Marshal(n.String()) }

// MarshalText writes String.
func (n Number) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// LogValue makes log/slog log String.
func (n Number) LogValue() slog.Value { return slog.StringValue(n.String()) }

var (
	_ fmt.Stringer           = Number{}
	_ fmt.GoStringer         = Number{}
	_ fmt.Formatter          = Number{}
	_ json.Marshaler         = Number{}
	_ encoding.TextMarshaler = Number{}
	_ slog.LogValuer         = Number{}
)
