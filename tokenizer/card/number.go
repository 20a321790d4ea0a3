package card

import (
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"unsafe"
)

// PAN lengths accepted by ParseNumber, for every scheme alike (the shortest
// cards in circulation, some Maestro, have 12 digits; ISO/IEC 7812 caps a
// PAN at 19).
const (
	MinNumberLen = 12
	MaxNumberLen = 19
)

// Number is a validated card number (PAN): 12-19 ASCII digits that pass the
// Luhn check. The zero Number is empty (IsZero).
//
// It is a handle: copies share one buffer, so Zero on any copy clears them
// all. It redacts itself in every printed or serialised form; Reveal is the
// only way to the digits. See the package documentation for why it is a
// []byte and what zeroing can and cannot do.
type Number struct {
	// h is a *pan. It is typed unsafe.Pointer only so that package fmt
	// never follows it: fmt cannot call Format through an unexported
	// field (say, a Number inside a caller's struct with an unexported
	// field), and for a *pan it would then print the digits as byte
	// values with %s, %q or %d. An unsafe.Pointer it prints as an address
	// whatever the verb. No pointer arithmetic is done on it.
	h unsafe.Pointer
}

func (n Number) p() *pan { return (*pan)(n.h) }

// pan is the one buffer this package copies a card number into. A fixed
// array (not a slice) keeps the digits and their count in one allocation
// that holds no pointers, so parsing allocates once, the collector never
// scans it, and no grown slice leaves an old copy behind.
type pan struct {
	digits [MaxNumberLen]byte
	n      uint8
}

// ParseNumber validates s and returns it as a Number.
//
// Accepted: ASCII digits, with digit groups separated by a single space or a
// single dash ("4111 1111 1111 1111", "4111-1111-1111-1111"); spaces before
// and after are trimmed. After the separators are removed there must be
// 12-19 digits that pass the Luhn check. Rejected, with the FieldError code
// in brackets:
//
//   - empty, or only spaces [required]
//   - anything else: letters, tabs, non-breaking spaces, non-ASCII digits
//     such as "٤" or "４" [invalid_characters]
//   - two separators in a row ("4111--1111", "4111 -1111"), a leading or
//     trailing dash, only separators [invalid_format]
//   - fewer than 12 or more than 19 digits [invalid_length]
//   - a wrong check digit [luhn_check_failed]
//
// The error is a FieldError with Field "number" and never contains the
// input. Prefer ParseNumberBytes when the input is in a buffer you can clear:
// this function cannot clear s (see the package documentation).
func ParseNumber(s string) (Number, error) { return parseNumber(s) }

// ParseNumberBytes is ParseNumber for a byte slice. The Number holds its own
// copy; b is not retained or modified, so the caller may (and should) clear
// it afterwards.
func ParseNumberBytes(b []byte) (Number, error) { return parseNumber(b) }

func parseNumber[T string | []byte](in T) (Number, error) {
	start, end := 0, len(in)
	for start < end && in[start] == ' ' {
		start++
	}
	for end > start && in[end-1] == ' ' {
		end--
	}
	if start == end {
		return Number{}, errNumberRequired
	}
	digits := 0
	afterSep := true // a separator at the start is misplaced
	misplaced := false
	for i := start; i < end; i++ {
		switch c := in[i]; {
		case c >= '0' && c <= '9':
			digits++
			afterSep = false
		case c == ' ' || c == '-':
			misplaced = misplaced || afterSep
			afterSep = true
		default:
			return Number{}, errNumberCharacters
		}
	}
	if misplaced || afterSep {
		return Number{}, errNumberFormat
	}
	if digits < MinNumberLen || digits > MaxNumberLen {
		return Number{}, errNumberLength
	}
	p := &pan{n: uint8(digits)}
	j := 0
	for i := start; i < end; i++ {
		if c := in[i]; c >= '0' && c <= '9' {
			p.digits[j] = c
			j++
		}
	}
	if !Luhn(p.digits[:j]) {
		clear(p.digits[:])
		return Number{}, errNumberLuhn
	}
	return Number{unsafe.Pointer(p)}, nil
}

// Luhn reports whether digits passes the Luhn (mod 10) check. It is false
// for an empty slice and for any byte that is not an ASCII digit. It does
// not allocate.
func Luhn(digits []byte) bool {
	if len(digits) == 0 {
		return false
	}
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := digits[i] - '0'
		if d > 9 {
			return false
		}
		if double {
			d = luhnDoubled[d]
		}
		sum += int(d)
		double = !double
	}
	return sum%10 == 0
}

// luhnDoubled[d] is the digit sum of 2*d.
var luhnDoubled = [10]uint8{0, 2, 4, 6, 8, 1, 3, 5, 7, 9}

// Reveal returns the digits, or nil when n is empty. The slice is the
// Number's own buffer, not a copy (so that substituting a PAN into a request
// needs no scratch copy): do not modify or keep it; it reads as zeros after
// Zero. Its capacity is its length, so appending to it copies.
func (n Number) Reveal() []byte {
	if n.IsZero() {
		return nil
	}
	p := n.p()
	return p.digits[:p.n:p.n]
}

// Zero overwrites the digits and empties the Number and all its copies.
// Safe on an empty Number. See the package documentation for its limits.
func (n Number) Zero() {
	if n.h == nil {
		return
	}
	p := n.p()
	clear(p.digits[:])
	p.n = 0
}

// IsZero reports whether n holds no digits: the zero Number, or one that
// has been zeroed.
func (n Number) IsZero() bool { return n.h == nil || n.p().n == 0 }

// Len is the number of digits (0 when empty).
func (n Number) Len() int {
	if n.h == nil {
		return 0
	}
	return int(n.p().n)
}

// Scheme is DetectScheme of the digits; SchemeUnknown when empty.
func (n Number) Scheme() Scheme {
	if n.IsZero() {
		return SchemeUnknown
	}
	return DetectScheme(n.Reveal())
}

// Last4 is the last four digits, the payment method's `label`; "" when
// empty.
func (n Number) Last4() string {
	d := n.Reveal()
	if len(d) < 4 {
		return ""
	}
	return string(d[len(d)-4:])
}

// BIN is the part of the PAN that may be shown beside the last four: the
// first 8 digits when the PAN has 16 or more, else the first 6 (PCI DSS
// rules for displaying BINs); "" when empty.
func (n Number) BIN() string {
	d := n.Reveal()
	switch {
	case len(d) >= 16:
		return string(d[:8])
	case len(d) >= 6:
		return string(d[:6])
	}
	return ""
}

// String is the redacted form, "card(visa ****1111)", or "card(empty)".
func (n Number) String() string {
	if n.IsZero() {
		return "card(empty)"
	}
	return "card(" + string(n.Scheme()) + " ****" + n.Last4() + ")"
}

// GoString is String, so %#v redacts too.
func (n Number) GoString() string { return n.String() }

// Format writes String for every verb (%q quotes it), so no fmt verb, flag
// or width reaches the digits.
func (n Number) Format(f fmt.State, verb rune) { formatRedacted(f, verb, n.String()) }

// MarshalJSON writes String as a JSON string. To put a PAN into JSON, write
// Reveal explicitly.
func (n Number) MarshalJSON() ([]byte, error) { return json.Marshal(n.String()) }

// MarshalText writes String.
func (n Number) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// LogValue makes log/slog log String.
func (n Number) LogValue() slog.Value { return slog.StringValue(n.String()) }

func formatRedacted(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(f, s)
}

var (
	_ fmt.Stringer           = Number{}
	_ fmt.GoStringer         = Number{}
	_ fmt.Formatter          = Number{}
	_ json.Marshaler         = Number{}
	_ encoding.TextMarshaler = Number{}
	_ slog.LogValuer         = Number{}
)
