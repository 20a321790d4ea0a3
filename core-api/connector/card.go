package connector

import (
	"context"
	"errors"
	"fmt"

	coreapi "github.com/payorch/core-api"
)

// CardAuthorization asks a card connector to authorize a payment with a
// stored card. The card is named by its vault-proxy token: the connector
// writes placeholders that vault-proxy fills in, and never holds the
// number.
type CardAuthorization struct {
	MerchantAccountID string
	PaymentMethodID   string // the vault-proxy token of the card
	// Reference is the idempotency reference (the transaction's id): the
	// same reference sent again is the same authorization, never a second
	// charge, and Lookup finds the authorization by it.
	Reference string
	Amount    int64 // minor units
	Currency  string
	Intent    string // coreapi.IntentAuthorize or coreapi.IntentCapture
	// SecurityCodeHeld says vault-proxy holds a security code for the
	// card that this call may use: vault-proxy gives it once, to an
	// authorization only, and refuses a placeholder for a code it does not
	// hold, so the connector asks for it only when told it is there.
	SecurityCodeHeld bool
	// SecurityCodeFor, on the authorization that resumes a payment after
	// its 3-D Secure challenge, is the transaction's id: the code
	// vault-proxy holds is the one it kept for that challenge
	// (zone.DetokenizeRequest.SecurityCodeFor). Empty otherwise.
	SecurityCodeFor   string
	MerchantInitiated bool
	PaymentSource     string // coreapi.PaymentSource*; "" is ecommerce
	// PreviousSchemeTransactionID is the scheme transaction id of the
	// payment that set up a merchant-initiated series.
	PreviousSchemeTransactionID string
	BillingPostalCode           string // "" when none
	// CartItems are the transaction's cart items, passed on to the
	// processor as to an anti-fraud connector (SPEC: "Items passed to
	// anti-fraud and processor connectors"); nil when it has none.
	CartItems []coreapi.CartItem
	// ThreeDSecure is the buyer's 3-D Secure authentication, passed to
	// the processor with the authorization; nil when there was none.
	ThreeDSecure *ThreeDSecureData
	// NotificationURL is where a processor that answers some
	// authorizations, captures or refunds later sends their results.
	NotificationURL string
	// Options is this connector's entry of the transaction's connection
	// options, checked against its Schemas().ConnectionOptions.
	Options Values
	// Config is the payment service's configuration.
	Config Config
}

// ThreeDSecureData is what a 3-D Secure authentication gives an
// authorization: the protocol version, the authentication's status, the
// CAVV and the ECI.
type ThreeDSecureData struct {
	Version string `json:"version"`
	Status  string `json:"status"`
	CAVV    string `json:"cavv"`
	ECI     string `json:"eci"`
}

// CardOperation asks for a capture, void or refund of an authorization.
type CardOperation struct {
	MerchantAccountID string
	PaymentMethodID   string // every call through vault-proxy names the card
	AuthorizationID   string // the connector's id of the authorization (ConnectorResult.Reference)
	// Amount is the capture's or refund's, in minor units; 0 takes all
	// that is left. A void has none.
	Amount int64
	// Reference is the operation's idempotency reference (the capture's or
	// refund's record id, the transaction's void reference).
	Reference string
	// Config is the configuration of the payment service that authorized
	// the payment.
	Config Config
}

// CardLookup asks what became of the authorization sent with Reference.
type CardLookup struct {
	MerchantAccountID string
	PaymentMethodID   string
	Reference         string
	Config            Config // as CardOperation's
}

// CardState is an authorization as the connector knows it now: the
// authorization's own answer and what was done with it since.
type CardState struct {
	coreapi.ConnectorResult // the authorization's
	Status                  string
	AuthorizedAmount        int64
	CapturedAmount          int64
	RefundedAmount          int64
	Voided                  bool
	Captures, Refunds       []CardStep
}

// CardStep is one capture or refund of an authorization.
type CardStep struct {
	ID        string // the connector's
	Reference string // the idempotency reference it was sent with
	Amount    int64
	// Outcome is where the processor stands on it: "" is succeeded; a
	// processor that settles operations later (by notification) lists
	// them pending until then, and failed after.
	Outcome coreapi.Outcome
}

// Step is the capture or refund sent with reference, if any.
func Step(steps []CardStep, reference string) (CardStep, bool) {
	for _, s := range steps {
		if s.Reference == reference {
			return s, true
		}
	}
	return CardStep{}, false
}

// CardConnector authorizes, captures, voids and refunds card payments.
// Every call is idempotent by its reference.
//
// A call whose outcome is not known (the processor did not answer in
// time, the connection broke after the request was sent) returns an
// error wrapping ErrOutcomeUnknown with a result of OutcomePending: the
// operation stays processing until Lookup (or the same call sent again)
// settles it. Any other error means nothing was done.
type CardConnector interface {
	Connector
	Authorize(ctx context.Context, r CardAuthorization) (coreapi.ConnectorResult, error)
	Capture(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error)
	Void(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error)
	Refund(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error)
	// Lookup finds the authorization sent with r.Reference: ErrNotFound
	// when the processor never recorded one (it may be sent again).
	Lookup(ctx context.Context, r CardLookup) (CardState, error)
}

// ErrOutcomeUnknown is a call that may or may not have taken effect.
var ErrOutcomeUnknown = errors.New("connector: outcome unknown")

// ErrNotFound is a reference the processor has no record of.
var ErrNotFound = errors.New("connector: not found")

// ProcessorError is a processor's refusal that is no outcome of the
// operation (a request it found malformed, an unknown id): a fault of the
// connector or its configuration. It carries the processor's status and
// error code, never the request.
type ProcessorError struct {
	Connector string
	Status    int
	Code      string
}

func (e *ProcessorError) Error() string {
	return fmt.Sprintf("connector %s: processor answered %d %s", e.Connector, e.Status, e.Code)
}

// unknown is the pending result and error of a call without an outcome.
func unknown(name, what string, err error) (coreapi.ConnectorResult, error) {
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, fmt.Errorf("%w: %s %s: %w", ErrOutcomeUnknown, name, what, err)
}
