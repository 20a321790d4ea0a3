package transactions

import (
	"context"
	"errors"
	"sync"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// giftCardPayments is a gift card connector as the card payment flow
// uses it: a redemption is the authorization of a sale (the transaction's
// intent is capture, so an approval is sale-succeeded), its refunds are
// the transaction's refunds, and its lookup settles what is in flight.
// A redemption has nothing left to capture nor to void: the state machine
// refuses both before any call, and the calls here are never made.
type giftCardPayments struct{ g connector.GiftCardConnector }

// errNoGiftCardStep is a capture or void of a redemption, which the state
// machine refuses before it would be sent.
var errNoGiftCardStep = errors.New("transactions: a gift card redemption has no capture nor void")

func (p giftCardPayments) Name() string { return p.g.Name() }

func (p giftCardPayments) Authorize(ctx context.Context, r connector.CardAuthorization) (coreapi.ConnectorResult, error) {
	return p.g.Redeem(ctx, connector.GiftCardRedemption{MerchantAccountID: r.MerchantAccountID, PaymentMethodID: r.PaymentMethodID,
		Reference: r.Reference, Amount: r.Amount, Currency: r.Currency, CartItems: r.CartItems, Config: r.Config})
}

func (p giftCardPayments) Capture(context.Context, connector.CardOperation) (coreapi.ConnectorResult, error) {
	return coreapi.ConnectorResult{}, errNoGiftCardStep
}

func (p giftCardPayments) Void(context.Context, connector.CardOperation) (coreapi.ConnectorResult, error) {
	return coreapi.ConnectorResult{}, errNoGiftCardStep
}

func (p giftCardPayments) Refund(ctx context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error) {
	return p.g.RefundRedemption(ctx, r)
}

func (p giftCardPayments) Lookup(ctx context.Context, r connector.CardLookup) (connector.CardState, error) {
	return p.g.LookupRedemption(ctx, r)
}

// connectorFor is the connector named name for payments of method: its
// gift card capability for a gift card, else its card capability.
func (s *Service) connectorFor(method, name string) (CardConnector, error) {
	if method == coreapi.MethodGiftCard {
		g, err := s.Connectors.GiftCards(name)
		if err != nil {
			return nil, err
		}
		return giftCardPayments{g}, nil
	}
	return s.Connectors.Cards(name)
}

// builtIn is the built-in sandbox connector for payments of method: s.Cards,
// or its gift card capability; nil when there is none.
func (s *Service) builtIn(method string) CardConnector {
	if method != coreapi.MethodGiftCard || s.Cards == nil {
		return s.Cards
	}
	if g, ok := s.Cards.(connector.GiftCardConnector); ok {
		return giftCardPayments{g}
	}
	return nil
}

// storedPaymentMethod is stored payment method id, nil when none is
// named or it cannot be read (create reads it again and says why).
func (s *Service) storedPaymentMethod(ctx context.Context, merchant string, id *string) *coreapi.PaymentMethod {
	if id == nil {
		return nil
	}
	pm, err := s.Store.PaymentMethod(ctx, merchant, *id)
	if err != nil {
		return nil
	}
	return pm
}

// Gift card balances are asked for each card at once, at most
// balanceConcurrency at a time, each within balanceTimeout: a list of
// gift cards waits for the slowest balance, never for all in a row.
const (
	balanceConcurrency = 8
	balanceTimeout     = 3 * time.Second
)

// Balance error codes (coreapi.GiftCardBalance.ErrorCode).
const (
	BalanceUnavailable = "balance_unavailable" // no gift card connector, or it did not answer
	BalanceTimeout     = "balance_timeout"     // it did not answer within balanceTimeout
)

// GiftCardBalances asks the connector of the merchant account's gift card
// payments (its default payment service for gift cards, else the built-in
// sandbox connector) for the balance of each of cards, in cards' order. A
// balance that cannot be had is nil with an error code: the processor's
// refusal (say invalid_pin), BalanceTimeout or BalanceUnavailable.
func (s *Service) GiftCardBalances(ctx context.Context, merchant string, cards []coreapi.PaymentMethod) []coreapi.GiftCardBalance {
	out := make([]coreapi.GiftCardBalance, len(cards))
	if len(cards) == 0 {
		return out
	}
	g, cfg, err := s.giftCardRoute(ctx, merchant)
	if err != nil {
		for i := range out {
			out[i].ErrorCode = BalanceUnavailable
		}
		return out
	}
	sem := make(chan struct{}, balanceConcurrency)
	var wg sync.WaitGroup
	for i := range cards {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cctx, cancel := context.WithTimeout(ctx, balanceTimeout)
			defer cancel()
			b, err := g.Balance(cctx, connector.GiftCardBalanceQuery{MerchantAccountID: merchant, PaymentMethodID: cards[i].ID, Config: cfg})
			var pe *connector.ProcessorError
			switch {
			case err == nil:
				out[i].Balance = &b
			case errors.As(err, &pe) && pe.Status < 500 && pe.Code != "":
				out[i].ErrorCode = pe.Code
			case cctx.Err() != nil && ctx.Err() == nil:
				out[i].ErrorCode = BalanceTimeout
			default:
				out[i].ErrorCode = BalanceUnavailable
			}
		}()
	}
	wg.Wait()
	return out
}

// giftCardRoute is the gift card connector and configuration balances are
// asked of, as a gift card payment that names no payment service would
// be routed.
func (s *Service) giftCardRoute(ctx context.Context, merchant string) (connector.GiftCardConnector, connector.Config, error) {
	ps, cfg, err := s.PaymentServices.ForPayment(ctx, merchant, nil, coreapi.MethodGiftCard)
	switch {
	case err != nil:
		return nil, cfg, err
	case ps != nil:
		g, err := s.Connectors.GiftCards(ps.Connector)
		return g, cfg, err
	}
	if g, ok := s.Cards.(connector.GiftCardConnector); ok {
		return g, connector.Config{}, nil
	}
	return nil, cfg, coreapi.ErrPaymentServiceUnavailable
}
