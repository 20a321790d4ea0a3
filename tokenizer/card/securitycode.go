package card

import (
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"unsafe"
)

// securityCodeRedacted is how a SecurityCode prints: not even its length.
const securityCodeRedacted = "[REDACTED-CVV]"

// SecurityCode is a validated card security code (CVV2, CVC2, CID): 3 or 4
// ASCII digits. PCI DSS 3.3.1 forbids storing it after authorisation; keep
// it in memory only as long as SECURITY.md ("Security codes") allows, then
// Zero it.
//
// Like Number it is a handle whose copies share one buffer, and it redacts
// itself everywhere (as "[REDACTED-CVV]"); Reveal is the only way to the
// digits. The zero SecurityCode is empty: no code was given.
type SecurityCode struct {
	h unsafe.Pointer // a *cvc; see Number.h for why it is not typed
}

func (c SecurityCode) p() *cvc { return (*cvc)(c.h) }

type cvc struct {
	digits [4]byte
	n      uint8
}

// ParseSecurityCode validates s for a card of the given scheme: exactly 4
// ASCII digits for amex, 3 for the other known schemes, 3 or 4 for
// SchemeUnknown (see Scheme.SecurityCodeLength). Nothing is trimmed: spaces,
// separators and non-ASCII digits are invalid_security_code; "" is required.
// The error is a FieldError with Field "security_code" and never contains
// the input.
func ParseSecurityCode(s string, scheme Scheme) (SecurityCode, error) {
	return parseSecurityCode(s, scheme)
}

// ParseSecurityCodeBytes is ParseSecurityCode for a byte slice. b is not
// retained or modified; clear it afterwards.
func ParseSecurityCodeBytes(b []byte, scheme Scheme) (SecurityCode, error) {
	return parseSecurityCode(b, scheme)
}

func parseSecurityCode[T string | []byte](in T, scheme Scheme) (SecurityCode, error) {
	if len(in) == 0 {
		return SecurityCode{}, errSecurityCodeRequired
	}
	lo, hi := scheme.SecurityCodeLength()
	ok := len(in) >= lo && len(in) <= hi
	for i := 0; ok && i < len(in); i++ {
		ok = isDigit(in[i])
	}
	if !ok {
		switch {
		case lo != hi:
			return SecurityCode{}, errSecurityCode34
		case lo == 4:
			return SecurityCode{}, errSecurityCode4
		}
		return SecurityCode{}, errSecurityCode3
	}
	p := &cvc{n: uint8(len(in))}
	for i := 0; i < len(in); i++ {
		p.digits[i] = in[i]
	}
	return SecurityCode{unsafe.Pointer(p)}, nil
}

// Reveal returns the digits, or nil when empty. As with Number.Reveal the
// slice is the SecurityCode's own buffer: do not modify or keep it.
func (c SecurityCode) Reveal() []byte {
	if c.IsZero() {
		return nil
	}
	p := c.p()
	return p.digits[:p.n:p.n]
}

// Zero overwrites the digits and empties c and all its copies.
func (c SecurityCode) Zero() {
	if c.h == nil {
		return
	}
	p := c.p()
	clear(p.digits[:])
	p.n = 0
}

// IsZero reports whether c holds no code (never given, or zeroed).
func (c SecurityCode) IsZero() bool { return c.h == nil || c.p().n == 0 }

// Len is the number of digits (0 when empty).
func (c SecurityCode) Len() int {
	if c.h == nil {
		return 0
	}
	return int(c.p().n)
}

// String is "[REDACTED-CVV]", whatever c holds.
func (c SecurityCode) String() string { return securityCodeRedacted }

// GoString is String.
func (c SecurityCode) GoString() string { return securityCodeRedacted }

// Format writes String for every verb (%q quotes it).
func (c SecurityCode) Format(f fmt.State, verb rune) { formatRedacted(f, verb, securityCodeRedacted) }

// MarshalJSON writes String as a JSON string.
func (c SecurityCode) MarshalJSON() ([]byte, error) { return json.Marshal(securityCodeRedacted) }

// MarshalText writes String.
func (c SecurityCode) MarshalText() ([]byte, error) { return []byte(securityCodeRedacted), nil }

// LogValue makes log/slog log String.
func (c SecurityCode) LogValue() slog.Value { return slog.StringValue(securityCodeRedacted) }

var (
	_ fmt.Formatter          = SecurityCode{}
	_ fmt.GoStringer         = SecurityCode{}
	_ json.Marshaler         = SecurityCode{}
	_ encoding.TextMarshaler = SecurityCode{}
	_ slog.LogValuer         = SecurityCode{}
)
