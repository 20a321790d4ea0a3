package connector

import (
	"context"
	"errors"

	coreapi "github.com/payorch/core-api"
)

// DirectOrder asks a direct (client SDK) connector to open an order the
// buyer approves in the wallet's SDK.
type DirectOrder struct {
	MerchantAccountID string
	// Reference is the idempotency reference (the transaction's id): the
	// same reference sent again is the same order.
	Reference string
	Amount    int64 // minor units
	Currency  string
	Intent    string // coreapi.IntentAuthorize or coreapi.IntentCapture
	// CartItems are the transaction's (nil: none), as CardAuthorization's.
	CartItems []coreapi.CartItem
	Config    Config
}

// DirectCompletion asks for the capture or authorization (by Intent) of
// an order the buyer approved, or for what became of it (LookupOrder).
type DirectCompletion struct {
	MerchantAccountID string
	OrderID           string // the connector's id of the order (ConnectorResult.Reference of CreateOrder)
	Reference         string // the transaction's id: the same completion sent again is the same one
	Intent            string
	Config            Config
}

// DirectOperation asks for a capture, void or refund of a payment the
// processor holds under its own id: a completed direct order's, or an
// approved redirect payment's.
type DirectOperation struct {
	MerchantAccountID string
	OrderID           string // the processor's id of the order or payment
	// Amount is the capture's or refund's, in minor units; a void has
	// none.
	Amount   int64
	Currency string
	// Reference is the operation's idempotency reference (the capture's
	// or refund's record id, the transaction's void reference).
	Reference string
	Config    Config
}

// DirectClient is what the buyer's client SDK is initialized with,
// besides the order: the wallet's public identifiers of the merchant.
type DirectClient struct {
	ClientID      string
	MerchantID    string // "" when the configuration names none
	FundingSource string // the wallet's name for how the buyer pays (paypal)
}

// DirectState is what a completed order's (or an approved redirect
// payment's) payment holds: its captures and refunds, each with the
// request id (reference) it was made with, and whether its authorization
// is voided.
type DirectState struct {
	Captures, Refunds []CardStep
	Voided            bool
}

// ErrNotApproved is a completion of an order the buyer has not decided
// on yet: nothing was done, and it may be asked again once they have.
var ErrNotApproved = errors.New("connector: the buyer has not approved the order yet")

// DirectConnector opens, completes and looks up the orders of a direct
// integration. Every call is idempotent by its reference; a call whose
// outcome is not known is as CardConnector's (ErrOutcomeUnknown with a
// pending result).
type DirectConnector interface {
	Connector
	// CreateOrder opens the order: OutcomeApprovalRequired with the
	// order's id as Reference and the buyer's approval URL, or a failure.
	CreateOrder(ctx context.Context, r DirectOrder) (coreapi.ConnectorResult, error)
	// Client is what the SDK needs of configuration c.
	Client(c Config) DirectClient
	// Complete captures (intent capture) or authorizes the approved
	// order: succeeded, or declined when the buyer declined;
	// ErrNotApproved while the buyer has not decided.
	Complete(ctx context.Context, r DirectCompletion) (coreapi.ConnectorResult, error)
	// LookupOrder is the order's outcome as Complete would answer it,
	// without completing it: approval_required while the buyer has not
	// decided or the order is approved but not completed, succeeded once
	// completed, declined when the buyer declined; ErrNotFound for an
	// order the processor has no record of.
	LookupOrder(ctx context.Context, r DirectCompletion) (coreapi.ConnectorResult, error)
	// LookupOperations is the completed order's captures, refunds and
	// void, which settle those whose answer was lost; ErrNotFound for an
	// order the processor has no record of.
	LookupOperations(ctx context.Context, r DirectCompletion) (DirectState, error)
	// The order's captures, void and refunds (OrderID: the order's id).
	Operations
}

// Directs returns the named connector if it handles direct integrations.
func (r *Registry) Directs(name string) (DirectConnector, error) {
	c, ok := r.byName[name].(DirectConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
