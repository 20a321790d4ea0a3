package vaulting

import (
	"errors"

	"github.com/payorch/tokenizer/card"
)

// CardFingerprint is the fingerprint of card number (12 to 19 digits,
// spaces or dashes between groups, a valid check digit) in the merchant
// account: the one the account's payment method of that card carries.
// It is how a sandbox 3-D Secure scenario's card_number condition reaches
// core-api, which then matches cards by fingerprint and never holds the
// number. number is not kept; the caller clears it. A number that is not
// valid is FieldErrors with field "number", never echoing it.
func (s *Service) CardFingerprint(merchantAccountID string, number []byte) (string, error) {
	n, err := card.ParseNumberBytes(number)
	if err != nil {
		var fe card.FieldError
		if errors.As(err, &fe) {
			return "", FieldErrors{fe}
		}
		return "", err
	}
	defer n.Zero()
	return s.fingerprint(merchantAccountID, n.Reveal()), nil
}
