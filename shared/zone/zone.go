// Package zone is the one contract between the PCI zone (vault-proxy) and
// the core (core-api): the JSON bodies of vault-proxy's internal, mutual-TLS
// listener. Nothing here carries a card number: requests name tokens and
// placeholders, responses carry display data. Golden fixtures in testdata
// pin the wire shape; both sides decode them in their tests.
package zone

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/payorch/shared/logging/panscan"
)

// Internal routes on vault-proxy's mTLS listener, every call core-api
// makes across the zone boundary. The merchant account is the
// accountid.Header of the request (required there), but for the
// reconciliation's list (ReconcileRecordsPath, across accounts) and
// ReadyPath. vault-proxy's call-backs into core-api are at the end.
const (
	CardPath       = "/internal/cards/{token}" // GET metadata, PUT expiry, DELETE (crypto-shred)
	DetokenizePath = "/internal/detokenize"    // POST DetokenizeRequest
	ActorHeader    = "x-zone-actor"            // who in core-api asked (for the audit log)
	PurposeHeader  = "x-zone-purpose"          // why (for the audit log)
	CardPathPrefix = "/internal/cards/"        // CardPath without the parameter
	// SecurityCodeHoldPath is the security code vault-proxy holds for the
	// authorization that would resume transaction_id after its 3-D Secure
	// challenge (SecurityCodeForParam): DELETE forgets it once the
	// challenge ended without one (204, held or not). Fill it with
	// SecurityCodeHold.
	SecurityCodeHoldPath = "/internal/cards/{token}/security-code-holds/{transaction_id}"

	// Reconciliation (core-api's vault reconciliation job): the vaulted
	// records created before a cutoff, of every merchant account, and the
	// shred of one that no payment method holds.
	ReconcileRecordsPath      = "/internal/reconciliation/vaulted-records"         // GET VaultedRecordPage
	ReconcileRecordPath       = "/internal/reconciliation/vaulted-records/{token}" // DELETE (crypto-shred an unclaimed record)
	ReconcileRecordPathPrefix = ReconcileRecordsPath + "/"                         // ReconcileRecordPath without the parameter

	// Merchant accounts (core-api deleting an account, or creating one
	// with a deleted account's id): the account is the path's
	// MerchantAccountPathParam, a question about the account rather than
	// one asked within it (the header names the same account). Fill one
	// with MerchantAccountPath.
	MerchantAccountUsagePath       = "/internal/merchant-accounts/{merchant_account_id}/usage"        // GET MerchantAccountUsage
	MerchantAccountClosePath       = "/internal/merchant-accounts/{merchant_account_id}/close"        // POST MerchantAccountClosureAttempt, answered MerchantAccountClosure
	MerchantAccountCancelClosePath = "/internal/merchant-accounts/{merchant_account_id}/cancel-close" // POST MerchantAccountClosureAttempt, answered 204
	MerchantAccountReopenPath      = "/internal/merchant-accounts/{merchant_account_id}/reopen"       // POST without a body, answered MerchantAccountClosure
	MerchantAccountPathParam       = "merchant_account_id"

	// ReadyPath answers 200 when vault-proxy, its database and Vault are
	// ready: core-api's own readiness asks it.
	ReadyPath = "/readyz"

	// vault-proxy's calls to core-api's public listener, on behalf of the
	// merchant whose request vault-proxy is serving (its Authorization
	// and merchant account header passed on): the payment method a
	// vaulted card, gift card or bank account becomes (a
	// VaultedPaymentMethod, with the token as its id), and, when that
	// call's answer was lost, the read of it by its id.
	PaymentMethodsPath      = "/payment-methods"  // POST VaultedPaymentMethod
	PaymentMethodPathPrefix = "/payment-methods/" // GET PaymentMethodPathPrefix + token
	// TransactionsPath is the payment a card given in full goes on as,
	// with the card's token as its payment method, once the card is
	// vaulted and its payment method created.
	TransactionsPath = "/transactions"
	// SecurityCodeHeldHeader, on that payment, names the token (the
	// payment method's id) whose security code vault-proxy holds for its
	// authorization. vault-proxy sets it and passes no client's on; since
	// core-api's public listener is reachable without vault-proxy, core-api
	// takes it as a hint only and asks vault-proxy over the mutual-TLS
	// listener (CardMetadata.SecurityCodeHeld) before it believes it.
	SecurityCodeHeldHeader = "x-zone-security-code-held"
	// SecurityCodeForParam, a query parameter of GET CardPath, names a
	// transaction waiting on its 3-D Secure challenge:
	// CardMetadata.SecurityCodeHeld then says whether vault-proxy holds
	// the card's security code for the authorization that resumes it.
	SecurityCodeForParam = "security_code_for"
)

// SecurityCodeHold is SecurityCodeHoldPath for the card of token and
// transaction id (each escaped as a path segment).
func SecurityCodeHold(token, id string) string {
	return CardPathPrefix + url.PathEscape(token) + "/security-code-holds/" + url.PathEscape(id)
}

// MerchantAccountPath is path, one of the MerchantAccount*Path routes,
// for the merchant account id (escaped as a path segment).
func MerchantAccountPath(path, id string) string {
	return strings.Replace(path, "{"+MerchantAccountPathParam+"}", url.PathEscape(id), 1)
}

// Query parameters of ReconcileRecordsPath.
const (
	// CreatedBeforeParam (RFC 3339, required) lists records created before
	// it. vault-proxy lists none younger than its own minimum age, whatever
	// is asked.
	CreatedBeforeParam = "created_before"
	// AfterParam (a token, optional) lists records whose token sorts after
	// it: the keyset of the list, which is in token order. The first page
	// has none; the next is VaultedRecordPage.NextAfter.
	AfterParam = "after"
	// LimitParam is the page size, 1 to MaxReconcileLimit (default
	// DefaultReconcileLimit).
	LimitParam = "limit"
	// MerchantAccountParam (optional) lists one merchant account's records
	// only; without it, every account's.
	MerchantAccountParam = "merchant_account_id"

	DefaultReconcileLimit = 100
	MaxReconcileLimit     = 1000
)

// SensitiveFields are request body fields that would carry card or bank
// data. Only vault-proxy's POST /payment-methods for a card, gift card or
// bank account takes them (and replaces them with a token); vault-proxy
// refuses them on every request it passes on to core-api (account_number
// only on the payment method routes: a buyer's is a customer reference),
// and core-api refuses them too, should one reach it another way.
var SensitiveFields = []string{"number", "security_code", "account_number", "iban", "pin"}

// DigitFields are body fields whose values are digits by nature: a phone
// number (E.164, up to 15 digits) and a card network's transaction id
// (Visa's has 15 digits). One in ten such values passes the Luhn check, so
// they are not held to logging/panscan's definition of a card number
// (12-19 digits passing Luhn, grouped or not), as every other string value
// and every key is: a value of theirs is refused only when its digits are
// a card number of a known scheme, IIN range and length included
// (package cardscheme). Measured on a million seeded random values each
// (TestDigitFieldsFalsePositiveRate), that refuses 0.58% of 15-digit
// transaction ids and 0.25% of E.164 phone numbers (1.2% of the 13-digit
// ones: Visa's legacy length), against 10% for the Luhn check alone.
var DigitFields = []string{"phone_number", "scheme_transaction_id", "previous_scheme_transaction_id"}

// HoldsCardNumber reports whether value, a string in a request body bound
// for core-api, holds a card number: vault-proxy and core-api both refuse
// it with 400 value_error.card_data, so that no card number is stored
// outside the vault, whatever field a client puts it in. key is the name
// of the member whose value it is ("" for an array element or the body
// itself): DigitFields are held to the narrower test, and only for a
// string directly under them, since an object or array there is not a
// phone number.
func HoldsCardNumber(key, value string) bool {
	if slices.Contains(DigitFields, key) {
		return panscan.ContainsSchemePAN(value)
	}
	return panscan.Contains(value)
}

// CardMetadata is what core-api may know about a vaulted card. core-api
// builds its payment method record from this, fetched from vault-proxy,
// rather than trusting display data a client sends it.
type CardMetadata struct {
	Type              string `json:"type"` // "card-metadata"
	ID                string `json:"id"`   // the token = payment method id
	MerchantAccountID string `json:"merchant_account_id"`
	Kind              string `json:"kind"` // card | gift-card | bank-account
	Scheme            string `json:"scheme"`
	Label             string `json:"label"` // last 4
	BIN               string `json:"bin"`   // first 6 or 8
	CardType          string `json:"card_type,omitempty"`
	ExpirationDate    string `json:"expiration_date,omitempty"` // MM/YY
	Fingerprint       string `json:"fingerprint"`
	CreatedAt         string `json:"created_at"`
	// SecurityCodeHeld says vault-proxy holds the card's security code
	// (for one authorization, at most 15 minutes); never the code.
	SecurityCodeHeld bool `json:"security_code_held,omitempty"`
}

// ExpiryUpdate changes a vaulted card's expiry (PUT CardPath).
type ExpiryUpdate struct {
	ExpirationDate string `json:"expiration_date"`
}

// DetokenizeRequest asks vault-proxy to send a request on core-api's behalf
// with placeholders such as {{ CARD_NUMBER_1 }} filled from the tokens.
// Destination names a connector configured in vault-proxy; core-api never
// supplies a raw host to send card data to.
type DetokenizeRequest struct {
	Destination   string            `json:"destination"` // connector name, e.g. "mock-card"
	Method        string            `json:"method"`
	Path          string            `json:"path"` // appended to the destination's base URL
	Headers       map[string]string `json:"headers,omitempty"`
	Body          string            `json:"body"`
	PaymentMethod []string          `json:"payment_methods"` // tokens; placeholder index X is 1-based into this list
	Purpose       string            `json:"purpose"`         // e.g. "authorization"
	TimeoutMillis int               `json:"timeout_ms,omitempty"`
	// SecurityCodeFor, on an authorization that resumes a transaction
	// after its 3-D Secure challenge, is the transaction's id: the
	// security code placeholder takes the code vault-proxy holds for that
	// challenge (CardMetadata.SecurityCodeHeld asked with
	// SecurityCodeForParam says whether there is one).
	SecurityCodeFor string `json:"security_code_for,omitempty"`
}

// DetokenizeResponse is the destination's answer, passed back with every
// card number in its headers and body masked (vault-proxy/panmask):
// core-api is outside the PCI zone.
type DetokenizeResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body,omitempty"` // when the destination answered JSON
	Text    string            `json:"text,omitempty"` // otherwise
}

// MerchantAccountUsage is vault-proxy's answer to GET
// /internal/merchant-accounts/{id}/usage, which core-api asks before it
// deletes an account: every kind of record the vault can hold for the
// account, with its count (zero included), sorted by resource. A resource
// core-api does not know still blocks the deletion, so a new kind needs no
// change there.
type MerchantAccountUsage struct {
	Type              string        `json:"type"` // "merchant-account-usage"
	MerchantAccountID string        `json:"merchant_account_id"`
	Records           []UsageRecord `json:"records"`
}

// MerchantAccountClosureAttempt is the body of POST
// /internal/merchant-accounts/{id}/close and .../cancel-close: the id
// (a UUID) of core-api's deletion attempt, which fences a cancellation to
// its own attempt's closure.
type MerchantAccountClosureAttempt struct {
	AttemptID string `json:"attempt_id"`
}

// MerchantAccountClosure is vault-proxy's answer to POST
// /internal/merchant-accounts/{id}/close, which core-api sends inside the
// transaction that deletes an account, and to .../reopen, which it sends
// inside the one that creates an account with a deleted account's id.
// Closed is, for a close, whether this attempt closed the id (only when
// the vault holds nothing under it and the attempt was not cancelled
// first), and for a reopen, whether the id is still closed (a reopen
// refuses while the vault holds anything under the id, closed or not). A closed id takes no new payment method or vault-forward config (the
// other holdings belong to one of those). Records is the count either way,
// as in MerchantAccountUsage. /cancel-close undoes one attempt's closure,
// whose deletion failed.
type MerchantAccountClosure struct {
	Type              string        `json:"type"` // "merchant-account-closure"
	MerchantAccountID string        `json:"merchant_account_id"`
	Closed            bool          `json:"closed"`
	Records           []UsageRecord `json:"records"`
}

// UsageRecord is one kind of record and how many the account has.
type UsageRecord struct {
	Resource string `json:"resource"`
	Count    int64  `json:"count"`
}

// VaultedPaymentMethod is the body of vault-proxy's POST
// PaymentMethodsPath to core-api: the payment method a card, gift card or
// bank account vaulted by vault-proxy becomes, with the token as its id
// and without the number. A field the merchant did not send is left out.
// For a bank account the details are those the vault validated and
// normalised (tokenizer/bank), and Mandate is the merchant's, as
// vault-proxy checked it.
type VaultedPaymentMethod struct {
	Method                  string  `json:"method"` // card | gift-card | bank
	ID                      string  `json:"id"`     // the token
	BuyerID                 *string `json:"buyer_id,omitempty"`
	BuyerExternalIdentifier *string `json:"buyer_external_identifier,omitempty"`
	ExternalIdentifier      *string `json:"external_identifier,omitempty"`
	// Stored false: the card was given with a payment and is kept for
	// that payment only until the payment says to store it (core-api's
	// "store"). Absent: stored, as every payment method POST
	// /payment-methods creates.
	Stored *bool `json:"stored,omitempty"`

	// Bank accounts only.
	Scheme            *string  `json:"scheme,omitempty"`
	Country           *string  `json:"country,omitempty"`
	Currency          *string  `json:"currency,omitempty"`
	AccountHolderName *string  `json:"account_holder_name,omitempty"`
	AccountType       *string  `json:"account_type,omitempty"`
	RoutingNumber     *string  `json:"routing_number,omitempty"`
	SortCode          *string  `json:"sort_code,omitempty"`
	BIC               *string  `json:"bic,omitempty"`
	Mandate           *Mandate `json:"mandate,omitempty"`
}

// Mandate asks core-api for a debit mandate with a bank account.
type Mandate struct {
	Recurring bool `json:"recurring"`
}

// VaultedRecordPage is one page of vault-proxy's answer to GET
// ReconcileRecordsPath: what the vault holds per token (cards, gift cards,
// bank accounts), without any of its contents.
type VaultedRecordPage struct {
	Type  string          `json:"type"` // "vaulted-record-page"
	Items []VaultedRecord `json:"items"`
	// NextAfter is the AfterParam of the next page, null on the last.
	NextAfter *string `json:"next_after"`
}

// VaultedRecord names one vaulted record: the token (the payment method id
// in core-api), its merchant account, its kind and when it was vaulted.
type VaultedRecord struct {
	Type              string `json:"type"` // "vaulted-record"
	ID                string `json:"id"`
	MerchantAccountID string `json:"merchant_account_id"`
	Kind              string `json:"kind"` // card | gift-card | bank-account
	CreatedAt         string `json:"created_at"`
}
