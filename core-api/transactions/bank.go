package transactions

import (
	"context"
	"errors"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// BankConnector is what the service asks of a connector of bank debits
// (connector.BankDebitConnector implements it).
type BankConnector = connector.BankDebitConnector

// MandateStore is the core database's bank debit mandates as bank
// payments and their notifications use them (postgres.DB).
type MandateStore interface {
	// Mandate is one mandate of the merchant account, by the processor's
	// id (coreapi.ErrNotFound).
	Mandate(ctx context.Context, merchant, id string) (*coreapi.Mandate, error)
	// ChangeMandate changes a mandate under its row lock and records the
	// change as an event with notification nt, once per notification:
	// dup reports one already recorded, and nothing is written.
	ChangeMandate(ctx context.Context, merchant, id string, nt *coreapi.Notification,
		change func(m coreapi.Mandate, now time.Time) (coreapi.Mandate, string)) (ev *coreapi.MandateEvent, dup bool, err error)
	// AddMandate records mandate m, just set up for payment method pm,
	// with its created event; the same mandate again is no error, and
	// a payment method deleted meanwhile is coreapi.ErrNotFound.
	AddMandate(ctx context.Context, pm *coreapi.PaymentMethod, m *coreapi.Mandate) error
}

// Bank is what bank payments (ACH, SEPA, Bacs debits of a stored bank
// account) need besides the store.
type Bank struct {
	// BuiltIn is the environment's bank connector, the one mandates are
	// set up with (the built-in sandbox mock-bank); nil in production,
	// where bank payments are refused.
	BuiltIn  BankConnector
	Mandates MandateStore
}

// bankPayment reports whether t debits a stored bank account.
func bankPayment(t *coreapi.Transaction) bool {
	return t.PaymentMethod.ID != nil && t.PaymentMethod.Method == coreapi.MethodBank
}

// ErrorCodeMandateRevoked is the error_code of a merchant-initiated bank
// charge resumed after its payment method, and so its mandate, is gone.
const ErrorCodeMandateRevoked = coreapi.CodeMandateRevoked

// payByBank creates a payment debiting stored bank account pm and sends
// the debit to the bank connector: a sale (intent capture, whatever the
// request says) whose capture settles when the processor notifies the
// debit's result (docs/transactions.md, "Bank debits"). A
// merchant-initiated charge needs the account's mandate active with its
// recurring token (coreapi.Mandate.Usable): otherwise it is a
// *coreapi.MandateError, and nothing is stored or sent. The transaction
// is returned capture_pending, or declined or failed as the connector
// answered; still processing when the outcome is unknown (Resume sends the
// same reference again).
func (s *Service) payByBank(ctx context.Context, merchant string, n coreapi.NewTransaction, pm *coreapi.PaymentMethod) (*coreapi.Transaction, error) {
	bank := coreapi.MethodBank
	if n.Method == nil {
		n.Method = &bank
	}
	if n.PaymentServiceID != nil {
		return nil, invalid("/payment_service_id", "bank payments go to the environment's bank connector, the one the account's mandate was set up with; they take no payment service",
			"value_error.payment_service.bank")
	}
	n.Intent = coreapi.IntentCapture
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.Currency != pm.Currency {
		return nil, invalid("/currency", "must be the bank account's currency, "+pm.Currency, "value_error.currency.bank_account")
	}
	if s.Bank == nil || s.Bank.BuiltIn == nil {
		return nil, coreapi.ErrPaymentServiceUnavailable
	}
	var v coreapi.Problems
	name := s.Bank.BuiltIn.Name()
	if sc, err := s.Connectors.Schemas(name); err == nil {
		sc.ConnectionOptions.Validate("/connection_options/"+name, n.ConnectionOptions[name], &v)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	mandateID := ""
	switch {
	case n.MerchantInitiated:
		if err := pm.Mandate.Usable(); err != nil {
			return nil, err
		}
		mandateID = pm.Mandate.ID
	case pm.Mandate == nil && (!pm.SinglePayment || n.Store):
		if err := s.setUpMandate(ctx, pm); err != nil {
			return nil, err
		}
	}
	t, err := s.create(ctx, merchant, n, pm)
	if err != nil {
		return nil, err
	}
	return s.sendDebit(ctx, t, mandateID)
}

// setUpMandate sets up the mandate of stored bank account pm (or one the
// payment stores) on its first customer-initiated debit, before the
// transaction is created: the buyer, present, authorizes the debit and
// later ones on the merchant's initiative. The mandate is pending until
// the bank activates it (docs/transactions.md, "Bank debits"); this debit
// goes as a one-off, under no mandate. A mandate the bank declines at
// once refuses the payment (*coreapi.MandateError mandate_declined), and
// nothing is stored. A mandate set up twice (a retry, a race) is the
// same: the account's token is its reference.
func (s *Service) setUpMandate(ctx context.Context, pm *coreapi.PaymentMethod) error {
	conn := s.Bank.BuiltIn
	m, err := connector.SetUpMandate(ctx, conn, pm, s.notificationURL(conn.Name(), pm.MerchantAccountID))
	if errors.Is(err, coreapi.ErrMandateDeclined) {
		return &coreapi.MandateError{Code: coreapi.CodeMandateDeclined, Message: "the bank declined the account's mandate; nothing was debited"}
	}
	if err != nil {
		return err
	}
	if err := s.Bank.Mandates.AddMandate(ctx, pm, m); err != nil {
		if errors.Is(err, coreapi.ErrNotFound) {
			// Deleted meanwhile: its deletion revoked the mandate it knew of,
			// not this one.
			if _, rerr := conn.RevokeMandate(ctx, pm.MerchantAccountID, m.ID); rerr != nil {
				return &coreapi.ConnectorError{Failed: "the bank account was deleted meanwhile, and the mandate set up for it could not be revoked: mandate " + m.ID, Err: rerr}
			}
			return invalid("/payment_method/id", "no stored payment method with this id in this merchant account", "value_error.payment_method.not_found")
		}
		return err
	}
	pm.Mandate = m
	return nil
}

// sendDebit asks the bank connector to debit t's account, with t's id as
// the reference (under mandateID for a merchant-initiated charge), and
// records the answer.
func (s *Service) sendDebit(ctx context.Context, t *coreapi.Transaction, mandateID string) (*coreapi.Transaction, error) {
	conn := s.Bank.BuiltIn
	res, err := conn.Debit(ctx, connector.BankDebit{MerchantAccountID: t.MerchantAccountID, Reference: t.ID,
		PaymentMethodID: *t.PaymentMethod.ID, Scheme: deref(t.PaymentMethod.Scheme), Amount: t.Amount, Currency: t.Currency,
		MandateID: mandateID, NotificationURL: s.notificationURL(conn.Name(), t.MerchantAccountID)})
	res, sendErr := sent(res, err)
	t, _, err = s.ApplyAuthorization(ctx, t.MerchantAccountID, t.ID, res)
	if err != nil {
		return nil, err
	}
	return t, sendErr
}

// resumeDebit sends a bank payment whose answer was never recorded again,
// with the same reference: the processor answers the same debit. A
// merchant-initiated charge whose payment method is gone meanwhile (its
// mandate revoked with it) fails instead.
func (s *Service) resumeDebit(ctx context.Context, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	if s.Bank == nil || s.Bank.BuiltIn == nil {
		return nil, coreapi.ErrPaymentServiceUnavailable
	}
	mandateID := ""
	if t.MerchantInitiated {
		pm, err := s.Store.PaymentMethod(ctx, t.MerchantAccountID, *t.PaymentMethod.ID)
		switch {
		case errors.Is(err, coreapi.ErrNotFound) || err == nil && pm.Mandate == nil:
			t, _, err = s.ApplyAuthorization(ctx, t.MerchantAccountID, t.ID,
				coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeMandateRevoked})
			return t, err
		case err != nil:
			return nil, err
		}
		mandateID = pm.Mandate.ID
	}
	return s.sendDebit(ctx, t, mandateID)
}

// syncDebit settles what is in flight on bank debit t from the
// processor's record of the debit (LookupDebit, by the transaction's id),
// as Sync does a card payment's, never sending the debit again:
//
//   - a debit whose answer was never recorded (processing): found, the
//     bank took it, and it is capture_pending with the debit's id, as
//     the answer would have made it; not found, it is left while younger
//     than the minimum age, then failed (ErrorCodeNotReceived). A retry
//     of the request resumes it instead (resumeDebit).
//   - a debit the bank has settled while its notification was lost
//     (capture_pending, or just made so): its capture is settled as the
//     notification would have settled it (applyNotification), with no
//     notification recorded.
//
// A debit still pending at the bank is left pending.
func (s *Service) syncDebit(ctx context.Context, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	authorizing := t.Status == coreapi.TransactionProcessing
	if !authorizing && t.CapturePendingAmount == 0 {
		return t, nil
	}
	if s.Bank == nil || s.Bank.BuiltIn == nil {
		return nil, coreapi.ErrPaymentServiceUnavailable
	}
	merchant, id := t.MerchantAccountID, t.ID
	res, err := s.Bank.BuiltIn.LookupDebit(ctx, connector.DebitLookup{MerchantAccountID: merchant, Reference: id})
	unknown := errors.Is(err, connector.ErrNotFound)
	if err != nil && !(unknown && authorizing) {
		return nil, &coreapi.ConnectorError{Failed: "the bank connector could not tell what became of the debit; nothing changed", Err: err}
	}
	if authorizing {
		taken := coreapi.ConnectorResult{Outcome: coreapi.OutcomeCapturePending, Reference: res.Reference, RawResponseCode: "pending"}
		switch {
		case unknown && time.Since(t.CreatedAt) < s.syncMinAge():
			return t, nil // may still be on its way
		case unknown:
			taken = coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeNotReceived}
		}
		if t, _, err = s.ApplyAuthorization(ctx, merchant, id, taken); err != nil || unknown {
			return t, err
		}
	}
	if res.Outcome == coreapi.OutcomeCapturePending {
		return t, nil // the bank has not settled it yet
	}
	c, err := s.saleCapture(ctx, t, res.Reference)
	if err != nil {
		return nil, err
	}
	if _, err := s.applyNotification(ctx, t, c, connector.Notification{Result: res}, nil); err != nil {
		return nil, err
	}
	return s.Store.Transaction(ctx, merchant, id)
}
