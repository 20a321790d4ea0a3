// Package transactions is the service of transactions: payments created
// in processing and moved by the state machine (coreapi's
// transitions.go) through their authorization, captures, void and
// refunds, each step recorded as an event.
//
// # Calls to a connector
//
// A step that calls a connector is two database transactions, with the
// call between them and no row lock held across it:
//
//  1. Reserve (ReserveCapture, RequestVoid, ReserveRefund; Create for the
//     authorization): under the transaction's row lock, the state machine
//     checks the request against the amounts, and the request is recorded
//     (a capture or refund processing, its amount added to the pending
//     amount; a void as authorization_void_pending; an authorization as
//     processing) with its event, and committed.
//  2. Call the connector with the reservation's id as the idempotency
//     reference (the capture's or refund's id, the void's reference, the
//     transaction's id).
//  3. Settle (SettleCapture, SettleVoid, SettleRefund, ApplyAuthorization):
//     under the lock again, the answer moves the reserved amount into the
//     settled one, or frees it, with its event.
//
// Concurrent requests on one transaction are ordered by the row lock in
// step 1, and each sees the reservations of those before it: reserved
// and settled amounts together never exceed the limits, however many
// calls are in flight. A crash, a lost answer or a failed settlement
// leaves the reservation in place, processing, which is the record that
// the outcome is unknown: sending the same request again with the same
// reference, or asking the connector about it, and settling it with that
// answer finishes it. A settlement given twice (the connector's reply and
// its notification) changes nothing the second time.
package transactions

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// Store is the core database as this service uses it. Every call is scoped
// to a merchant account; another account's record is coreapi.ErrNotFound.
type Store interface {
	// InTx runs fn in one database transaction: committed when fn returns
	// nil, rolled back otherwise.
	InTx(ctx context.Context, fn func(tx Tx) error) error

	// CreateTransaction stores t in processing with its creation event;
	// it sets t's id and times.
	CreateTransaction(ctx context.Context, t *coreapi.Transaction) error
	Transaction(ctx context.Context, merchant, id string) (*coreapi.Transaction, error)
	// ListTransactions returns up to page.FetchLimit() transactions
	// matching f in the page's query order.
	ListTransactions(ctx context.Context, merchant string, f coreapi.TransactionFilter, page pagination.Page) ([]coreapi.Transaction, error)
	// ListTransactionEvents and ListRefunds return up to
	// page.FetchLimit() of a transaction's events or refunds in the
	// page's query order.
	ListTransactionEvents(ctx context.Context, merchant, transactionID string, page pagination.Page) ([]coreapi.TransactionEvent, error)
	ListRefunds(ctx context.Context, merchant, transactionID string, page pagination.Page) ([]coreapi.Refund, error)
	Refund(ctx context.Context, merchant, id string) (*coreapi.Refund, error)

	// What a transaction is created with.
	PaymentMethod(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error)
	FindBuyer(ctx context.Context, merchant, id string) (*coreapi.Buyer, error)
}

// Tx is the core database within one transaction.
type Tx interface {
	// LockTransaction reads a transaction and holds its row's lock until
	// the transaction ends; now is the database's clock once it is held.
	LockTransaction(ctx context.Context, merchant, id string) (t *coreapi.Transaction, now time.Time, err error)
	// Capture and Refund read one of a transaction's captures or refunds,
	// which change only under the transaction's lock.
	Capture(ctx context.Context, merchant, transactionID, id string) (*coreapi.Capture, error)
	Refund(ctx context.Context, merchant, transactionID, id string) (*coreapi.Refund, error)
	// RecordTransition writes a step: the transaction, its event, and the
	// capture or refund it made or settled.
	RecordTransition(ctx context.Context, tr coreapi.Transition) error
}

// Service manages transactions.
type Service struct {
	Store Store
}

// settleTimeout bounds the recording of a connector's answer. It ignores
// the request's deadline and its client: an answer received must be
// recorded whether or not anyone still waits for it.
const settleTimeout = 10 * time.Second

// Create validates n and stores a transaction in processing, with its
// creation event: the reservation of its authorization, whose answer
// ApplyAuthorization records. A stored payment method (n.PaymentMethodID)
// gives its display data and, without n.BuyerID, its buyer.
func (s *Service) Create(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	t := &coreapi.Transaction{
		MerchantAccountID: merchant, TransactionState: coreapi.TransactionState{Amount: n.Amount},
		Intent: n.Intent, Currency: n.Currency, Country: n.Country,
		PaymentServiceID: n.PaymentServiceID, PaymentSource: n.PaymentSource,
		MerchantInitiated: n.MerchantInitiated, IsSubsequentPayment: n.IsSubsequentPayment,
		InstallmentCount: n.InstallmentCount, CartItems: n.CartItems, ExternalIdentifier: n.ExternalIdentifier, Metadata: n.Metadata,
	}
	if t.Intent == "" {
		t.Intent = coreapi.IntentAuthorize
	}
	if t.PaymentSource == "" {
		t.PaymentSource = coreapi.PaymentSourceECommerce
	}
	if err := s.paymentMethod(ctx, merchant, n, t); err != nil {
		return nil, err
	}
	if err := s.buyer(ctx, merchant, n.BuyerID, t); err != nil {
		return nil, err
	}
	if err := s.Store.CreateTransaction(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// paymentMethod sets t's payment method summary: the stored one's display
// data, or the method named.
func (s *Service) paymentMethod(ctx context.Context, merchant string, n coreapi.NewTransaction, t *coreapi.Transaction) error {
	if n.PaymentMethodID == nil {
		t.PaymentMethod.Method = *n.Method
		return nil
	}
	pm, err := s.Store.PaymentMethod(ctx, merchant, *n.PaymentMethodID)
	if errors.Is(err, coreapi.ErrNotFound) {
		return invalid("/payment_method/id", "no stored payment method with this id in this merchant account", "value_error.payment_method.not_found")
	}
	if err != nil {
		return err
	}
	if n.Method != nil && *n.Method != pm.Method {
		return invalid("/payment_method/method", "the stored payment method is a "+pm.Method, "value_error.payment_method.method")
	}
	t.PaymentMethod = coreapi.TransactionPaymentMethod{ID: &pm.ID, Method: pm.Method, Scheme: &pm.Scheme, Label: &pm.Label}
	if pm.BuyerID != "" {
		t.BuyerID, t.BuyerExternalIdentifier = &pm.BuyerID, nonEmpty(pm.BuyerExternalIdentifier)
	}
	return nil
}

// buyer sets t's buyer when one is named: it must be the merchant
// account's.
func (s *Service) buyer(ctx context.Context, merchant string, id *string, t *coreapi.Transaction) error {
	if id == nil {
		return nil
	}
	b, err := s.Store.FindBuyer(ctx, merchant, *id)
	if errors.Is(err, coreapi.ErrNotFound) {
		return coreapi.ErrBuyerNotFound
	}
	if err != nil {
		return err
	}
	t.BuyerID, t.BuyerExternalIdentifier = &b.ID, b.ExternalIdentifier
	return nil
}

// Get returns transaction id of the merchant account.
func (s *Service) Get(ctx context.Context, merchant, id string) (*coreapi.Transaction, error) {
	return s.Store.Transaction(ctx, merchant, id)
}

// List returns a page of the merchant account's transactions matching f.
func (s *Service) List(ctx context.Context, merchant string, f coreapi.TransactionFilter, page pagination.Page) ([]coreapi.Transaction, error) {
	return s.Store.ListTransactions(ctx, merchant, f, page)
}

// Events returns a page of transaction id's events; a transaction the
// merchant account does not have is coreapi.ErrNotFound.
func (s *Service) Events(ctx context.Context, merchant, id string, page pagination.Page) ([]coreapi.TransactionEvent, error) {
	if _, err := s.Store.Transaction(ctx, merchant, id); err != nil {
		return nil, err
	}
	return s.Store.ListTransactionEvents(ctx, merchant, id, page)
}

// Refunds returns a page of transaction id's refunds, as Events.
func (s *Service) Refunds(ctx context.Context, merchant, id string, page pagination.Page) ([]coreapi.Refund, error) {
	if _, err := s.Store.Transaction(ctx, merchant, id); err != nil {
		return nil, err
	}
	return s.Store.ListRefunds(ctx, merchant, id, page)
}

// GetRefund returns refund id of the merchant account.
func (s *Service) GetRefund(ctx context.Context, merchant, id string) (*coreapi.Refund, error) {
	return s.Store.Refund(ctx, merchant, id)
}

// ApplyAuthorization records the connector's answer to transaction id's
// authorization (or to a status query about it): the operation it is, by
// the transaction's intent. A sale (intent capture, authorized and
// captured at once, or its capture pending) records its capture too,
// which it returns; a pending one is settled by SettleCapture. An answer
// for a transaction the same answer already settled changes nothing.
func (s *Service) ApplyAuthorization(ctx context.Context, merchant, id string, res coreapi.ConnectorResult) (*coreapi.Transaction, *coreapi.Capture, error) {
	var out *coreapi.Transaction
	var c *coreapi.Capture
	err := s.inTx(ctx, true, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) error {
		op, err := t.AuthorizationOperation(res.Outcome)
		if err != nil {
			return err
		}
		step := coreapi.Step{Operation: op, Result: &res}
		if op == coreapi.OpSaleSucceeded || op == coreapi.OpSalePending {
			c = &coreapi.Capture{OperationRecord: newOperation(t, t.Amount, now)}
			c.Settle(&res, now)
			step.CaptureID = c.ID
		}
		next, ev, err := t.Advance(step, now)
		var te *coreapi.TransitionError
		if errors.As(err, &te) && reached(t, op) {
			out, c = t, nil
			return nil
		}
		if err != nil {
			return err
		}
		out = next
		return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev, Capture: c})
	})
	if err != nil {
		return nil, nil, err
	}
	return out, c, nil
}

// reached reports whether t already stands where op leads from the
// authorization: the same answer given again.
func reached(t *coreapi.Transaction, op coreapi.TransactionOperation) bool {
	from := coreapi.TransactionState{Status: coreapi.TransactionProcessing, Amount: t.Amount}
	after, err := from.Apply(op, 0)
	return err == nil && after == t.TransactionState
}

// ReserveCapture records a capture of amount (nil: all that is left to
// capture) of transaction id, processing, its amount reserved: step 1
// (package comment). The capture's ID is the reference to send the
// connector. A refusal is a *coreapi.TransitionError.
func (s *Service) ReserveCapture(ctx context.Context, merchant, id string, amount *int64) (*coreapi.Transaction, *coreapi.Capture, error) {
	if err := coreapi.ValidateCaptureAmount(amount); err != nil {
		return nil, nil, err
	}
	var out *coreapi.Transaction
	var c *coreapi.Capture
	err := s.inTx(ctx, false, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) error {
		a := requested(amount, t.CapturableAmount())
		c = &coreapi.Capture{OperationRecord: newOperation(t, a, now)}
		next, ev, err := t.Advance(coreapi.Step{Operation: coreapi.OpCaptureRequested, Amount: a, CaptureID: c.ID}, now)
		if err != nil {
			return err
		}
		out = next
		return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev, Capture: c})
	})
	if err != nil {
		return nil, nil, err
	}
	return out, c, nil
}

// SettleCapture records the connector's answer about capture captureID
// of transaction id: step 3.
func (s *Service) SettleCapture(ctx context.Context, merchant, id, captureID string, res coreapi.ConnectorResult) (*coreapi.Transaction, *coreapi.Capture, error) {
	op, err := coreapi.CaptureOperation(res.Outcome)
	if err != nil {
		return nil, nil, err
	}
	var out *coreapi.Transaction
	var c *coreapi.Capture
	err = s.inTx(ctx, true, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) error {
		var err error
		if c, err = tx.Capture(ctx, merchant, id, captureID); err != nil {
			return err
		}
		out, err = settle(ctx, tx, t, &c.OperationRecord, coreapi.Step{Operation: op, CaptureID: c.ID}, res, now,
			func(tr *coreapi.Transition) { tr.Capture = c }, coreapi.CodeNoCapturePending)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, c, nil
}

// RequestVoid moves transaction id to authorization_void_pending: step 1.
// ref is the void's reference to send the connector, a new one for each
// attempt.
func (s *Service) RequestVoid(ctx context.Context, merchant, id string) (t *coreapi.Transaction, ref string, err error) {
	err = s.inTx(ctx, false, merchant, id, func(tx Tx, before *coreapi.Transaction, now time.Time) error {
		next, ev, err := before.Advance(coreapi.Step{Operation: coreapi.OpVoidRequested}, now)
		if err != nil {
			return err
		}
		ref = uuid.NewString()
		next.VoidReference, t = &ref, next
		return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev})
	})
	if err != nil {
		return nil, "", err
	}
	return t, ref, nil
}

// SettleVoid records the connector's answer about the void of transaction
// id sent with reference ref: step 3. An answer about an earlier attempt
// is refused (coreapi.CodeNoVoidPending); a success given again changes
// nothing.
func (s *Service) SettleVoid(ctx context.Context, merchant, id, ref string, res coreapi.ConnectorResult) (*coreapi.Transaction, error) {
	op, err := coreapi.VoidOperation(res.Outcome)
	if err != nil {
		return nil, err
	}
	var out *coreapi.Transaction
	err = s.inTx(ctx, true, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) error {
		current := t.VoidReference != nil && *t.VoidReference == ref
		if current && t.Status == coreapi.TransactionAuthorizationVoided && op == coreapi.OpVoidSucceeded {
			out = t
			return nil
		}
		if !current {
			return &coreapi.TransitionError{Code: coreapi.CodeNoVoidPending, Operation: op, Status: t.Status}
		}
		next, ev, err := t.Advance(coreapi.Step{Operation: op, Result: &res}, now)
		if err != nil {
			return err
		}
		out = next
		return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev})
	})
	return out, err
}

// ReserveRefund records a refund of transaction id, processing, its
// amount reserved: step 1. The refund's ID is the reference to send the
// connector.
func (s *Service) ReserveRefund(ctx context.Context, merchant, id string, n coreapi.NewRefund) (*coreapi.Transaction, *coreapi.Refund, error) {
	if err := n.Validate(); err != nil {
		return nil, nil, err
	}
	var out *coreapi.Transaction
	var r *coreapi.Refund
	err := s.inTx(ctx, false, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) error {
		a := requested(n.Amount, t.RefundableAmount())
		r = &coreapi.Refund{OperationRecord: newOperation(t, a, now), Currency: t.Currency, Reason: n.Reason, ExternalIdentifier: n.ExternalIdentifier}
		next, ev, err := t.Advance(coreapi.Step{Operation: coreapi.OpRefundRequested, Amount: a, RefundID: r.ID}, now)
		if err != nil {
			return err
		}
		out = next
		return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev, Refund: r})
	})
	if err != nil {
		return nil, nil, err
	}
	return out, r, nil
}

// SettleRefund records the connector's answer about refund refundID of
// transaction id: step 3.
func (s *Service) SettleRefund(ctx context.Context, merchant, id, refundID string, res coreapi.ConnectorResult) (*coreapi.Transaction, *coreapi.Refund, error) {
	op, err := coreapi.RefundOperation(res.Outcome)
	if err != nil {
		return nil, nil, err
	}
	var out *coreapi.Transaction
	var r *coreapi.Refund
	err = s.inTx(ctx, true, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) error {
		var err error
		if r, err = tx.Refund(ctx, merchant, id, refundID); err != nil {
			return err
		}
		out, err = settle(ctx, tx, t, &r.OperationRecord, coreapi.Step{Operation: op, RefundID: r.ID}, res, now,
			func(tr *coreapi.Transition) { tr.Refund = r }, coreapi.CodeNoRefundPending)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, r, nil
}

// inTx runs fn with transaction id locked, in one database transaction.
// A settlement (settling) runs to its end whatever becomes of the
// request, within settleTimeout: the connector has answered, and its
// answer must be kept.
func (s *Service) inTx(ctx context.Context, settling bool, merchant, id string, fn func(tx Tx, t *coreapi.Transaction, now time.Time) error) error {
	if settling {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
	}
	return s.Store.InTx(ctx, func(tx Tx) error {
		t, now, err := tx.LockTransaction(ctx, merchant, id)
		if err != nil {
			return err
		}
		return fn(tx, t, now)
	})
}

// settle applies the connector's answer res about capture or refund o of
// t, as step (which names o): o takes the answer, t moves o's amount. A
// record already settled with the same answer changes nothing; with
// another, it is refused with code.
func settle(ctx context.Context, tx Tx, t *coreapi.Transaction, o *coreapi.OperationRecord, step coreapi.Step,
	res coreapi.ConnectorResult, now time.Time, with func(*coreapi.Transition), code string) (*coreapi.Transaction, error) {
	if o.Status != coreapi.OperationProcessing {
		if o.SettledAs(res.Outcome) {
			return t, nil
		}
		return nil, &coreapi.TransitionError{Code: code, Operation: step.Operation, Status: t.Status}
	}
	step.Amount, step.Result = o.Amount, &res
	next, ev, err := t.Advance(step, now)
	if err != nil {
		return nil, err
	}
	o.Settle(&res, now)
	tr := coreapi.Transition{Transaction: next, Event: ev}
	with(&tr)
	return next, tx.RecordTransition(ctx, tr)
}

// requested is the amount a capture or refund asks for: amount, or all
// that is left (left). When nothing is left, 1 is asked for, which the
// state machine refuses as exceeding what is left, the refusal that says
// why.
func requested(amount *int64, left int64) int64 {
	switch {
	case amount != nil:
		return *amount
	case left > 0:
		return left
	}
	return 1
}

// newOperation is a capture's or refund's record of amount on t, as it is
// reserved at now: processing, under a new id.
func newOperation(t *coreapi.Transaction, amount int64, now time.Time) coreapi.OperationRecord {
	return coreapi.OperationRecord{ID: uuid.NewString(), MerchantAccountID: t.MerchantAccountID, TransactionID: t.ID,
		Amount: amount, Status: coreapi.OperationProcessing, CreatedAt: now, UpdatedAt: now}
}

// invalid is a *coreapi.ValidationError with one problem.
func invalid(pointer, message, typ string) error {
	var v coreapi.Problems
	v.Add(pointer, message, typ)
	return v.Err()
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
