package secret

import (
	"fmt"
	"log/slog"
)

// Bytes is a secret byte slice, for values that should be wiped after use
// (a PAN between decryption and substitution, an unwrapped data key).
// Copies of a Bytes share the buffer, so Zero on any copy wipes it for all.
//
// Limits of Zero, honestly: it clears this buffer only. Copies made before
// (a string conversion, an append that reallocated, a fasthttp body buffer
// returned to its pool, the registers and stack of functions that handled
// the bytes) are out of its reach. Keeping memory out of core files is the
// process's part (vault-proxy/nodump) and out of swap the host's
// (deploy/production). Zero narrows the window; it does not close it. Keep
// the number of copies small and Zero as soon as the value is used.
type Bytes struct {
	p *[]byte
}

// NewBytes returns b as a secret. It takes ownership of b: the caller must
// not use b afterwards, and Zero clears b's backing array. It does not copy,
// because a copy would be one more place the secret lives.
func NewBytes(b []byte) Bytes { return Bytes{p: &b} }

// Reveal returns the secret bytes themselves, not a copy: a copy would
// outlive Zero. Do not keep the result beyond the use at hand.
func (b Bytes) Reveal() []byte {
	if b.p == nil {
		return nil
	}
	return *b.p
}

// Len returns the length of the secret.
func (b Bytes) Len() int { return len(b.Reveal()) }

// Zero overwrites the buffer with zeros and empties the secret. It is safe
// to call more than once and on the zero value.
func (b Bytes) Zero() {
	if b.p == nil {
		return
	}
	clear(*b.p)
	*b.p = nil
}

// String implements fmt.Stringer.
func (Bytes) String() string { return Redacted }

// GoString implements fmt.GoStringer (%#v).
func (Bytes) GoString() string { return Redacted }

// Format implements fmt.Formatter, so every verb prints Redacted.
func (Bytes) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// MarshalJSON implements json.Marshaler.
func (Bytes) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (Bytes) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue implements slog.LogValuer.
func (Bytes) LogValue() slog.Value { return slog.StringValue(Redacted) }
