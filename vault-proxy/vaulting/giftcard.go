package vaulting

import (
	"errors"
	"time"

	"github.com/payorch/tokenizer/card"
)

type giftCard struct {
	bin, last4, expiry string
}

// parseGiftCard checks a gift card. Gift card numbers are issuer-specific
// (often without a Luhn digit), so the rules are: 12-19 ASCII digits, a PIN
// of 4-12 digits, an optional MM/YY expiry in the future.
func parseGiftCard(number, pin []byte, expiry string, now time.Time) (giftCard, []card.FieldError) {
	var errs []card.FieldError
	if len(number) < 12 || len(number) > 19 || !digits(number) {
		errs = append(errs, card.FieldError{Field: card.FieldNumber, Code: card.CodeInvalidLength, Message: "number must be 12 to 19 digits"})
	}
	if len(pin) < 4 || len(pin) > 12 || !digits(pin) {
		errs = append(errs, card.FieldError{Field: "pin", Code: card.CodeInvalidFormat, Message: "pin must be 4 to 12 digits"})
	}
	g := giftCard{}
	if expiry != "" {
		e, err := card.ParseExpiry(expiry, now)
		var fe card.FieldError
		switch {
		case errors.As(err, &fe):
			errs = append(errs, fe) // expired, bad month, ...: its own code
		case err != nil:
			errs = append(errs, card.FieldError{Field: card.FieldExpirationDate, Code: card.CodeInvalidFormat, Message: "expiration_date must be a future MM/YY"})
		default:
			g.expiry = e.String()
		}
	}
	if len(errs) > 0 {
		return giftCard{}, errs
	}
	g.bin, g.last4 = string(number[:6]), string(number[len(number)-4:])
	return g, nil
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
