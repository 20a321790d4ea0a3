package card

import (
	"errors"
	"time"
)

// CardInput is the card part of a create-payment-method request, as the
// HTTP layer decoded it. Number and SecurityCode are byte slices so the
// caller can clear them after Validate (which keeps no reference to them).
type CardInput struct {
	Number         []byte // required
	ExpirationDate string // required, "MM/YY"
	SecurityCode   []byte // optional: nil or empty means not given
}

// Card is a validated card. Its Number and SecurityCode redact themselves,
// so a Card can be printed, logged or marshalled without leaking them.
type Card struct {
	Number       Number
	Expiry       Expiry
	SecurityCode SecurityCode // IsZero when none was given
}

// Zero clears the number and the security code (and their copies).
func (c Card) Zero() {
	c.Number.Zero()
	c.SecurityCode.Zero()
}

// Validate checks every field of in and returns either the Card and no
// errors, or the zero Card and one FieldError per bad field, in the order
// number, expiration_date, security_code, so the API can report all of
// them at once. Nothing partly valid is returned: on failure whatever was
// parsed is zeroed.
//
// The security code is checked against the number's scheme when the number
// is valid, and against SchemeUnknown (3 or 4 digits) when it is not. now is
// the caller's clock; see ParseExpiry and Expiry.Expired.
func Validate(in CardInput, now time.Time) (Card, []FieldError) {
	var errs []FieldError
	add := func(err error) {
		var fe FieldError
		if errors.As(err, &fe) {
			errs = append(errs, fe)
		}
	}

	num, err := ParseNumberBytes(in.Number)
	add(err)
	exp, err := ParseExpiry(in.ExpirationDate, now)
	add(err)
	var code SecurityCode
	if len(in.SecurityCode) > 0 {
		code, err = ParseSecurityCodeBytes(in.SecurityCode, num.Scheme())
		add(err)
	}

	c := Card{Number: num, Expiry: exp, SecurityCode: code}
	if len(errs) > 0 {
		c.Zero()
		return Card{}, errs
	}
	return c, nil
}
