package card

import (
	"encoding"
	"errors"
	"strconv"
	"time"
)

// Expiry is a card's expiry month. Year has four digits (2000-2099, since
// the wire form has two). It is not secret: PCI DSS allows it beside a
// token, and the payment method shows it as `expiration_date`.
type Expiry struct {
	Month int // 1-12
	Year  int // 2000-2099
}

// ParseExpiry parses an expiry date as the API sends it and rejects expired
// cards. It accepts exactly "MM/YY": two ASCII digits, a slash, two ASCII
// digits, nothing around them. "1/25", "12/2", "12/2025", "12-25" and
// " 12/25" are invalid_format (the API takes MM/YY only:
// docs/api-conventions.md, "Payment methods"; one form leaves nothing to guess about YY versus YYYY); "00/25" and "13/25"
// are invalid_month; a card past its month (see Expired) is expired; "" is
// required. YY is a year in 2000-2099.
//
// now is the caller's clock (time.Now in production, a fixed time in tests).
// The error is a FieldError with Field "expiration_date".
func ParseExpiry(s string, now time.Time) (Expiry, error) {
	e, err := parseExpiry(s)
	if err != nil {
		return Expiry{}, err
	}
	if e.Expired(now) {
		return Expiry{}, errExpired
	}
	return e, nil
}

// parseExpiry checks the form and the month only, not the date.
func parseExpiry(s string) (Expiry, error) {
	if s == "" {
		return Expiry{}, errExpiryRequired
	}
	if len(s) != 5 || s[2] != '/' || !isDigit(s[0]) || !isDigit(s[1]) || !isDigit(s[3]) || !isDigit(s[4]) {
		return Expiry{}, errExpiryFormat
	}
	m := int(s[0]-'0')*10 + int(s[1]-'0')
	if m < 1 || m > 12 {
		return Expiry{}, errExpiryMonth
	}
	return Expiry{Month: m, Year: 2000 + int(s[3]-'0')*10 + int(s[4]-'0')}, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lastTimeZone is the offset of the last place on Earth where a day ends
// (UTC-12, "anywhere on Earth").
const lastTimeZone = -12 * time.Hour

// Expired reports whether now is after the card's last valid day. A card is
// valid through the last day of its expiry month, and this package takes
// that day to end when it ends everywhere on Earth (UTC-12): a 01/26 card is
// valid until 2026-02-01 12:00 UTC and expired from then on. A card that
// the issuer still honours somewhere is never refused here; the issuer's
// authorisation is the final word anyway. The zone of now does not matter.
func (e Expiry) Expired(now time.Time) bool {
	y, m, _ := now.UTC().Add(lastTimeZone).Date()
	return y > e.Year || (y == e.Year && int(m) > e.Month)
}

// firstTimeZone is the offset of the first place on Earth where a day
// begins (UTC+14).
const firstTimeZone = 14 * time.Hour

// ExpiredSomewhere reports whether the expiry month has ended anywhere on
// Earth (from UTC+14): the strict reading, for a credential the vault
// itself replaces (a network token), which should not be sent once any
// issuer or network may hold it expired. Expired stays the lenient one, for
// refusing a card.
func (e Expiry) ExpiredSomewhere(now time.Time) bool {
	y, m, _ := now.UTC().Add(firstTimeZone).Date()
	return y > e.Year || (y == e.Year && int(m) > e.Month)
}

// IsValid reports whether Month is 1-12 and Year 2000-2099, the values
// ParseExpiry can produce.
func (e Expiry) IsValid() bool {
	return e.Month >= 1 && e.Month <= 12 && e.Year >= 2000 && e.Year <= 2099
}

// ExpiryFormat names a way to write an Expiry: the variants of the
// CARD_EXPIRATION_DATE placeholders (docs/vault-forward.md).
type ExpiryFormat string

// Formats for Expiry.FormatAs. The zero ExpiryFormat ("") is ExpiryMMYY.
const (
	ExpiryMMYY ExpiryFormat = "MM/YY" // 01/26, the default
	ExpiryM    ExpiryFormat = "M"     // 1: month without leading zero
	ExpiryMM   ExpiryFormat = "MM"    // 01
	ExpiryYY   ExpiryFormat = "YY"    // 26
	ExpiryYYYY ExpiryFormat = "YYYY"  // 2026
)

// ErrExpiryFormat is returned by FormatAs for an unknown ExpiryFormat.
var ErrExpiryFormat = errors.New("card: unknown expiry format")

// ErrInvalidExpiry is returned by FormatAs and MarshalText when the Expiry
// is not IsValid (a zero Expiry, say), so "00/00" is never sent anywhere.
var ErrInvalidExpiry = errors.New("card: invalid expiry")

// ParseExpiryFormat maps a placeholder's variant word ("", "M", "MM", "YY",
// "YYYY") to its ExpiryFormat. It reports false for anything else.
func ParseExpiryFormat(variant string) (ExpiryFormat, bool) {
	switch f := ExpiryFormat(variant); f {
	case "":
		return ExpiryMMYY, true
	case ExpiryMMYY, ExpiryM, ExpiryMM, ExpiryYY, ExpiryYYYY:
		return f, true
	}
	return "", false
}

// FormatAs writes e in format f. It fails for an unknown f
// (ErrExpiryFormat) and for an Expiry that is not IsValid (ErrInvalidExpiry).
// (It is not called Format because fmt reserves that name for Formatter.)
func (e Expiry) FormatAs(f ExpiryFormat) (string, error) {
	var buf [8]byte
	b, err := e.AppendFormat(buf[:0], f)
	return string(b), err
}

// AppendFormat is FormatAs appending to b: a caller that copies the value
// on (a placeholder being substituted) needs no string of it.
func (e Expiry) AppendFormat(b []byte, f ExpiryFormat) ([]byte, error) {
	if !e.IsValid() {
		return b, ErrInvalidExpiry
	}
	switch f {
	case "", ExpiryMMYY:
		return appendTwoDigits(append(appendTwoDigits(b, e.Month), '/'), e.Year%100), nil
	case ExpiryM:
		return strconv.AppendInt(b, int64(e.Month), 10), nil
	case ExpiryMM:
		return appendTwoDigits(b, e.Month), nil
	case ExpiryYY:
		return appendTwoDigits(b, e.Year%100), nil
	case ExpiryYYYY:
		return strconv.AppendInt(b, int64(e.Year), 10), nil
	}
	return b, ErrExpiryFormat
}

func appendTwoDigits(b []byte, v int) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

// String is "MM/YY". For an Expiry that is not IsValid the digits are
// whatever the fields hold modulo 100; use FormatAs to be told.
func (e Expiry) String() string {
	var buf [5]byte
	return string(appendTwoDigits(append(appendTwoDigits(buf[:0], mod100(e.Month)), '/'), mod100(e.Year)))
}

func mod100(v int) int {
	v %= 100
	if v < 0 {
		v += 100
	}
	return v
}

// MarshalText writes "MM/YY"; it fails with ErrInvalidExpiry when e is not
// IsValid. JSON uses it, so an Expiry is the string "01/26" there.
func (e Expiry) MarshalText() ([]byte, error) {
	if !e.IsValid() {
		return nil, ErrInvalidExpiry
	}
	return []byte(e.String()), nil
}

// UnmarshalText reads "MM/YY" with ParseExpiry's rules for the form and the
// month, but does not reject past dates: it is for reading back a stored
// card, whose expiry may have passed since. Input from a client goes through
// ParseExpiry (or Validate) with a clock.
func (e *Expiry) UnmarshalText(b []byte) error {
	v, err := parseExpiry(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

var (
	_ encoding.TextMarshaler   = Expiry{}
	_ encoding.TextUnmarshaler = (*Expiry)(nil)
)
