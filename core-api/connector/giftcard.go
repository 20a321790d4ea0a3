package connector

import (
	"context"

	coreapi "github.com/payorch/core-api"
)

// GiftCardRedemption asks a gift card connector to take an amount from a
// stored gift card, named by its vault-proxy token: the connector writes
// placeholders for the number and PIN that vault-proxy fills in.
type GiftCardRedemption struct {
	MerchantAccountID string
	PaymentMethodID   string // the vault-proxy token of the gift card
	// Reference is the idempotency reference (the transaction's id), as
	// CardAuthorization's.
	Reference string
	Amount    int64 // minor units
	Currency  string
	// CartItems are the transaction's (nil: none), as CardAuthorization's:
	// the request is a detokenized call, so they go inert.
	CartItems []coreapi.CartItem
	Config    Config // the payment service's configuration
}

// GiftCardBalanceQuery asks for a stored gift card's balance.
type GiftCardBalanceQuery struct {
	MerchantAccountID string
	PaymentMethodID   string
	Config            Config
}

// GiftCardConnector redeems gift cards. A redemption is a sale: approved,
// the amount is taken at once, so it has no capture nor void, only
// refunds. Every call but Balance is idempotent by its reference, and an
// unknown outcome is reported as CardConnector's (ErrOutcomeUnknown).
type GiftCardConnector interface {
	Connector
	// Redeem takes r.Amount from the card: OutcomeSucceeded, or
	// OutcomeDeclined with the processor's code (insufficient_balance,
	// invalid_pin).
	Redeem(ctx context.Context, r GiftCardRedemption) (coreapi.ConnectorResult, error)
	// RefundRedemption gives back r.Amount (0: all that is left) of
	// redemption r.AuthorizationID.
	RefundRedemption(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error)
	// LookupRedemption finds the redemption sent with r.Reference
	// (ErrNotFound when the processor never recorded one).
	LookupRedemption(ctx context.Context, r CardLookup) (CardState, error)
	// Balance is the card's balance now, in minor units; a refusal by the
	// processor (a wrong PIN) is a *ProcessorError with its code.
	Balance(ctx context.Context, r GiftCardBalanceQuery) (int64, error)
}

// GiftCards returns the named connector if it redeems gift cards.
func (r *Registry) GiftCards(name string) (GiftCardConnector, error) {
	c, ok := r.byName[name].(GiftCardConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
