package connector

import (
	"context"
	"time"

	coreapi "github.com/payorch/core-api"
)

// RedirectPayment asks a redirect connector for a push payment the buyer
// approves at the processor (coreapi.RedirectMethods): the processor
// answers the URL to send the buyer to, and sends the buyer back to
// RedirectURL once they decided.
type RedirectPayment struct {
	MerchantAccountID string
	// Reference is the idempotency reference (the transaction's id): the
	// same reference sent again is the same payment, and the processor's
	// notifications and redirects name it.
	Reference   string
	Method      string
	Intent      string // coreapi.IntentAuthorize or coreapi.IntentCapture
	Amount      int64  // minor units
	Currency    string
	RedirectURL string
	// NotificationURL is where the processor sends its notifications
	// about the payment (core-api's inbound endpoint for the merchant
	// account).
	NotificationURL string
	// ExpiresAt is when the reference stops being payable.
	ExpiresAt time.Time
	// CartItems are the transaction's (nil: none), as CardAuthorization's.
	CartItems []coreapi.CartItem
	Config    Config
}

// ApprovalWindows are how long a connector lets a push payment's
// reference be paid: Default when the payment says nothing, Max at most.
type ApprovalWindows struct {
	Default, Max time.Duration
}

// RedirectConnector creates push payments approved by the buyer at the
// processor, reads what became of them, ends the expired ones, captures,
// voids and refunds the approved ones, and reads the processor's
// notifications about them (KindAuthorizationResult, named by the
// payment's reference). Calls are idempotent by the reference; an
// unknown outcome is reported as CardConnector's (ErrOutcomeUnknown).
type RedirectConnector interface {
	NotificationConnector
	// Windows are cfg's approval windows.
	Windows(cfg Config) ApprovalWindows
	// ApprovalOverride is the expiry that the connector's entry of a
	// transaction's connection_options sets (nil: none); options are
	// valid by the connector's schema.
	ApprovalOverride(options Values) *time.Time
	// CreatePayment answers OutcomeApprovalRequired with the payment's id
	// (Reference), its approval URL and expiry, or a decline.
	CreatePayment(ctx context.Context, r RedirectPayment) (coreapi.ConnectorResult, error)
	// LookupPayment is the payment sent with reference, as its
	// notification would tell it: approval_required while the buyer has
	// not decided, succeeded, declined, or failed once expired;
	// ErrNotFound when the processor has no record of it.
	LookupPayment(ctx context.Context, reference string, cfg Config) (coreapi.ConnectorResult, error)
	// CancelPayment ends an undecided payment past its expiry so that it
	// can no longer be approved: OutcomeFailed, or the buyer's decision
	// when they decided meanwhile.
	CancelPayment(ctx context.Context, paymentID string, cfg Config) (coreapi.ConnectorResult, error)
	// Operations capture, void and refund an approved payment (OrderID:
	// its id, the ConnectorResult.Reference of CreatePayment).
	Operations
	// LookupOperations is the approved payment's captures, refunds and
	// void, which settle those whose answer was lost; ErrNotFound for a
	// payment the processor has no record of.
	LookupOperations(ctx context.Context, paymentID string, cfg Config) (DirectState, error)
}

// Redirects returns the named connector if it takes redirect payments.
func (r *Registry) Redirects(name string) (RedirectConnector, error) {
	c, ok := r.byName[name].(RedirectConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
