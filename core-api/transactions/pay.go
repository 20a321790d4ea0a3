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
// *coreapi.PaymentServiceError, and nothing is stored. A stored bank
// account is debited instead (payByBank, bank.go).
func (s *Service) PayByCard(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	// The stored payment method is read once, here: its kind picks the
	// flow, and create and the recurring reference take it as read.
	pm := s.storedPaymentMethod(ctx, merchant, n.PaymentMethodID)
	if pm != nil && pm.Method == coreapi.MethodBank && (n.Method == nil || *n.Method == coreapi.MethodBank) {
		return s.payByBank(ctx, merchant, n, pm)
	}
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
	if err := s.checkThreeDS(n); err != nil {
		return nil, err
	}
	if err := checkAntiFraud(n); err != nil {
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
	// Anti-fraud screening (antifraud.go), then 3-D Secure when asked
	// for (threeds.go): a rejection, a challenge, a decline or a failure
	// ends the request here.
	stop := false
	if t, stop, err = s.screen(ctx, merchant, t, n, pm); stop || err != nil {
		return t, err
	}
	var tds *connector.ThreeDSecureData
	if n.ThreeDSecure != nil {
		if tds, t, stop, err = s.authenticate(ctx, merchant, t, n, pm, options); stop || err != nil {
			return t, err
		}
	}
	res, err := cards.Authorize(ctx, connector.CardAuthorization{
		MerchantAccountID: merchant, PaymentMethodID: *t.PaymentMethod.ID, Reference: t.ID,
		Amount: t.Amount, Currency: t.Currency, Intent: t.Intent,
		MerchantInitiated: t.MerchantInitiated, PaymentSource: t.PaymentSource,
		PreviousSchemeTransactionID: previousSchemeTransactionID(n, t, pm),
		CartItems:                   t.CartItems,
		BillingPostalCode:           s.billingPostalCode(ctx, merchant, t),
		SecurityCodeHeld:            s.securityCodeHeld(ctx, merchant, n),
		ThreeDSecure:                tds,
		NotificationURL:             s.notificationURL(cards.Name(), merchant),
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
		&coreapi.ConnectorError{Failed: "the connector could not send the request; it is recorded as failed", Err: err}
}

// operations are a payment's captures, voids and refunds at its
// connector, each sent with its reservation's reference (package
// comment): what the two-phase steps of CaptureCard, VoidCard and
// RefundCard call between reserve and settle.
type operations interface {
	capture(ctx context.Context, t *coreapi.Transaction, amount int64, ref string) (coreapi.ConnectorResult, error)
	void(ctx context.Context, t *coreapi.Transaction, ref string) (coreapi.ConnectorResult, error)
	refund(ctx context.Context, t *coreapi.Transaction, amount int64, ref string) (coreapi.ConnectorResult, error)
}

// operationsOf finds the connector and configuration of the payment
// service that authorized transaction id, by its payment method: a stored
// card's (cardsOf), a direct integration's (directOf) or a redirect
// payment's (redirectOf). A refusal comes before anything is reserved; a
// transaction paid otherwise is coreapi.ErrNotACardPayment.
func (s *Service) operationsOf(ctx context.Context, merchant, id string) (operations, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	switch {
	case cardPayment(t):
		c, cfg, err := s.cardsOf(ctx, t)
		return cardOperations{c, cfg}, err
	case directPayment(t):
		d, cfg, err := s.directOf(ctx, t)
		return heldOperations{d, cfg}, err
	case redirectPayment(t):
		rc, cfg, err := s.redirectOf(ctx, t)
		return heldOperations{rc, cfg}, err
	}
	return nil, coreapi.ErrNotACardPayment
}

// cardPayment reports whether t is paid with a stored card or gift card,
// whose operations go to a card connector.
func cardPayment(t *coreapi.Transaction) bool {
	m := t.PaymentMethod.Method
	return t.PaymentMethod.ID != nil && (m == coreapi.MethodCard || m == coreapi.MethodGiftCard)
}

// cardOperations sends a card payment's operations to its card
// connector, about the authorization the connector named.
type cardOperations struct {
	c   CardConnector
	cfg connector.Config
}

func (o cardOperations) op(t *coreapi.Transaction, amount int64, ref string) connector.CardOperation {
	op := connector.CardOperation{MerchantAccountID: t.MerchantAccountID, PaymentMethodID: *t.PaymentMethod.ID, Amount: amount, Reference: ref, Config: o.cfg}
	if t.PaymentServiceTransactionID != nil {
		op.AuthorizationID = *t.PaymentServiceTransactionID
	}
	return op
}

func (o cardOperations) capture(ctx context.Context, t *coreapi.Transaction, amount int64, ref string) (coreapi.ConnectorResult, error) {
	return o.c.Capture(ctx, o.op(t, amount, ref))
}

func (o cardOperations) void(ctx context.Context, t *coreapi.Transaction, ref string) (coreapi.ConnectorResult, error) {
	return o.c.Void(ctx, o.op(t, 0, ref))
}

func (o cardOperations) refund(ctx context.Context, t *coreapi.Transaction, amount int64, ref string) (coreapi.ConnectorResult, error) {
	return o.c.Refund(ctx, o.op(t, amount, ref))
}

// heldOperations sends the operations of a payment its processor holds
// under its own id (the transaction's connector reference): a direct
// integration's order, a redirect payment.
type heldOperations struct {
	ops connector.Operations
	cfg connector.Config
}

func (o heldOperations) op(t *coreapi.Transaction, amount int64, ref string) connector.DirectOperation {
	return connector.DirectOperation{MerchantAccountID: t.MerchantAccountID, OrderID: deref(t.PaymentServiceTransactionID),
		Amount: amount, Currency: t.Currency, Reference: ref, Config: o.cfg}
}

func (o heldOperations) capture(ctx context.Context, t *coreapi.Transaction, amount int64, ref string) (coreapi.ConnectorResult, error) {
	return o.ops.Capture(ctx, o.op(t, amount, ref))
}

func (o heldOperations) void(ctx context.Context, t *coreapi.Transaction, ref string) (coreapi.ConnectorResult, error) {
	return o.ops.Void(ctx, o.op(t, 0, ref))
}

func (o heldOperations) refund(ctx context.Context, t *coreapi.Transaction, amount int64, ref string) (coreapi.ConnectorResult, error) {
	return o.ops.Refund(ctx, o.op(t, amount, ref))
}

// CaptureCard captures amount (nil: all that is left) of card, direct or
// redirect payment id (operationsOf): ReserveCapture, the connector's Capture with the capture's id as
// the reference, SettleCapture (package comment). The transaction is
// returned as the answer left it (the capture still reserved when the
// outcome is unknown). Refusals are *coreapi.TransitionError; a call the
// connector could not send is a *coreapi.ConnectorError, the capture
// recorded as failed. A transaction paid otherwise than by a stored card,
// a direct integration or a redirect is coreapi.ErrNotACardPayment.
func (s *Service) CaptureCard(ctx context.Context, merchant, id string, amount *int64) (*coreapi.Transaction, error) {
	ops, err := s.operationsOf(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	t, c, err := s.ReserveCapture(ctx, merchant, id, amount)
	if err != nil {
		return nil, err
	}
	res, sendErr := sent(ops.capture(ctx, t, c.Amount, c.ID))
	if t, _, err = s.SettleCapture(ctx, merchant, id, c.ID, res); err != nil {
		return nil, err
	}
	return t, sendErr
}

// VoidCard voids card, direct or redirect payment id: RequestVoid, the connector's Void with
// the void's reference, SettleVoid; as CaptureCard.
func (s *Service) VoidCard(ctx context.Context, merchant, id string) (*coreapi.Transaction, error) {
	ops, err := s.operationsOf(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	t, ref, err := s.RequestVoid(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	res, sendErr := sent(ops.void(ctx, t, ref))
	if t, err = s.SettleVoid(ctx, merchant, id, ref, res); err != nil {
		return nil, err
	}
	return t, sendErr
}

// RefundCard refunds card, direct or redirect payment id: ReserveRefund, the connector's
// Refund with the refund's id as the reference, SettleRefund; as
// CaptureCard. It returns the refund as the answer left it.
func (s *Service) RefundCard(ctx context.Context, merchant, id string, n coreapi.NewRefund) (*coreapi.Refund, error) {
	ops, err := s.operationsOf(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	t, r, err := s.ReserveRefund(ctx, merchant, id, n)
	if err != nil {
		return nil, err
	}
	res, sendErr := sent(ops.refund(ctx, t, r.Amount, r.ID))
	if _, r, err = s.SettleRefund(ctx, merchant, id, r.ID, res); err != nil {
		return nil, err
	}
	return r, sendErr
}
