package vaulting

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/card"
	vaultproxy "github.com/payorch/vault-proxy"
)

// VaultCardCondition vaults the card number (12 to 19 digits, spaces or
// dashes between groups, a valid check digit) of a sandbox 3-D Secure
// scenario's card_number condition: sealed like every vaulted card, as a
// record that no payment method holds, with no expiry (which tells it
// from a payment method's card), no fingerprint, and the first 6 digits
// and last 4 as its display data. core-api keeps the record's token as
// the scenario's reference and has it shredded with the scenario; the
// mock-3ds connector has the number substituted for a placeholder of it.
// number is cleared before this returns. A number that is not valid is
// FieldErrors with field "number", never echoing it.
func (s *Service) VaultCardCondition(ctx context.Context, c Caller, number []byte) (*vaultproxy.VaultedCard, error) {
	defer clear(number)
	n, err := card.ParseNumberBytes(number)
	if err != nil {
		var fe card.FieldError
		if errors.As(err, &fe) {
			return nil, FieldErrors{fe}
		}
		return nil, err
	}
	defer n.Zero()
	d := n.Display()
	rec := &vaultproxy.VaultedCard{Token: uuid.New(), MerchantAccountID: c.MerchantAccountID, Kind: vaultproxy.KindCard,
		Scheme: string(d.Scheme), CardType: string(d.CardType), BIN: string(n.Reveal()[:6]), Last4: d.Label}
	if err := s.seal(ctx, c, rec, encodePayload(n.Reveal(), nil)); err != nil {
		return nil, err
	}
	return rec, nil
}
