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
	"log/slog"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/idempotency"
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
	// TransactionEvent is one event of a transaction (coreapi.ErrNotFound).
	TransactionEvent(ctx context.Context, merchant, transactionID, id string) (*coreapi.TransactionEvent, error)
	ListRefunds(ctx context.Context, merchant, transactionID string, page pagination.Page) ([]coreapi.Refund, error)
	Refund(ctx context.Context, merchant, id string) (*coreapi.Refund, error)
	// ProcessingOperations returns a transaction's captures and refunds
	// still processing (Sync).
	ProcessingOperations(ctx context.Context, merchant, transactionID string) ([]coreapi.Capture, []coreapi.Refund, error)

	// What a transaction is created with.
	PaymentMethod(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error)
	// PaymentMethodPaidWith reports whether a transaction was created
	// with payment method id.
	PaymentMethodPaidWith(ctx context.Context, merchant, id string) (bool, error)
	// ResolveBuyer finds a buyer by id, external identifier or both
	// (which must then name the same buyer): its id and external
	// identifier ("" for none), or coreapi.ErrNotFound.
	ResolveBuyer(ctx context.Context, merchant, id, externalIdentifier string) (string, string, error)
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
	// NotificationRecorded reports whether an event of the transaction
	// records connector's notification id already.
	NotificationRecorded(ctx context.Context, merchant, transactionID, connector, id string) (bool, error)
	// RecordEvent writes an event that changes nothing else (a
	// notification with nothing to apply).
	RecordEvent(ctx context.Context, e *coreapi.TransactionEvent) error
	// RecordPaymentMethodUse records an approved authorization on its
	// payment method (coreapi.PaymentMethodUse); one deleted since is no
	// error.
	RecordPaymentMethodUse(ctx context.Context, merchant, id string, u coreapi.PaymentMethodUse) error
}

// Service manages transactions.
type Service struct {
	Store Store
	// Cards is the built-in sandbox card connector: what a card payment
	// goes to when it names no payment service and its merchant account
	// has no default; nil in production (routing.go).
	Cards CardConnector
	// PaymentServices and Connectors route a payment to the connector of
	// its payment service.
	PaymentServices PaymentServices
	Connectors      Connectors
	// SyncMinAge is how long Sync leaves alone an operation in flight
	// that the processor has no record of (0: DefaultSyncMinAge).
	SyncMinAge time.Duration
	// VaultProxy confirms that vault-proxy holds a card's security code
	// before the connector is told so; nil: never told.
	VaultProxy VaultProxy
	// QR is what pix payments need (qr.go); nil: none are taken.
	QR *QR
	// Bank is what bank debits need (bank.go); nil: none are taken.
	Bank *Bank
	// Direct serves direct (client SDK) integrations (direct.go).
	Direct Direct
	// Redirect is what redirect payments need (redirect.go); nil: none
	// are taken.
	Redirect *Redirect
	// ThreeDS authenticates card payments' buyers (threeds.go).
	ThreeDS ThreeDS
	// Buyers reads buyers' billing details for 3-D Secure and anti-fraud;
	// nil: none are sent.
	Buyers Buyers
	// Log records what fails on the side without failing the payment;
	// nil: nothing is logged.
	Log *slog.Logger
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
	return s.create(ctx, merchant, n, nil)
}

// create is Create with n's stored payment method as already read (nil:
// read it here).
func (s *Service) create(ctx context.Context, merchant string, n coreapi.NewTransaction, pm *coreapi.PaymentMethod) (*coreapi.Transaction, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	t := &coreapi.Transaction{
		MerchantAccountID: merchant, TransactionState: coreapi.TransactionState{Amount: n.Amount},
		Intent: n.Intent, Currency: n.Currency, Country: n.Country,
		PaymentServiceID: n.PaymentServiceID, TransactionDetails: n.TransactionDetails, Store: n.Store,
	}
	if t.Intent == "" {
		t.Intent = coreapi.IntentAuthorize
	}
	if t.PaymentSource == "" {
		t.PaymentSource = coreapi.PaymentSourceECommerce
	}
	if err := s.paymentMethod(ctx, merchant, n, pm, t); err != nil {
		return nil, err
	}
	if err := s.buyer(ctx, merchant, n, t); err != nil {
		return nil, err
	}
	if err := s.Store.CreateTransaction(ctx, t); err != nil {
		return nil, err
	}
	// Before the connector is called: a retry of a request that dies
	// from here on resumes this transaction (Sync) rather than paying
	// again. Should this fail, the transaction stays processing, never
	// sent, and the sweep fails it.
	if err := idempotency.Attach(ctx, t.ID); err != nil {
		return nil, err
	}
	return t, nil
}

// paymentMethod sets t's payment method summary: the stored one's display
// data (pm, when already read), or the method named.
func (s *Service) paymentMethod(ctx context.Context, merchant string, n coreapi.NewTransaction, pm *coreapi.PaymentMethod, t *coreapi.Transaction) error {
	if n.PaymentMethodID == nil {
		t.PaymentMethod.Method = *n.Method
		return nil
	}
	if pm == nil || pm.ID != *n.PaymentMethodID {
		var err error
		pm, err = s.Store.PaymentMethod(ctx, merchant, *n.PaymentMethodID)
		if errors.Is(err, coreapi.ErrNotFound) {
			return invalid("/payment_method/id", "no stored payment method with this id in this merchant account", "value_error.payment_method.not_found")
		}
		if err != nil {
			return err
		}
	}
	if n.Method != nil && *n.Method != pm.Method {
		return invalid("/payment_method/method", "the stored payment method is a "+pm.Method, "value_error.payment_method.method")
	}
	if pm.SinglePayment {
		// A card given in full serves the payment it was given with; two
		// payments racing to be its first are not excluded here, which
		// only the merchant that holds its token could start.
		used, err := s.Store.PaymentMethodPaidWith(ctx, merchant, pm.ID)
		if err != nil {
			return err
		}
		if used {
			return invalid("/payment_method/id", "this card was given for one payment and not stored (store: true stores it)", "value_error.payment_method.not_stored")
		}
	}
	t.PaymentMethod = coreapi.TransactionPaymentMethod{ID: &pm.ID, Method: pm.Method, Scheme: &pm.Scheme, Label: &pm.Label}
	if pm.BuyerID != "" {
		t.BuyerID, t.BuyerExternalIdentifier = &pm.BuyerID, nonEmpty(pm.BuyerExternalIdentifier)
	}
	return nil
}

// buyer sets t's buyer when n names one, by id, external identifier or
// both: it must be the merchant account's.
func (s *Service) buyer(ctx context.Context, merchant string, n coreapi.NewTransaction, t *coreapi.Transaction) error {
	if n.BuyerID == nil && n.BuyerExternalIdentifier == nil {
		return nil
	}
	id, ext, err := s.Store.ResolveBuyer(ctx, merchant, deref(n.BuyerID), deref(n.BuyerExternalIdentifier))
	if errors.Is(err, coreapi.ErrNotFound) {
		return coreapi.ErrBuyerNotFound
	}
	if err != nil {
		return err
	}
	t.BuyerID, t.BuyerExternalIdentifier = &id, nonEmpty(ext)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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

// Event returns event eventID of transaction id; one of another
// transaction or merchant account is coreapi.ErrNotFound.
func (s *Service) Event(ctx context.Context, merchant, id, eventID string) (*coreapi.TransactionEvent, error) {
	return s.Store.TransactionEvent(ctx, merchant, id, eventID)
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
	var c *coreapi.Capture
	t, err := s.apply(ctx, true, merchant, id, func(_ Tx, t *coreapi.Transaction, now time.Time) (p plan, err error) {
		p, c, err = authorizationPlan(t, res, now)
		return p, err
	})
	if err != nil {
		return nil, nil, err
	}
	return t, c, nil
}

// authorizationPlan plans the authorization's answer res on t at now
// (ApplyAuthorization), with the capture a sale records (nil for another
// answer).
func authorizationPlan(t *coreapi.Transaction, res coreapi.ConnectorResult, now time.Time) (plan, *coreapi.Capture, error) {
	op, err := t.AuthorizationOperation(res.Outcome)
	if err != nil {
		return plan{}, nil, err
	}
	if _, err := t.Apply(op, 0); err != nil && reached(t, op) {
		return plan{unchanged: true}, nil, nil
	}
	p := plan{step: coreapi.Step{Operation: op, Result: &res}, also: paymentMethodUse(op, now)}
	var c *coreapi.Capture
	if op == coreapi.OpSaleSucceeded || op == coreapi.OpSalePending {
		c = &coreapi.Capture{OperationRecord: newOperation(t, t.Amount, now)}
		c.Settle(&res, now)
		p.step.CaptureID, p.record = c.ID, func(tr *coreapi.Transition) { tr.Capture = c }
	}
	return p, c, nil
}

// paymentMethodUse is what an authorization's answer, operation op,
// records on the payment method the transaction was paid with: nil unless
// op approves it. The scheme transaction id is the one the transaction
// keeps (a value holding a card number is dropped).
func paymentMethodUse(op coreapi.TransactionOperation, now time.Time) func(context.Context, Tx, *coreapi.Transaction) error {
	if op != coreapi.OpAuthorizationSucceeded && op != coreapi.OpSaleSucceeded && op != coreapi.OpSalePending {
		return nil
	}
	return func(ctx context.Context, tx Tx, t *coreapi.Transaction) error {
		if t.PaymentMethod.ID == nil {
			return nil
		}
		return tx.RecordPaymentMethodUse(ctx, t.MerchantAccountID, *t.PaymentMethod.ID, coreapi.PaymentMethodUse{
			At: now, CustomerInitiated: !t.MerchantInitiated, Store: t.Store, SchemeTransactionID: deref(t.SchemeTransactionID)})
	}
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
	var c *coreapi.Capture
	t, err := s.apply(ctx, false, merchant, id, func(_ Tx, t *coreapi.Transaction, now time.Time) (plan, error) {
		a := requested(amount, t.CapturableAmount())
		c = &coreapi.Capture{OperationRecord: newOperation(t, a, now)}
		return plan{step: coreapi.Step{Operation: coreapi.OpCaptureRequested, Amount: a, CaptureID: c.ID},
			record: func(tr *coreapi.Transition) { tr.Capture = c }}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := idempotency.Attach(ctx, t.ID); err != nil { // as in Create
		return nil, nil, err
	}
	return t, c, nil
}

// SettleCapture records the connector's answer about capture captureID
// of transaction id: step 3.
func (s *Service) SettleCapture(ctx context.Context, merchant, id, captureID string, res coreapi.ConnectorResult) (*coreapi.Transaction, *coreapi.Capture, error) {
	op, err := coreapi.CaptureOperation(res.Outcome)
	if err != nil {
		return nil, nil, err
	}
	var c *coreapi.Capture
	t, err := s.apply(ctx, true, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) (plan, error) {
		var err error
		if c, err = tx.Capture(ctx, merchant, id, captureID); err != nil {
			return plan{}, err
		}
		return settlement(t, &c.OperationRecord, coreapi.Step{Operation: op, CaptureID: c.ID}, res, now,
			func(tr *coreapi.Transition) { tr.Capture = c }, coreapi.CodeNoCapturePending)
	})
	if err != nil {
		return nil, nil, err
	}
	return t, c, nil
}

// RequestVoid moves transaction id to authorization_void_pending: step 1.
// ref is the void's reference to send the connector, a new one for each
// attempt.
func (s *Service) RequestVoid(ctx context.Context, merchant, id string) (t *coreapi.Transaction, ref string, err error) {
	ref = uuid.NewString()
	t, err = s.apply(ctx, false, merchant, id, func(Tx, *coreapi.Transaction, time.Time) (plan, error) {
		return plan{step: coreapi.Step{Operation: coreapi.OpVoidRequested},
			record: func(tr *coreapi.Transition) { tr.Transaction.VoidReference = &ref }}, nil
	})
	if err != nil {
		return nil, "", err
	}
	if err := idempotency.Attach(ctx, t.ID); err != nil { // as in Create
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
	return s.apply(ctx, true, merchant, id, func(_ Tx, t *coreapi.Transaction, _ time.Time) (plan, error) {
		current := t.VoidReference != nil && *t.VoidReference == ref
		switch {
		case current && t.Status == coreapi.TransactionAuthorizationVoided && op == coreapi.OpVoidSucceeded:
			return plan{unchanged: true}, nil
		case !current:
			return plan{}, &coreapi.TransitionError{Code: coreapi.CodeNoVoidPending, Operation: op, Status: t.Status}
		}
		return plan{step: coreapi.Step{Operation: op, Result: &res}}, nil
	})
}

// ReserveRefund records a refund of transaction id, processing, its
// amount reserved: step 1. The refund's ID is the reference to send the
// connector.
func (s *Service) ReserveRefund(ctx context.Context, merchant, id string, n coreapi.NewRefund) (*coreapi.Transaction, *coreapi.Refund, error) {
	if err := n.Validate(); err != nil {
		return nil, nil, err
	}
	var r *coreapi.Refund
	t, err := s.apply(ctx, false, merchant, id, func(_ Tx, t *coreapi.Transaction, now time.Time) (plan, error) {
		a := requested(n.Amount, t.RefundableAmount())
		r = &coreapi.Refund{OperationRecord: newOperation(t, a, now), Currency: t.Currency, Reason: n.Reason, ExternalIdentifier: n.ExternalIdentifier}
		return plan{step: coreapi.Step{Operation: coreapi.OpRefundRequested, Amount: a, RefundID: r.ID},
			record: func(tr *coreapi.Transition) { tr.Refund = r }}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := idempotency.Attach(ctx, r.ID); err != nil { // as in Create; the refund is what a retry answers
		return nil, nil, err
	}
	return t, r, nil
}

// SettleRefund records the connector's answer about refund refundID of
// transaction id: step 3.
func (s *Service) SettleRefund(ctx context.Context, merchant, id, refundID string, res coreapi.ConnectorResult) (*coreapi.Transaction, *coreapi.Refund, error) {
	op, err := coreapi.RefundOperation(res.Outcome)
	if err != nil {
		return nil, nil, err
	}
	var r *coreapi.Refund
	t, err := s.apply(ctx, true, merchant, id, func(tx Tx, t *coreapi.Transaction, now time.Time) (plan, error) {
		var err error
		if r, err = tx.Refund(ctx, merchant, id, refundID); err != nil {
			return plan{}, err
		}
		return settlement(t, &r.OperationRecord, coreapi.Step{Operation: op, RefundID: r.ID}, res, now,
			func(tr *coreapi.Transition) { tr.Refund = r }, coreapi.CodeNoRefundPending)
	})
	if err != nil {
		return nil, nil, err
	}
	return t, r, nil
}

// plan is what a step on a locked transaction is to write: its step of
// the state machine, and through record what else the transition holds
// (the capture or refund it makes or settles). unchanged: nothing, the
// step was made before.
type plan struct {
	step      coreapi.Step
	record    func(*coreapi.Transition)
	unchanged bool
	// also writes what else the step changes, in its database
	// transaction, once the state machine has taken the step to next.
	also func(ctx context.Context, tx Tx, next *coreapi.Transaction) error
}

// apply makes one step on transaction id, in one database transaction:
// lock the row, plan the step (which may read more under the lock), run
// the state machine, write the transition. It returns the transaction as
// it then stands. A settlement (settling) runs to its end whatever
// becomes of the request, within settleTimeout: the connector has
// answered, and its answer must be kept.
func (s *Service) apply(ctx context.Context, settling bool, merchant, id string, planFn func(tx Tx, t *coreapi.Transaction, now time.Time) (plan, error)) (*coreapi.Transaction, error) {
	if settling {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
	}
	var out *coreapi.Transaction
	err := s.Store.InTx(ctx, func(tx Tx) error {
		t, now, err := tx.LockTransaction(ctx, merchant, id)
		if err != nil {
			return err
		}
		p, err := planFn(tx, t, now)
		if err != nil || p.unchanged {
			out = t
			return err
		}
		next, ev, err := t.Advance(p.step, now)
		if err != nil {
			return err
		}
		tr := coreapi.Transition{Transaction: next, Event: ev}
		if p.record != nil {
			p.record(&tr)
		}
		if p.also != nil {
			if err := p.also(ctx, tx, next); err != nil {
				return err
			}
		}
		out = next
		return tx.RecordTransition(ctx, tr)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// settlement plans the connector's answer res about capture or refund o
// of t, as step (which names o): o takes the answer (record, which also
// puts o in the transition), t moves o's amount. A record already settled
// with the same answer changes nothing, nor does a pending answer: the
// processor's notification of the result can overtake its answer to the
// request, which is then older than the result. With another answer, it
// is refused with code.
func settlement(t *coreapi.Transaction, o *coreapi.OperationRecord, step coreapi.Step, res coreapi.ConnectorResult,
	now time.Time, record func(*coreapi.Transition), code string) (plan, error) {
	if o.Status != coreapi.OperationProcessing {
		if o.SettledAs(res.Outcome) || res.Outcome == coreapi.OutcomePending {
			return plan{unchanged: true}, nil
		}
		return plan{}, &coreapi.TransitionError{Code: code, Operation: step.Operation, Status: t.Status}
	}
	step.Amount, step.Result = o.Amount, &res
	return plan{step: step, record: func(tr *coreapi.Transition) {
		o.Settle(&res, now)
		record(tr)
	}}, nil
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
