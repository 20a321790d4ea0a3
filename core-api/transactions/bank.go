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
	// BuiltIn is the built-in sandbox bank connector (mock-bank): what a
	// bank debit, or a mandate set up with a stored account, goes to when
	// it names no payment service and its merchant account has no default
	// for bank; nil in production.
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
// the debit to its bank connector (bankRoute): a sale (intent capture,
// whatever the request says) whose capture settles when the processor
// notifies the debit's result (docs/transactions.md, "Bank debits"). A
// merchant-initiated charge needs the account's mandate active with its
// recurring token (coreapi.Mandate.Usable): otherwise it is a
// *coreapi.MandateError, and nothing is stored or sent. A
// customer-initiated debit of an account without a mandate sets one up
// first (setUpMandate). The transaction is returned capture_pending, or
// declined or failed as the connector answered; still processing when
// the outcome is unknown (Resume sends the same reference again).
func (s *Service) payByBank(ctx context.Context, merchant string, n coreapi.NewTransaction, pm *coreapi.PaymentMethod) (*coreapi.Transaction, error) {
	bank := coreapi.MethodBank
	if n.Method == nil {
		n.Method = &bank
	}
	n.Intent = coreapi.IntentCapture
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.Currency != pm.Currency {
		return nil, invalid("/currency", "must be the bank account's currency, "+pm.Currency, "value_error.currency.bank_account")
	}
	mandateID := ""
	if n.MerchantInitiated {
		if err := pm.Mandate.Usable(); err != nil {
			return nil, err
		}
		mandateID = pm.Mandate.ID
	}
	conn, cfg, err := s.bankRoute(ctx, merchant, &n, pm)
	if err != nil {
		return nil, err
	}
	if !n.MerchantInitiated && pm.Mandate == nil && (!pm.SinglePayment || n.Store) {
		if err := s.setUpMandate(ctx, conn, cfg, n.PaymentServiceID, pm); err != nil {
			return nil, err
		}
	}
	t, err := s.create(ctx, merchant, n, pm)
	if err != nil {
		return nil, err
	}
	return s.sendDebit(ctx, conn, cfg, t, mandateID)
}

// bankRoute chooses a bank debit's connector as qrRoute does a pix
// payment's: the payment service n names, else the merchant account's
// default for bank, else, outside production, the built-in sandbox
// connector. A merchant-initiated charge goes where its mandate was set
// up instead: that payment service (named or not), or the built-in
// connector; another payment service named is 400 at /payment_service_id.
// It sets n's payment service id to the one chosen and checks the
// connector's entry of the connection options against its schema.
func (s *Service) bankRoute(ctx context.Context, merchant string, n *coreapi.NewTransaction, pm *coreapi.PaymentMethod) (BankConnector, connector.Config, error) {
	id := n.PaymentServiceID
	if n.MerchantInitiated {
		if id != nil && (pm.Mandate.PaymentServiceID == nil || *id != *pm.Mandate.PaymentServiceID) {
			return nil, connector.Config{}, invalid("/payment_service_id", "a merchant-initiated charge goes through the payment service the account's mandate was set up with",
				"value_error.payment_service.mandate")
		}
		id = pm.Mandate.PaymentServiceID
	}
	var conn BankConnector
	var cfg connector.Config
	var ps *coreapi.PaymentService
	var err error
	if id != nil || !n.MerchantInitiated {
		if ps, cfg, err = s.PaymentServices.ForPayment(ctx, merchant, id, coreapi.MethodBank); err != nil {
			return nil, cfg, err
		}
	}
	switch {
	case ps != nil:
		c, err := s.Connectors.BankDebits(ps.Connector)
		if err != nil {
			return nil, cfg, coreapi.ErrPaymentServiceConnector
		}
		conn, n.PaymentServiceID = c, &ps.ID
	case s.Bank != nil && s.Bank.BuiltIn != nil:
		conn = s.Bank.BuiltIn
	default:
		return nil, cfg, coreapi.ErrPaymentServiceUnavailable
	}
	var v coreapi.Problems
	if sc, err := s.Connectors.Schemas(conn.Name()); err == nil {
		sc.ConnectionOptions.Validate("/connection_options/"+conn.Name(), n.ConnectionOptions[conn.Name()], &v)
	}
	return conn, cfg, v.Err()
}

// bankOf is the connector and configuration of bank debit t: its payment
// service's, or the built-in connector's for one without.
func (s *Service) bankOf(ctx context.Context, t *coreapi.Transaction) (BankConnector, connector.Config, error) {
	if t.PaymentServiceID == nil {
		if s.Bank == nil || s.Bank.BuiltIn == nil {
			return nil, connector.Config{}, coreapi.ErrPaymentServiceUnavailable
		}
		return s.Bank.BuiltIn, connector.Config{}, nil
	}
	ps, cfg, err := s.PaymentServices.ForOperation(ctx, t.MerchantAccountID, *t.PaymentServiceID)
	if err != nil {
		return nil, cfg, err
	}
	c, err := s.Connectors.BankDebits(ps.Connector)
	if err != nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	return c, cfg, nil
}

// setUpMandate sets up the mandate of stored bank account pm (or one the
// payment stores) on its first customer-initiated debit, through the
// debit's connector and payment service (psID, cfg), before the
// transaction is created: the buyer, present, authorizes the debit and
// later ones on the merchant's initiative, which go where the mandate
// is. The mandate is pending until the bank activates it
// (docs/transactions.md, "Bank debits"); this debit goes as a one-off,
// under no mandate. A mandate the bank declines at once refuses the
// payment (*coreapi.MandateError mandate_declined), and nothing is
// stored. A mandate set up twice (a retry, a race) is the same: the
// account's token is its reference.
func (s *Service) setUpMandate(ctx context.Context, conn BankConnector, cfg connector.Config, psID *string, pm *coreapi.PaymentMethod) error {
	if s.Bank == nil || s.Bank.Mandates == nil {
		return coreapi.ErrMandatesUnavailable
	}
	m, err := s.mandateAt(ctx, conn, cfg, psID, pm)
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
			if _, rerr := conn.RevokeMandate(ctx, pm.MerchantAccountID, m.ID, cfg); rerr != nil {
				return &coreapi.ConnectorError{Failed: "the bank account was deleted meanwhile, and the mandate set up for it could not be revoked: mandate " + m.ID, Err: rerr}
			}
			return invalid("/payment_method/id", "no stored payment method with this id in this merchant account", "value_error.payment_method.not_found")
		}
		return err
	}
	pm.Mandate = m
	return nil
}

// NewMandate sets up a recurring debit mandate for bank account pm, being
// stored with mandate.recurring, where a customer-initiated debit of it
// naming no payment service would set it up (bankRoute): through the
// merchant account's default payment service for bank, with its
// credentials, else, outside production, the built-in connector. Neither
// is coreapi.ErrPaymentServiceUnavailable, and nothing is sent. The
// mandate names the payment service, whose configuration its
// notifications, merchant-initiated charges and revocation then use; it
// is not recorded: the caller stores it with the account, and revokes it
// (at its payment service) if that fails. coreapi.ErrMandateDeclined
// when the bank refuses it at once.
func (s *Service) NewMandate(ctx context.Context, pm *coreapi.PaymentMethod) (*coreapi.Mandate, error) {
	var n coreapi.NewTransaction
	conn, cfg, err := s.bankRoute(ctx, pm.MerchantAccountID, &n, pm)
	if err != nil {
		return nil, err
	}
	return s.mandateAt(ctx, conn, cfg, n.PaymentServiceID, pm)
}

// mandateAt asks conn, under payment service psID's configuration cfg,
// for pm's mandate, its notifications sent to core-api's route for conn.
func (s *Service) mandateAt(ctx context.Context, conn BankConnector, cfg connector.Config, psID *string, pm *coreapi.PaymentMethod) (*coreapi.Mandate, error) {
	return connector.SetUpMandate(ctx, conn, cfg, psID, pm, s.notificationURL(conn.Name(), pm.MerchantAccountID))
}

// sendDebit asks conn (under cfg) to debit t's account, with t's id as
// the reference (under mandateID for a merchant-initiated charge), and
// records the answer.
func (s *Service) sendDebit(ctx context.Context, conn BankConnector, cfg connector.Config, t *coreapi.Transaction, mandateID string) (*coreapi.Transaction, error) {
	res, err := conn.Debit(ctx, connector.BankDebit{MerchantAccountID: t.MerchantAccountID, Reference: t.ID,
		PaymentMethodID: *t.PaymentMethod.ID, Scheme: deref(t.PaymentMethod.Scheme), Amount: t.Amount, Currency: t.Currency,
		MandateID: mandateID, NotificationURL: s.notificationURL(conn.Name(), t.MerchantAccountID), CartItems: t.CartItems, Config: cfg})
	res, sendErr := sent(res, err)
	t, _, err = s.ApplyAuthorization(ctx, t.MerchantAccountID, t.ID, res)
	if err != nil {
		return nil, err
	}
	return t, sendErr
}

// resumeDebit sends a bank payment whose answer was never recorded again,
// with the same reference, to the same connector: the processor answers
// the same debit. A merchant-initiated charge whose payment method is
// gone meanwhile (its mandate revoked with it) fails instead.
func (s *Service) resumeDebit(ctx context.Context, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	conn, cfg, err := s.bankOf(ctx, t)
	if err != nil {
		return nil, err
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
	return s.sendDebit(ctx, conn, cfg, t, mandateID)
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
	conn, cfg, err := s.bankOf(ctx, t)
	if err != nil {
		return nil, err
	}
	merchant, id := t.MerchantAccountID, t.ID
	res, err := conn.LookupDebit(ctx, connector.DebitLookup{MerchantAccountID: merchant, Reference: id, Config: cfg})
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
