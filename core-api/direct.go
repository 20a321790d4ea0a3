package coreapi

import "errors"

// Integration clients of a direct (client SDK) integration: where the
// buyer approves the payment in the wallet's SDK.
const (
	IntegrationClientWeb     = "web"
	IntegrationClientIOS     = "ios"
	IntegrationClientAndroid = "android"
)

// IntegrationClients are all the integration clients.
var IntegrationClients = []string{IntegrationClientWeb, IntegrationClientIOS, IntegrationClientAndroid}

// DirectMethods are the methods paid through a direct integration: a
// payment of one needs an integration client, and no other may name one.
var DirectMethods = []string{MethodPayPal}

// DirectSession is what a direct integration's session token is
// exchanged for: what the buyer's client SDK is initialized with.
type DirectSession struct {
	OrderID       string // the processor's order (the transaction's payment_service_transaction_id)
	ClientID      string
	MerchantID    string // "" when the payment service names none
	Currency      string
	Intent        string
	FundingSource string
	// CompletionURL is where the client sends a GET once the buyer has
	// approved: an absolute URL on core-api with a signed, single-use,
	// expiring token bound to the transaction.
	CompletionURL string
	// IntegrationClient is the client the transaction was created for.
	IntegrationClient string
}

// Refusals of a session exchange and of a completion.
var (
	// ErrSessionUnavailable: the session token is wrong, was exchanged
	// already, or the transaction has no session (not a direct
	// integration, or no longer waiting for the buyer).
	ErrSessionUnavailable = errors.New("the session token is not valid for this transaction, or was exchanged already")
	// ErrBuyerApprovalPending: a completion before the buyer decided;
	// nothing changed and the same URL may be used once they have.
	ErrBuyerApprovalPending = errors.New("the buyer has not approved the payment yet")
	// ErrDirectUnavailable: no direct-integration connector is configured
	// for the method in this environment.
	ErrDirectUnavailable = errors.New("no connector for direct integrations is configured")
)

// Codes of a refused completion token (CompletionTokenError.Code).
const (
	CodeCompletionTokenInvalid  = "completion_token_invalid"  // malformed or not signed by core-api
	CodeCompletionTokenMismatch = "completion_token_mismatch" // signed for another transaction
	CodeCompletionTokenExpired  = "completion_token_expired"
	CodeCompletionTokenUsed     = "completion_token_used" // the transaction was completed (or settled) already
)

// CompletionTokenError is a completion token refused; nothing changed.
type CompletionTokenError struct{ Code string }

func (e *CompletionTokenError) Error() string { return "completion token refused: " + e.Code }
