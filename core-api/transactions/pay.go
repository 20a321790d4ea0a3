package transactions

import (
	"context"
	"errors"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// CardConnector is what the service asks of a card processor's
// connector (connector.CardConnector implements it).
type CardConnector interface {
	Name() string // its key in a transaction's connection_options
	Authorize(ctx context.Context, r connector.CardAuthorization) (coreapi.ConnectorResult, error)
	Capture(ctx context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error)
	Void(ctx context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error)
	Refund(ctx context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error)
	Lookup(ctx context.Context, r connector.CardLookup) (connector.CardState, error)
}

// ErrorCodeConnector is the error_code of an authorization the connector
// could not send (vault-proxy refused the call, the processor refused the
// request as malformed): nothing reached the processor.
const ErrorCodeConnector = "connector_error"

// PayByCard creates a transaction paid by a stored card and authorizes it
// through the card connector its payment service names (route): Create
// (the reservation, in processing), Authorize with the transaction's id
// as the reference, and ApplyAuthorization of the answer (package
// comment). The transaction returned is as the answer left it: authorized
// or captured, declined (with the processor's code), or still processing
// when the outcome is unknown (a lost answer; the same reference sent
// again or a lookup settles it). A call the connector could not send at
// all leaves the transaction authorization_failed and is a
// *coreapi.ConnectorError. A payment service the payment cannot use is a
// *coreapi.PaymentServiceError, and nothing is stored.
func (s *Service) PayByCard(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	// The stored payment method is read once, here: its kind picks the
	// flow, and create and the recurring reference take it as read.
	pm := s.storedPaymentMethod(ctx, merchant, n.PaymentMethodID)
	if n.Method == nil {
		// A card or a gift card; a stored payment method of another kind
		// is refused (create).
		m := coreapi.MethodCard
		if pm != nil && pm.Method == coreapi.MethodGiftCard {
			m = coreapi.MethodGiftCard
		}
		n.Method = &m
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if *n.Method == coreapi.MethodGiftCard {
		// A redemption takes the amount at once: a sale, whatever the
		// request's intent (docs/transactions.md, "Gift cards").
		n.Intent = coreapi.IntentCapture
	}
	cards, cfg, options, err := s.route(ctx, merchant, &n)
	if err != nil {
		return nil, err
	}
	t, err := s.create(ctx, merchant, n, pm)
	if err != nil {
		return nil, err
	}
	res, err := cards.Authorize(ctx, connector.CardAuthorization{
		MerchantAccountID: merchant, PaymentMethodID: *t.PaymentMethod.ID, Reference: t.ID,
		Amount: t.Amount, Currency: t.Currency, Intent: t.Intent,
		MerchantInitiated: t.MerchantInitiated, PaymentSource: t.PaymentSource,
		PreviousSchemeTransactionID: previousSchemeTransactionID(n, t, pm),
		SecurityCodeHeld:            s.securityCodeHeld(ctx, merchant, n),
		Options:                     options, Config: cfg,
	})
	res, sendErr := sent(res, err)
	t, _, err = s.ApplyAuthorization(ctx, merchant, t.ID, res)
	if err != nil {
		return nil, err
	}
	return t, sendErr
}

// sent is the answer to settle a connector's call with, and the error to
// give the caller: the connector's answer, also when the outcome is
// unknown (pending: the reservation stays); for a call that could not be
// sent at all, a failure with ErrorCodeConnector and a
// *coreapi.ConnectorError.
func sent(res coreapi.ConnectorResult, err error) (coreapi.ConnectorResult, error) {
	if err == nil || errors.Is(err, connector.ErrOutcomeUnknown) {
		return res, nil
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeConnector},
		&coreapi.ConnectorError{Failed: "the card connector could not send the request; it is recorded as failed", Err: err}
}

// card checks that transaction id is a card payment and finds the
// connector and configuration of the payment service that authorized it
// (cardsOf): a refusal before anything is reserved.
func (s *Service) card(ctx context.Context, merchant, id string) (CardConnector, connector.Config, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, connector.Config{}, err
	}
	if !cardPayment(t) {
		return nil, connector.Config{}, coreapi.ErrNotACardPayment
	}
	return s.cardsOf(ctx, t)
}

// cardPayment reports whether t is paid with a stored card or gift card,
// whose operations go to a card connector.
func cardPayment(t *coreapi.Transaction) bool {
	m := t.PaymentMethod.Method
	return t.PaymentMethod.ID != nil && (m == coreapi.MethodCard || m == coreapi.MethodGiftCard)
}

// operation is the connector's request about reservation ref of t.
func operation(t *coreapi.Transaction, amount int64, ref string, cfg connector.Config) connector.CardOperation {
	op := connector.CardOperation{MerchantAccountID: t.MerchantAccountID, PaymentMethodID: *t.PaymentMethod.ID, Amount: amount, Reference: ref, Config: cfg}
	if t.PaymentServiceTransactionID != nil {
		op.AuthorizationID = *t.PaymentServiceTransactionID
	}
	return op
}

// CaptureCard captures amount (nil: all that is left) of card payment
// id: ReserveCapture, the connector's Capture with the capture's id as
// the reference, SettleCapture (package comment). The transaction is
// returned as the answer left it (the capture still reserved when the
// outcome is unknown). Refusals are *coreapi.TransitionError; a call the
// connector could not send is a *coreapi.ConnectorError, the capture
// recorded as failed. A transaction paid otherwise than by a stored card
// is coreapi.ErrNotACardPayment.
func (s *Service) CaptureCard(ctx context.Context, merchant, id string, amount *int64) (*coreapi.Transaction, error) {
	cards, cfg, err := s.card(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	t, c, err := s.ReserveCapture(ctx, merchant, id, amount)
	if err != nil {
		return nil, err
	}
	res, sendErr := sent(cards.Capture(ctx, operation(t, c.Amount, c.ID, cfg)))
	if t, _, err = s.SettleCapture(ctx, merchant, id, c.ID, res); err != nil {
		return nil, err
	}
	return t, sendErr
}

// VoidCard voids card payment id: RequestVoid, the connector's Void with
// the void's reference, SettleVoid; as CaptureCard.
func (s *Service) VoidCard(ctx context.Context, merchant, id string) (*coreapi.Transaction, error) {
	cards, cfg, err := s.card(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	t, ref, err := s.RequestVoid(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	res, sendErr := sent(cards.Void(ctx, operation(t, 0, ref, cfg)))
	if t, err = s.SettleVoid(ctx, merchant, id, ref, res); err != nil {
		return nil, err
	}
	return t, sendErr
}

// RefundCard refunds card payment id: ReserveRefund, the connector's
// Refund with the refund's id as the reference, SettleRefund; as
// CaptureCard. It returns the refund as the answer left it.
func (s *Service) RefundCard(ctx context.Context, merchant, id string, n coreapi.NewRefund) (*coreapi.Refund, error) {
	cards, cfg, err := s.card(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	t, r, err := s.ReserveRefund(ctx, merchant, id, n)
	if err != nil {
		return nil, err
	}
	res, sendErr := sent(cards.Refund(ctx, operation(t, r.Amount, r.ID, cfg)))
	if _, r, err = s.SettleRefund(ctx, merchant, id, r.ID, res); err != nil {
		return nil, err
	}
	return r, sendErr
}
