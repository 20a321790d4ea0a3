package coreapi

import "errors"

// ErrNotFound is wrapped by stores when a record does not exist in the
// merchant account asked about (whether or not it exists in another).
var ErrNotFound = errors.New("not found")

// ErrInUse is returned when a record cannot be deleted while others refer
// to it (a merchant account that still has buyers).
var ErrInUse = errors.New("in use")

// ErrConflict is returned when a record kept changing under an update that
// must see it unchanged (409 concurrent_request; the client retries).
var ErrConflict = errors.New("changed concurrently")

// ErrBuyerNotFound is returned when a record names a buyer that is not (or
// no longer) in the merchant account, e.g. one deleted while a payment
// method for it was being created.
var ErrBuyerNotFound = errors.New("buyer not found")

// ErrTokenGivenUp is a payment method's creation with a token the vault
// reconciliation gave up: no payment method held it a grace period after
// it was vaulted, and its vaulted record is shredded (or about to be).
var ErrTokenGivenUp = errors.New("token given up by the vault reconciliation")

// DuplicateError is a unique rule broken by a create or update; ExistingID
// names the record that holds the value.
type DuplicateError struct {
	Resource   string // "buyer", "merchant account"
	Field      string // "external_identifier", "id"
	ExistingID string
}

func (e *DuplicateError) Error() string {
	return "a " + e.Resource + " with this " + e.Field + " already exists"
}

// ErrMerchantAccountNotFound is a record written in a merchant account that
// no longer exists: it was deleted after the request was authorized (which
// remembers existing accounts for a while, httpapi.Auth).
var ErrMerchantAccountNotFound = errors.New("merchant account not found")

// Names of the core records that keep a merchant account in use, as
// MerchantAccountInUseError reports them.
const (
	UsageBuyers         = "buyers"
	UsagePaymentMethods = "payment-methods"
	UsageMandates       = "mandates" // pending or active: a revoked or failed one is history
	UsageTransactions   = "transactions"
	// Sandbox 3-D Secure scenarios with a card condition: the vaulted
	// record of each is shredded only when the scenario is deleted.
	UsageThreeDSCardScenarios = "three-ds-scenarios"
)

// RecordCount is how many records of one kind still refer to a merchant
// account.
type RecordCount struct {
	Resource string
	Count    int64
}

// MerchantAccountInUseError is ErrInUse for a merchant account that
// core-api's records still refer to. Core names them; it is empty when
// only the database's foreign keys knew (a kind of record the count does
// not cover). VaultProxy names what vault-proxy holds under the id as
// well, so that one answer names all that keeps the account; it is empty
// when vault-proxy could not say.
type MerchantAccountInUseError struct {
	Core       []RecordCount
	VaultProxy []RecordCount
}

func (e *MerchantAccountInUseError) Error() string { return "merchant account: " + ErrInUse.Error() }

func (e *MerchantAccountInUseError) Unwrap() error { return ErrInUse }

// VaultProxyInUseError is vault-proxy's refusal to close a merchant
// account's id, or to reopen a deleted one's, while it holds records under
// it; Records names them.
type VaultProxyInUseError struct {
	Records []RecordCount
}

func (e *VaultProxyInUseError) Error() string { return "merchant account: in use in vault-proxy" }

func (e *VaultProxyInUseError) Unwrap() error { return ErrInUse }

// VaultProxyExpiryError is an expiry update that failed after it may have
// reached vault-proxy, and whose copy there could not then be set back to
// the row's: the two may differ until the card's next expiry update, which
// writes both. It unwraps to the update's own failure, which is what the
// client is told; Restore is for the operator.
type VaultProxyExpiryError struct {
	PaymentMethodID string
	Err             error // the update's failure
	Restore         error // why vault-proxy's copy could not be set back
}

func (e *VaultProxyExpiryError) Error() string {
	return "payment method " + e.PaymentMethodID + ": " + e.Err.Error() +
		"; setting the vault's expiry back to core's failed: " + e.Restore.Error()
}

func (e *VaultProxyExpiryError) Unwrap() error { return e.Err }

// Answers of vault-proxy that the services act on, as its client's errors
// match them (errors.Is). Any other failure of a call to vault-proxy (no
// answer, a timeout, a server error) may or may not have done the call's
// work.
var (
	// ErrVaultProxyNotFound: vault-proxy has no such token in the merchant
	// account, or (an older vault-proxy) no such route.
	ErrVaultProxyNotFound = errors.New("vault-proxy: not found")
	// ErrVaultProxyRefused: vault-proxy refused the call in its error
	// envelope (another 4xx), and stands by it: the call did nothing.
	ErrVaultProxyRefused = errors.New("vault-proxy: refused")
	// ErrVaultedRecordTooYoung: vault-proxy refused to shred a record
	// younger than its own minimum age (by its database's clock).
	ErrVaultedRecordTooYoung = errors.New("vault-proxy: the vaulted record is younger than its minimum age")
)

// VaultProxyError is a call to vault-proxy that failed. Err is its
// client's error: vault-proxy's refusal in its envelope (safe to pass on:
// it never carries card data), a status it answered, no connection, or a
// timeout. Unanswered, when set, says what the request could not do if
// vault-proxy does not know the call (ErrVaultProxyNotFound from an older
// vault-proxy): "could not reopen the id of a deleted account; nothing was
// created".
type VaultProxyError struct {
	Err        error
	Unanswered string
}

func (e *VaultProxyError) Error() string { return "calling vault-proxy: " + e.Err.Error() }

func (e *VaultProxyError) Unwrap() error { return e.Err }

// ConnectorError is a call to a processor's connector that failed; Failed
// says what that means for the request: "the mandate could not be revoked;
// nothing was deleted".
type ConnectorError struct {
	Failed string
	Err    error
}

func (e *ConnectorError) Error() string { return e.Failed + ": " + e.Err.Error() }

func (e *ConnectorError) Unwrap() error { return e.Err }

// The ways a recurring bank mandate is not set up: no connector for bank
// mandates in this environment (production has no processor connections
// yet), or the bank declined it.
var (
	ErrMandatesUnavailable = errors.New("no connector for bank mandates is configured")
	ErrMandateDeclined     = errors.New("the bank declined the mandate")
)

// ErrCardPaymentsUnavailable is a card operation on a payment that no
// payment service processed (the built-in sandbox configuration) where
// the environment has no built-in card connector (production).
var ErrCardPaymentsUnavailable = errors.New("no card connector is configured")

// ErrNotACardPayment is a capture, void or refund (or a sync) asked of a
// transaction paid neither by a stored card, through a direct
// integration nor by a redirect, whose connectors alone take them.
var ErrNotACardPayment = errors.New("the transaction is not a card payment")

// TransitionError is an operation the transaction state machine refuses
// in the transaction's status or with its amounts (transitions.go).
// Nothing was changed. InFlight says whether operations in flight on the
// transaction (an authorization, a void, captures or refunds the connector
// has not settled) may still change the answer: a retry once they settle
// may go through (409 concurrent_request); otherwise the refusal is a
// business rule and final (422, with Code).
type TransitionError struct {
	Code      string // stable: CodeTransactionNotCapturable, CodeCaptureExceedsAuthorized, ...
	Operation TransactionOperation
	Status    TransactionStatus // the transaction's, when refused
	InFlight  bool
}

func (e *TransitionError) Error() string {
	return "transaction " + string(e.Status) + ": " + string(e.Operation) + " refused: " + e.Code
}

// Inbound notifications' refusals (docs/notifications.md).
var (
	// ErrNotificationSignature: the signature is missing, wrong or too
	// old. Nothing is recorded.
	ErrNotificationSignature = errors.New("the notification's signature does not verify")
	// ErrNotificationMalformed: a verified notification the connector
	// cannot read.
	ErrNotificationMalformed = errors.New("the notification cannot be read")
	// ErrNotificationConnector: no connector of that name takes
	// notifications in this environment.
	ErrNotificationConnector = errors.New("no connector of this name takes notifications")
	// ErrNotificationEarly: the notification is about a transaction whose
	// creation has not recorded the connector's answer yet; the processor
	// is asked to send it again.
	ErrNotificationEarly = errors.New("the transaction's creation is still in progress")
)
