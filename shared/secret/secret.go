// Package secret holds values that must never be printed: API keys,
// passwords, signing secrets, and (as Bytes) card data in the PCI zone.
//
// Every way Go has of turning a value into text (fmt verbs, encoding/json,
// encoding text, log/slog) yields Redacted. The only way to the value is an
// explicit Reveal, which makes each use visible in review and in grep.
//
// The value sits behind a pointer, so that even reflection-based printing of
// a struct whose secret field is unexported (fmt cannot call methods on
// those) shows an address, not the secret.
package secret

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
)

// Redacted is what a secret looks like in any output.
const Redacted = "[REDACTED]"

// String is a secret string. The zero value is the empty secret. Copies
// share the value.
type String struct {
	p *string
}

// New returns s as a secret.
func New(s string) String { return String{p: &s} }

// Reveal returns the secret value.
func (s String) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports whether the secret is empty, so configuration can check
// presence without revealing.
func (s String) IsZero() bool { return s.p == nil || *s.p == "" }

// Equal compares two secrets in constant time (for equal lengths), for
// checking a presented token or webhook secret.
func (s String) Equal(other String) bool {
	return subtle.ConstantTimeCompare([]byte(s.Reveal()), []byte(other.Reveal())) == 1
}

// String implements fmt.Stringer.
func (String) String() string { return Redacted }

// GoString implements fmt.GoStringer (%#v).
func (String) GoString() string { return Redacted }

// Format implements fmt.Formatter, so every verb and flag (%x, %q, %+v, ...)
// prints Redacted rather than a hex or quoted form of the value.
func (String) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON implements json.Marshaler.
func (String) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (String) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// UnmarshalText implements encoding.TextUnmarshaler, so a secret can be read
// from JSON or text configuration. Writing it back out gives Redacted: the
// round trip is deliberately lossy.
func (s *String) UnmarshalText(b []byte) error {
	*s = New(string(b))
	return nil
}

// LogValue implements slog.LogValuer.
func (String) LogValue() slog.Value { return slog.StringValue(Redacted) }
