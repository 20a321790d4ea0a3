package connector

import (
	"context"

	coreapi "github.com/payorch/core-api"
)

// BankDebit asks a connector to debit a stored bank account (ACH, SEPA,
// Bacs). The account is named by its vault-proxy token; a connector that
// needs the account number asks vault-proxy for a detokenized call.
type BankDebit struct {
	MerchantAccountID string
	// Reference is the idempotency reference (the transaction's id): the
	// same reference sent again is the same debit, and the processor's
	// notifications name it.
	Reference       string
	PaymentMethodID string
	Scheme          string // ach, sepa, bacs
	Amount          int64  // minor units
	Currency        string
	// MandateID is the processor's mandate a merchant-initiated charge is
	// made under; "" for a one-off debit the buyer asked for.
	MandateID string
	// NotificationURL is where the processor sends the debit's result.
	NotificationURL string
	// CartItems are the transaction's (nil: none), as CardAuthorization's.
	CartItems []coreapi.CartItem
	Config    Config
}

// BankDebitConnector debits bank accounts and sets up their mandates.
// A debit's result arrives later, as a notification
// (KindDebitResult, KindRecurringChargeResult).
type BankDebitConnector interface {
	NotificationConnector
	MandateConnector
	// Debit answers OutcomeCapturePending with the debit's id
	// (Reference), or a decline; an unknown outcome is reported as
	// CardConnector's (ErrOutcomeUnknown).
	Debit(ctx context.Context, r BankDebit) (coreapi.ConnectorResult, error)
	// LookupDebit is the processor's record of the debit sent with
	// r.Reference, as its notification would tell it: Reference the
	// debit's id, OutcomeCapturePending while the bank has not settled it,
	// else OutcomeSucceeded or OutcomeFailed with the bank's code.
	// ErrNotFound when the processor has no such debit.
	LookupDebit(ctx context.Context, r DebitLookup) (coreapi.ConnectorResult, error)
}

// DebitLookup asks a connector what became of the debit sent with
// Reference (a transaction's id).
type DebitLookup struct {
	MerchantAccountID string
	Reference         string
	Config            Config
}

// BankDebits returns the named connector if it debits bank accounts.
func (r *Registry) BankDebits(name string) (BankDebitConnector, error) {
	c, ok := r.byName[name].(BankDebitConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}

// SetUpMandate asks conn, under cfg (its payment service's
// configuration, psID; zero and nil: the built-in one), for a recurring
// debit mandate on bank account pm, the bank's notifications about it
// sent to notificationURL: the mandate as core-api records it (pending,
// as a rule), or
// coreapi.ErrMandateDeclined when the bank refuses it at once. The
// account's token is the reference, so asking again answers the same
// mandate. Both ways a mandate is set up go through it: with the stored
// account (mandate.recurring) and with its first debit.
func SetUpMandate(ctx context.Context, conn MandateConnector, cfg Config, psID *string, pm *coreapi.PaymentMethod, notificationURL string) (*coreapi.Mandate, error) {
	holder := ""
	if pm.Bank != nil {
		holder = pm.Bank.AccountHolderName
	}
	res, err := conn.CreateMandate(ctx, MandateRequest{
		MerchantAccountID: pm.MerchantAccountID, PaymentMethodID: pm.ID, Scheme: pm.Scheme,
		Country: pm.Country, Currency: pm.Currency, AccountHolderName: holder, NotificationURL: notificationURL, Config: cfg,
	})
	if err != nil {
		return nil, &coreapi.ConnectorError{Failed: "the bank connector could not set up the mandate; nothing was stored", Err: err}
	}
	if res.Status == coreapi.MandateFailed {
		return nil, coreapi.ErrMandateDeclined
	}
	return &coreapi.Mandate{ID: res.ID, MerchantAccountID: pm.MerchantAccountID, PaymentMethodID: pm.ID,
		Connector: conn.Name(), PaymentServiceID: psID, Scheme: pm.Scheme, Status: res.Status}, nil
}
