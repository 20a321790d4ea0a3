package coreapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/pgtext"
)

// Intents of a transaction.
const (
	IntentAuthorize = "authorize" // authorize now, capture later (the default)
	IntentCapture   = "capture"   // authorize and capture at once
)

// Payment sources: how the payment came about.
const (
	PaymentSourceECommerce   = "ecommerce" // the default
	PaymentSourceMOTO        = "moto"
	PaymentSourceRecurring   = "recurring"
	PaymentSourceInstallment = "installment"
	PaymentSourceCardOnFile  = "card_on_file"
)

var paymentSources = []string{PaymentSourceECommerce, PaymentSourceMOTO, PaymentSourceRecurring, PaymentSourceInstallment, PaymentSourceCardOnFile}

// Transaction is a payment: its state (status and amounts, which only the
// state machine changes, transitions.go) and what it was created with and
// the connector answered. It never holds card data: the payment method is
// a token and display data.
type Transaction struct {
	ID                string // UUID; also the reference the authorization is sent to the connector with
	MerchantAccountID string
	TransactionState
	Intent        string // IntentAuthorize, IntentCapture
	Currency      string // ISO 4217
	Country       *string
	PaymentMethod TransactionPaymentMethod
	BuyerID       *string
	// BuyerExternalIdentifier is the buyer's, read with the record (nil
	// once the buyer is deleted; BuyerID stays).
	BuyerExternalIdentifier *string
	// PaymentServiceID names the connector configuration that processes
	// the transaction; nil: the sandbox's built-in one. PaymentService is
	// its summary, read with the record.
	PaymentServiceID *string
	PaymentService   *PaymentServiceSummary
	// PaymentServiceTransactionID is the connector's id of the
	// authorization: how its later answers and notifications find the
	// transaction.
	PaymentServiceTransactionID *string
	// VoidReference is the idempotency reference of the latest void sent
	// to the connector, a new one per attempt (a declined void may be
	// asked again); its answer must name it.
	VoidReference *string
	// The authorization's answer.
	ErrorCode              *string
	RawResponseCode        *string
	RawResponseDescription *string
	AVSResponseCode        *string
	CVVResponseCode        *string
	SchemeTransactionID    *string
	// QRCode is the payload an instant bank transfer is paid with (the
	// buyer's banking app reads it), and ApprovalExpiresAt when it stops
	// being payable: after it, the payment fails (OpSaleExpired).
	QRCode            *string
	ApprovalExpiresAt *time.Time
	// Store: the approved authorization stores the payment method and
	// records its scheme transaction id on it (NewTransaction.Store).
	Store bool
	// SessionToken is a direct integration's session token, given once:
	// in the answer that created the transaction; never stored (its
	// digest is).
	SessionToken *string
	// ThreeDSecure is the 3-D Secure authentication's summary; nil when
	// the payment asked for none.
	ThreeDSecure *ThreeDSecure
	// AntiFraudDecision is the anti-fraud screening's decision
	// (AntiFraudAccept, ...); nil when no anti-fraud service screened the
	// payment.
	AntiFraudDecision *string
	TransactionDetails

	CreatedAt    time.Time
	UpdatedAt    time.Time
	AuthorizedAt *time.Time
	CapturedAt   *time.Time // the first successful capture's
	VoidedAt     *time.Time
}

// TransactionPaymentMethod is the summary of how the transaction pays,
// copied at creation: it outlives a stored payment method's deletion.
type TransactionPaymentMethod struct {
	ID          *string // the stored payment method's token, if one was used
	Method      string  // card, gift-card, bank, or a method without a stored one (a redirect)
	Scheme      *string
	Label       *string
	ApprovalURL *string // where the buyer approves (buyer_approval_pending)
}

// CartItem is one line of what is bought, passed on to connectors. It is
// stored as given.
type CartItem struct {
	Name              string   `json:"name"`
	Quantity          int64    `json:"quantity"`
	UnitAmount        int64    `json:"unit_amount"`
	DiscountAmount    *int64   `json:"discount_amount,omitempty"`
	TaxAmount         *int64   `json:"tax_amount,omitempty"`
	ExternalProductID *string  `json:"external_product_id,omitempty"`
	SKU               *string  `json:"sku,omitempty"`
	ProductURL        *string  `json:"product_url,omitempty"`
	ImageURL          *string  `json:"image_url,omitempty"`
	Categories        []string `json:"categories,omitempty"`
	ProductType       *string  `json:"product_type,omitempty"`
	SellerCountry     *string  `json:"seller_country,omitempty"`
}

var productTypes = []string{"physical", "discount", "shipping_fee", "sales_tax", "digital", "gift_card", "store_credit", "surcharge"}

// OperationStatus is a capture's or a refund's status.
type OperationStatus string

// The statuses of a capture or refund: processing from its request until
// the connector settles it.
const (
	OperationProcessing OperationStatus = "processing"
	OperationSucceeded  OperationStatus = "succeeded"
	OperationDeclined   OperationStatus = "declined"
	OperationFailed     OperationStatus = "failed"
)

// OperationRecord is a capture or a refund: a request whose amount is
// reserved on its transaction (TransactionState) from the moment it is
// recorded, processing, until the connector's answer settles it. Its ID is
// the idempotency reference sent to the connector, so a request sent again
// after a crash is the same request.
type OperationRecord struct {
	ID                string
	MerchantAccountID string
	TransactionID     string
	Amount            int64
	Status            OperationStatus
	// PaymentServiceReference is the connector's id of the operation.
	PaymentServiceReference *string
	ErrorCode               *string
	RawResponseCode         *string
	RawResponseDescription  *string
	CreatedAt               time.Time
	UpdatedAt               time.Time
}

// Capture is one capture of a transaction. Captures are not a resource of
// their own on the wire: the transaction's amounts show them.
type Capture struct {
	OperationRecord
}

// Refund is one refund of a transaction.
type Refund struct {
	OperationRecord
	Currency           string // the transaction's
	Reason             *string
	ExternalIdentifier *string
}

// TransactionEvent records one change of a transaction: its creation or
// one operation of the state machine. It holds no card data; a
// connector's text is stored with card numbers masked.
type TransactionEvent struct {
	ID                     string
	MerchantAccountID      string
	TransactionID          string
	Name                   string            // EventTransactionCreated or a TransactionOperation
	StatusBefore           TransactionStatus // "" for the creation
	StatusAfter            TransactionStatus
	Amount                 int64   // the operation's: the capture's, the refund's, the authorized amount
	CaptureID              *string // the capture it is about
	RefundID               *string // the refund it is about
	RawResponseCode        *string
	RawResponseDescription *string
	// Notification is the processor's notification the event records,
	// as received; nil for an event of core-api's own calls.
	Notification *Notification
	CreatedAt    time.Time
}

// EventNotificationReceived names the event of a processor's
// notification that the state machine had nothing to apply for (the
// transaction already stood where it said): recorded, status unchanged.
const EventNotificationReceived = "notification-received"

// Notification is a processor's notification as received: its id (the
// processor's, the same on each of its retries), its headers less any
// that carry a secret, and its body, storable text.
type Notification struct {
	ID        string
	Connector string
	Headers   map[string][]string
	Body      string
}

// Outcome is a connector's answer about an operation.
type Outcome string

// The outcomes.
const (
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomePending: accepted but not decided, or no answer: the
	// operation stays in flight until a later answer (a notification, a
	// status query) settles it.
	OutcomePending  Outcome = "pending"
	OutcomeDeclined Outcome = "declined"
	OutcomeFailed   Outcome = "failed"
	// OutcomeApprovalRequired: an authorization waits for the buyer
	// (ConnectorResult.ApprovalURL).
	OutcomeApprovalRequired Outcome = "approval_required"
	// OutcomeCapturePending: an authorization of intent capture whose
	// capture settles later (an instant bank transfer).
	OutcomeCapturePending Outcome = "capture_pending"
)

// ConnectorResult is what a connector answered about an operation. Its
// text is the processor's, stored with card numbers masked (storable).
type ConnectorResult struct {
	Outcome                Outcome
	Reference              string // the connector's id of what it did; "" when none
	ErrorCode              string
	RawResponseCode        string
	RawResponseDescription string
	// An authorization's only.
	AVSResponseCode     string
	CVVResponseCode     string
	SchemeTransactionID string
	ApprovalURL         string
	// An instant bank transfer's: what the buyer pays with, and until
	// when.
	QRCode    string
	ExpiresAt time.Time
}

// The operations each outcome is, by what was asked (tables, as the state
// machine).
var (
	authorizationOutcomes = map[string]map[Outcome]TransactionOperation{
		IntentAuthorize: {
			OutcomeSucceeded: OpAuthorizationSucceeded, OutcomePending: OpAuthorizationPending,
			OutcomeDeclined: OpAuthorizationDeclined, OutcomeFailed: OpAuthorizationFailed,
			OutcomeApprovalRequired: OpApprovalRequested,
		},
		IntentCapture: {
			OutcomeSucceeded: OpSaleSucceeded, OutcomeCapturePending: OpSalePending, OutcomePending: OpAuthorizationPending,
			OutcomeDeclined: OpAuthorizationDeclined, OutcomeFailed: OpAuthorizationFailed,
			OutcomeApprovalRequired: OpApprovalRequested,
		},
	}
	captureOutcomes = map[Outcome]TransactionOperation{
		OutcomeSucceeded: OpCaptureSucceeded, OutcomePending: OpCapturePending, OutcomeDeclined: OpCaptureDeclined, OutcomeFailed: OpCaptureFailed,
	}
	voidOutcomes = map[Outcome]TransactionOperation{
		OutcomeSucceeded: OpVoidSucceeded, OutcomePending: OpVoidPending, OutcomeDeclined: OpVoidDeclined, OutcomeFailed: OpVoidFailed,
	}
	refundOutcomes = map[Outcome]TransactionOperation{
		OutcomeSucceeded: OpRefundSucceeded, OutcomePending: OpRefundPending, OutcomeDeclined: OpRefundDeclined, OutcomeFailed: OpRefundFailed,
	}
	// operationStatuses is a capture's or refund's status after each
	// outcome.
	operationStatuses = map[Outcome]OperationStatus{
		OutcomeSucceeded: OperationSucceeded, OutcomePending: OperationProcessing, OutcomeCapturePending: OperationProcessing,
		OutcomeDeclined: OperationDeclined, OutcomeFailed: OperationFailed,
	}
)

// OutcomeError is a connector's outcome that means nothing for what was
// asked (a capture "approval_required"): a fault of the connector.
type OutcomeError struct {
	Asked   string // "authorization", "capture", "void", "refund"
	Outcome Outcome
}

func (e *OutcomeError) Error() string {
	return "connector: outcome " + strconv.Quote(string(e.Outcome)) + " of a " + e.Asked
}

func outcomeOp(asked string, table map[Outcome]TransactionOperation, o Outcome) (TransactionOperation, error) {
	op, ok := table[o]
	if !ok {
		return "", &OutcomeError{Asked: asked, Outcome: o}
	}
	return op, nil
}

// AuthorizationOperation is the operation an authorization's outcome is,
// by the transaction's intent.
func (t *Transaction) AuthorizationOperation(o Outcome) (TransactionOperation, error) {
	return outcomeOp("authorization", authorizationOutcomes[t.Intent], o)
}

// CaptureOperation is the operation a capture's outcome is.
func CaptureOperation(o Outcome) (TransactionOperation, error) {
	return outcomeOp("capture", captureOutcomes, o)
}

// VoidOperation is the operation a void's outcome is.
func VoidOperation(o Outcome) (TransactionOperation, error) {
	return outcomeOp("void", voidOutcomes, o)
}

// RefundOperation is the operation a refund's outcome is.
func RefundOperation(o Outcome) (TransactionOperation, error) {
	return outcomeOp("refund", refundOutcomes, o)
}

// Step is one operation applied to a transaction (Transaction.Advance).
type Step struct {
	Operation TransactionOperation
	Amount    int64            // a capture's or refund's; an authorization moves the transaction's Amount
	Result    *ConnectorResult // the connector's answer; nil for a request
	CaptureID string           // the capture or refund it is about, for the event
	RefundID  string
	// ThreeDSecure and AntiFraudDecision, when set, are the
	// transaction's 3-D Secure summary and anti-fraud decision after the
	// step.
	ThreeDSecure      *ThreeDSecure
	AntiFraudDecision string
}

// Advance applies step to the transaction at now (the database's clock,
// read once the transaction's row is locked, so that the events of one
// transaction are in the order they happened): the record after it and
// the event that records it. A refusal is a *TransitionError.
func (t *Transaction) Advance(step Step, now time.Time) (*Transaction, *TransactionEvent, error) {
	st, err := t.TransactionState.Apply(step.Operation, step.Amount)
	if err != nil {
		return nil, nil, err
	}
	tr := transitions[step.Operation]
	next := *t
	next.TransactionState = st
	next.UpdatedAt = now
	if tr.authorized != 0 {
		next.AuthorizedAt = &now
	}
	if tr.captured != 0 && t.CapturedAt == nil {
		next.CapturedAt = &now
	}
	if st.Status == TransactionAuthorizationVoided {
		next.VoidedAt = &now
	}
	if step.ThreeDSecure != nil {
		next.ThreeDSecure = step.ThreeDSecure
	}
	if step.AntiFraudDecision != "" {
		d := step.AntiFraudDecision
		next.AntiFraudDecision = &d
	}
	ev := &TransactionEvent{
		MerchantAccountID: t.MerchantAccountID, TransactionID: t.ID, Name: string(step.Operation),
		StatusBefore: t.Status, StatusAfter: st.Status, Amount: step.Amount,
		CaptureID: optional(step.CaptureID), RefundID: optional(step.RefundID), CreatedAt: now,
	}
	if tr.amount == fullAmount {
		ev.Amount = t.Amount
	}
	if r := step.Result; r != nil {
		ev.RawResponseCode, ev.RawResponseDescription = storableText(r.RawResponseCode), storableText(r.RawResponseDescription)
		// The authorization's answer is the transaction's own.
		if slices.Contains(authorizing, t.Status) {
			next.ErrorCode, next.RawResponseCode, next.RawResponseDescription = storableText(r.ErrorCode), ev.RawResponseCode, ev.RawResponseDescription
			next.AVSResponseCode, next.CVVResponseCode = storableText(r.AVSResponseCode), storableText(r.CVVResponseCode)
			next.SchemeTransactionID = storableReference(r.SchemeTransactionID, MaxTextLen)
			if ref := storableReference(r.Reference, MaxTextLen); ref != nil {
				next.PaymentServiceTransactionID = ref
			}
			if url := storableReference(r.ApprovalURL, maxURLLen); url != nil {
				next.PaymentMethod.ApprovalURL = url
			}
			if qr := storableReference(r.QRCode, maxURLLen); qr != nil {
				next.QRCode = qr
			}
			if !r.ExpiresAt.IsZero() {
				at := r.ExpiresAt.UTC()
				next.ApprovalExpiresAt = &at
			}
		}
	}
	return &next, ev, nil
}

// Settle records the connector's answer on a capture or refund at now.
func (o *OperationRecord) Settle(r *ConnectorResult, now time.Time) {
	o.Status = operationStatuses[r.Outcome]
	if ref := storableReference(r.Reference, MaxTextLen); ref != nil {
		o.PaymentServiceReference = ref
	}
	o.ErrorCode, o.RawResponseCode, o.RawResponseDescription = storableText(r.ErrorCode), storableText(r.RawResponseCode), storableText(r.RawResponseDescription)
	o.UpdatedAt = now
}

// SettledAs reports whether the record was already settled with outcome
// o: an answer given twice (the connector's reply and its notification),
// which changes nothing the second time.
func (o *OperationRecord) SettledAs(out Outcome) bool {
	return o.Status != OperationProcessing && o.Status == operationStatuses[out]
}

// Bounds of a connector's text as stored, in characters.
const (
	maxConnectorText = 1000
	maxURLLen        = 2048
)

// storableText is a connector's free text as core-api stores it: card
// numbers masked (a processor may echo one back), what PostgreSQL's text
// cannot hold replaced, at most maxConnectorText characters; nil for "".
func storableText(s string) *string {
	if s == "" {
		return nil
	}
	s = string(pgtext.AppendStorable(nil, panscan.Redact(s)))
	if utf8.RuneCountInString(s) > maxConnectorText {
		s = string([]rune(s)[:maxConnectorText])
	}
	return &s
}

// storableReference is an identifier or URL a connector gave, which is
// used later as it is and so is never altered: nil when it is empty,
// longer than max characters, not storable, or holds a card number of a
// known scheme (an identifier is digits by nature, and one in ten passes
// the Luhn check alone, as zone.DigitFields explains).
func storableReference(s string, max int) *string {
	if s == "" || utf8.RuneCountInString(s) > max || !pgtext.Storable(s) || panscan.ContainsSchemePAN(s) {
		return nil
	}
	return &s
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewTransaction is what a transaction is created with, in processing.
// Pointers are the request's fields of the same name (Validate).
type NewTransaction struct {
	Intent   string // "" for IntentAuthorize
	Amount   int64
	Currency string
	Country  *string
	// PaymentMethodID names a stored payment method (its token); Method
	// is the method without one (a redirect), or, with one, must be its.
	PaymentMethodID *string
	Method          *string
	// BuyerID and BuyerExternalIdentifier name the buyer, by either or
	// both (which must then be the same buyer); neither: the stored
	// payment method's buyer, if any.
	BuyerID                 *string
	BuyerExternalIdentifier *string
	// PaymentServiceID names the payment service (connector
	// configuration); nil: the merchant account's default for the method.
	PaymentServiceID *string
	// Store keeps the payment method for later payments (the buyer's card
	// on file) and records the scheme transaction id of its first
	// authorization on it; without it a card given with the payment is
	// for this payment only.
	Store bool
	// PreviousSchemeTransactionID is the scheme transaction id of the
	// payment that set up a merchant-initiated series; nil: the stored
	// payment method's, when it has one.
	PreviousSchemeTransactionID *string
	// SecurityCodeHeld says the caller was told vault-proxy holds the
	// card's security code for this payment (a card given in full). A
	// hint: it is confirmed with vault-proxy before the connector is told.
	SecurityCodeHeld bool
	// ConnectionOptions are per-connector options, keyed by connector
	// name: only the connector that processes the payment receives its
	// entry (a JSON object), and it alone checks it.
	ConnectionOptions map[string]json.RawMessage
	// IntegrationClient selects a direct (client SDK) integration: one of
	// IntegrationClients, required for a method of DirectMethods and
	// refused for any other.
	IntegrationClient *string
	// RedirectURL is where the buyer returns after approving a redirect
	// payment (a method of RedirectMethods, which requires it), and
	// ApprovalExpiresAt when its reference expires (nil: the connector's
	// default window).
	RedirectURL       *string
	ApprovalExpiresAt *time.Time
	// ThreeDSecure asks for 3-D Secure authentication before a card's
	// authorization (docs/three-d-secure.md); nil: none.
	ThreeDSecure *NewThreeDSecure
	// AntiFraudFingerprint is the buyer's device session for the
	// anti-fraud provider; sent to it, not stored.
	AntiFraudFingerprint *string
	TransactionDetails   // PaymentSource "" for PaymentSourceECommerce
}

// TransactionDetails are what the merchant says about a payment, stored
// as given and passed on to connectors.
type TransactionDetails struct {
	PaymentSource       string
	MerchantInitiated   bool
	IsSubsequentPayment bool
	InstallmentCount    *int32
	CartItems           []CartItem
	ExternalIdentifier  *string
	Metadata            map[string]string
}

// Limits of a new transaction's free-form parts.
const (
	MaxCartItems      = 100
	MaxMetadataKeys   = 20
	maxMetadataKeyLen = 40
	maxInstallments   = 100
	// MaxConnectionOptions bounds connection_options' entries: one per
	// connector a request may be routed to.
	MaxConnectionOptions = 20
)

var methodPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate checks every value rule and reports all problems at once, at
// the request's pointers.
func (n NewTransaction) Validate() error {
	var v Problems
	if n.Intent != "" && n.Intent != IntentAuthorize && n.Intent != IntentCapture {
		v.Add("/intent", "must be authorize or capture", "value_error.const")
	}
	v.amount("/amount", n.Amount, 0)
	if !currencyPattern.MatchString(n.Currency) {
		v.Add("/currency", "must be an ISO 4217 code", "value_error.currency")
	}
	if n.Country != nil && !ValidCountry(*n.Country) {
		v.Add("/country", "must be an ISO 3166-1 alpha-2 code", "value_error.country")
	}
	switch {
	case n.PaymentMethodID == nil && n.Method == nil:
		v.Add("/payment_method", "is required: a stored payment method's id, or a method", "value_error.missing")
	case n.PaymentMethodID != nil && !IsUUID(*n.PaymentMethodID):
		v.Add("/payment_method/id", "must be a payment method id (a lower-case UUID)", "value_error.uuid")
	}
	if n.Method != nil && !methodPattern.MatchString(*n.Method) {
		v.Add("/payment_method/method", "must be a method name such as card or gcash (lower case)", "value_error.str.regex")
	}
	direct := n.Method != nil && slices.Contains(DirectMethods, *n.Method)
	switch {
	case direct && n.IntegrationClient == nil:
		v.Add("/integration_client", "is required for a direct integration (method "+*n.Method+"): web, ios or android", "value_error.missing")
	case n.IntegrationClient != nil && !direct:
		v.Add("/integration_client", "is only for a direct integration (method "+strings.Join(DirectMethods, ", ")+")", "value_error.integration_client.method")
	case n.IntegrationClient != nil && !slices.Contains(IntegrationClients, *n.IntegrationClient):
		v.Add("/integration_client", "must be one of web, ios, android", "value_error.const")
	}
	if direct && n.PaymentMethodID != nil {
		v.Add("/payment_method/id", "a direct integration has no stored payment method", "value_error.payment_method.direct")
	}
	redirect := n.Method != nil && slices.Contains(RedirectMethods, *n.Method)
	switch {
	case n.RedirectURL != nil && !redirect:
		v.Add("/redirect_url", "is only for a redirect payment (method "+strings.Join(RedirectMethods, ", ")+")", "value_error.redirect_url.method")
	case n.RedirectURL != nil && !validRedirectURL(*n.RedirectURL):
		v.Add("/redirect_url", "must be an absolute http or https URL of at most 2048 characters", "value_error.url")
	}
	if n.ApprovalExpiresAt != nil && !redirect {
		v.Add("/approval_expires_at", "is only for a push payment (method "+strings.Join(RedirectMethods, ", ")+")", "value_error.approval_expires_at.method")
	}
	if redirect && n.PaymentMethodID != nil {
		v.Add("/payment_method/id", "a redirect payment has no stored payment method", "value_error.payment_method.redirect")
	}
	if n.BuyerID != nil && !IsUUID(*n.BuyerID) {
		v.Add("/buyer_id", "must be a buyer id (a lower-case UUID)", "value_error.uuid")
	}
	v.text("/buyer_external_identifier", n.BuyerExternalIdentifier)
	v.text("/previous_scheme_transaction_id", n.PreviousSchemeTransactionID)
	if len(n.ConnectionOptions) > MaxConnectionOptions {
		v.Add("/connection_options", "must have at most 20 entries", "value_error.dict.max_items")
	}
	for name, o := range n.ConnectionOptions {
		p := "/connection_options/" + pointerToken(name)
		if !methodPattern.MatchString(name) {
			v.Add(p, "key must be a connector name such as mock-card (lower case)", "value_error.connection_options.connector")
		}
		if t := bytes.TrimLeft(o, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			v.Add(p, "must be an object", "type_error.dict")
		}
	}
	if n.PaymentServiceID != nil && !IsUUID(*n.PaymentServiceID) {
		v.Add("/payment_service_id", "must be a payment service id (a lower-case UUID)", "value_error.uuid")
	}
	if n.PaymentSource != "" && !slices.Contains(paymentSources, n.PaymentSource) {
		v.Add("/payment_source", "must be one of ecommerce, moto, recurring, installment, card_on_file", "value_error.const")
	}
	if c := n.InstallmentCount; c != nil && (*c < 1 || *c > maxInstallments) {
		v.Add("/installment_count", "must be from 1 to 100", "value_error.number.range")
	}
	if len(n.CartItems) > MaxCartItems {
		v.Add("/cart_items", "must have at most 100 items", "value_error.list.max_items")
	}
	for i, it := range n.CartItems {
		it.validate(&v, "/cart_items/"+strconv.Itoa(i))
	}
	v.text("/external_identifier", n.ExternalIdentifier)
	if len(n.Metadata) > MaxMetadataKeys {
		v.Add("/metadata", "must have at most 20 keys", "value_error.dict.max_items")
	}
	for k, val := range n.Metadata {
		p := "/metadata/" + pointerToken(k)
		if l := utf8.RuneCountInString(k); l < 1 || l > maxMetadataKeyLen {
			v.Add(p, "key must be 1 to 40 characters", "value_error.metadata.key_length")
		}
		if utf8.RuneCountInString(val) > MaxTextLen {
			v.Add(p, "must be at most 200 characters", "value_error.any_str.max_length")
		}
	}
	return v.Err()
}

func (it CartItem) validate(v *Problems, p string) {
	v.text(p+"/name", &it.Name)
	v.amount(p+"/quantity", it.Quantity, 1)
	v.amount(p+"/unit_amount", it.UnitAmount, 0)
	if it.DiscountAmount != nil {
		v.amount(p+"/discount_amount", *it.DiscountAmount, 0)
	}
	if it.TaxAmount != nil {
		v.amount(p+"/tax_amount", *it.TaxAmount, 0)
	}
	for name, s := range map[string]*string{"external_product_id": it.ExternalProductID, "sku": it.SKU, "product_url": it.ProductURL, "image_url": it.ImageURL} {
		v.text(p+"/"+name, s)
	}
	for i, c := range it.Categories {
		v.text(p+"/categories/"+strconv.Itoa(i), &c)
	}
	if it.ProductType != nil && !slices.Contains(productTypes, *it.ProductType) {
		v.Add(p+"/product_type", "must be one of physical, discount, shipping_fee, sales_tax, digital, gift_card, store_credit, surcharge", "value_error.const")
	}
	if it.SellerCountry != nil && !ValidCountry(*it.SellerCountry) {
		v.Add(p+"/seller_country", "must be an ISO 3166-1 alpha-2 code", "value_error.country")
	}
}

// amount records a problem unless n is from min to MaxTransactionAmount.
func (v *Problems) amount(pointer string, n, min int64) {
	if n < min || n > MaxTransactionAmount {
		v.Add(pointer, fmt.Sprintf("must be an integer from %d to %d", min, MaxTransactionAmount), "value_error.number.range")
	}
}

// pointerToken escapes a JSON object key for an RFC 6901 pointer.
func pointerToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// NewRefund is what a refund is asked with.
type NewRefund struct {
	Amount             *int64 // nil: all that is left to refund
	Reason             *string
	ExternalIdentifier *string
}

// Validate checks the values.
func (n NewRefund) Validate() error {
	var v Problems
	if n.Amount != nil {
		v.amount("/amount", *n.Amount, 1)
	}
	v.text("/reason", n.Reason)
	v.text("/external_identifier", n.ExternalIdentifier)
	return v.Err()
}

// ValidateCaptureAmount checks the amount a capture is asked with (nil:
// all that is left to capture).
func ValidateCaptureAmount(amount *int64) error {
	var v Problems
	if amount != nil {
		v.amount("/amount", *amount, 1)
	}
	return v.Err()
}

// TransactionFilter narrows a transaction list; zero values do not
// filter.
type TransactionFilter struct {
	Statuses           []TransactionStatus // any of them
	CreatedAtGTE       *time.Time
	CreatedAtLTE       *time.Time
	AmountGTE          *int64
	AmountLTE          *int64
	BuyerID            string
	ExternalIdentifier string
	PaymentMethodID    string
	PaymentServiceID   string
}

// Transition is what one step writes, together: the transaction after
// it, the event that records it, and the capture or refund it made or
// settled (nil when none).
type Transition struct {
	Transaction *Transaction
	Event       *TransactionEvent
	Capture     *Capture
	Refund      *Refund
}
