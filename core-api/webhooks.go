package coreapi

import (
	"net/url"
	"time"
)

// OutboundEvent is what an outbound webhook announces: a change of one
// resource, named (WebhookEventNames), with the resource as it stood
// once the change committed. The store writes it in the same database
// transaction as the change.
type OutboundEvent struct {
	MerchantAccountID string
	Name              string
	// Target is the resource after the change: a *Transaction, *Refund,
	// *Buyer or *PaymentMethod, rendered as the API returns it.
	Target    any
	CreatedAt time.Time
}

// The outbound event names of the resources that are not transactions.
const (
	EventBuyerCreated         = "buyer.created"
	EventBuyerUpdated         = "buyer.updated"
	EventBuyerDeleted         = "buyer.deleted"
	EventPaymentMethodCreated = "payment-method.created"
	EventPaymentMethodUpdated = "payment-method.updated"
	EventPaymentMethodDeleted = "payment-method.deleted"
	EventMandateCreated       = "mandate.created"
	EventMandateUpdated       = "mandate.updated"
)

// transactionEventNames maps each step a transaction's history records
// (its events' names: EventTransactionCreated and the operations) to the
// outbound event it announces. One table for every flow: a new flow that
// records its steps through the state machine announces them with no
// work of its own. A refund's steps announce the refund; every other step
// announces the transaction.
var transactionEventNames = map[string]string{
	EventTransactionCreated:          "transaction.created",
	string(OpApprovalRequested):      "transaction.buyer-approval-pending",
	string(OpAuthorizationPending):   "transaction.authorization-pending",
	string(OpAuthorizationSucceeded): "transaction.authorized",
	string(OpAuthorizationDeclined):  "transaction.declined",
	string(OpAuthorizationFailed):    "transaction.failed",
	string(OpSaleSucceeded):          "transaction.captured",
	string(OpSalePending):            "transaction.capture-pending",
	string(OpSaleExpired):            "transaction.expired",
	string(OpSaleFailed):             "transaction.failed",
	string(OpCaptureRequested):       "transaction.capture-requested",
	string(OpCapturePending):         "transaction.capture-pending",
	string(OpCaptureSucceeded):       "transaction.captured",
	string(OpCaptureDeclined):        "transaction.capture-declined",
	string(OpCaptureFailed):          "transaction.capture-failed",
	string(OpVoidRequested):          "transaction.void-requested",
	string(OpVoidPending):            "transaction.void-pending",
	string(OpVoidSucceeded):          "transaction.voided",
	string(OpVoidDeclined):           "transaction.void-declined",
	string(OpVoidFailed):             "transaction.void-failed",
	string(OpRefundRequested):        "refund.created",
	string(OpRefundPending):          "refund.pending",
	string(OpRefundSucceeded):        "refund.succeeded",
	string(OpRefundDeclined):         "refund.declined",
	string(OpRefundFailed):           "refund.failed",

	// 3-D Secure and anti-fraud steps: one that ends the payment announces
	// the status it ends in; the others their own outcome.
	string(OpThreeDSAuthenticated):      "transaction.three-d-secure-authenticated",
	string(OpThreeDSChallengeRequested): "transaction.buyer-approval-pending",
	string(OpThreeDSDeclined):           "transaction.declined",
	string(OpThreeDSFailed):             "transaction.failed",
	string(OpAntiFraudAccepted):         "transaction.anti-fraud-accepted",
	string(OpAntiFraudReview):           "transaction.anti-fraud-review",
	string(OpAntiFraudSkipped):          "transaction.anti-fraud-skipped",
	string(OpAntiFraudError):            "transaction.anti-fraud-error",
	string(OpAntiFraudRejected):         "transaction.declined",
	string(OpAntiFraudFailed):           "transaction.failed",
	string(OpAntiFraudReviewAccepted):   "transaction.anti-fraud-review-accepted",
	string(OpAntiFraudReviewDeclined):   "transaction.anti-fraud-review-declined",
}

// TransactionEventName is the outbound event a transaction event
// announces (by its name), and false for one that changes nothing a
// webhook reports (a notification recorded with nothing to apply).
func TransactionEventName(eventName string) (string, bool) {
	n, ok := transactionEventNames[eventName]
	return n, ok
}

// WebhookEventNames are every outbound event name, for validating a
// subscription's filter.
func WebhookEventNames() []string {
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	add(transactionEventNames[EventTransactionCreated])
	for _, op := range TransactionOperations {
		add(transactionEventNames[string(op)])
	}
	for _, n := range []string{EventBuyerCreated, EventBuyerUpdated, EventBuyerDeleted,
		EventPaymentMethodCreated, EventPaymentMethodUpdated, EventPaymentMethodDeleted, EventMandateCreated, EventMandateUpdated} {
		add(n)
	}
	return names
}

// WebhookSubscription is a merchant account's endpoint for outbound
// webhooks (docs/webhooks.md).
type WebhookSubscription struct {
	ID                string
	MerchantAccountID string
	URL               string
	Active            bool
	EventNames        []string // nil: every event
	BasicAuthUsername *string  // set when Basic authentication is
	// DisabledReason says why core-api turned it off (an endpoint that
	// answered 410 Gone); nil otherwise.
	DisabledReason *string
	// SecretRotationEndsAt is when the previous secret stops signing,
	// during a rotation's grace period.
	SecretRotationEndsAt *time.Time
	CreatedAt            time.Time
	UpdatedAt            time.Time
	// Secret is the signing secret, set only in the answer that created
	// or rotated it.
	Secret *string
}

// WebhookSubscriptionFields are the fields a create or update sets; an
// update changes only those Set.
type WebhookSubscriptionFields struct {
	URL        Optional[string]
	Active     Optional[bool]
	EventNames Optional[[]string]
	BasicAuth  Optional[*BasicAuth]
}

// BasicAuth are the credentials an endpoint asks for.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Validate checks the fields of a subscription; create requires url.
// production requires https.
func (f WebhookSubscriptionFields) Validate(create, production bool) error {
	var v Problems
	if create && !f.URL.Set {
		v.Add("/url", "url is required", "value_error.missing")
	}
	if f.URL.Set {
		if msg := webhookURLProblem(f.URL.Value, production); msg != "" {
			v.Add("/url", msg, "value_error")
		}
	}
	if f.EventNames.Set && f.EventNames.Value != nil {
		known := map[string]bool{}
		for _, n := range WebhookEventNames() {
			known[n] = true
		}
		if len(f.EventNames.Value) == 0 {
			v.Add("/event_names", "event_names lists at least one name; leave it out for every event", "value_error")
		}
		for _, n := range f.EventNames.Value {
			if !known[n] {
				v.Add("/event_names", "unknown event name "+quoteShort(n), "value_error")
				break
			}
		}
	}
	if f.BasicAuth.Set && f.BasicAuth.Value != nil {
		b := f.BasicAuth.Value
		if b.Username == "" || len(b.Username) > 200 || containsColon(b.Username) {
			v.Add("/basic_auth/username", "username is 1 to 200 characters without a colon", "value_error")
		}
		if b.Password == "" || len(b.Password) > 200 {
			v.Add("/basic_auth/password", "password is 1 to 200 characters", "value_error")
		}
	}
	return v.Err()
}

func containsColon(s string) bool {
	for _, r := range s {
		if r == ':' {
			return true
		}
	}
	return false
}

func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return `"` + s + `"`
}

// webhookURLProblem says what is wrong with an endpoint URL, or "".
// Where it may point (the address rules) is judged after DNS, at every
// connect: here only its form.
func webhookURLProblem(raw string, production bool) string {
	if len(raw) > 2048 {
		return "url is at most 2048 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return "url must be an absolute http or https URL"
	}
	if u.User != nil {
		return "url must not carry credentials; use basic_auth"
	}
	if u.Fragment != "" {
		return "url must not have a fragment"
	}
	switch u.Scheme {
	case "https":
	case "http":
		if production {
			return "url must use https"
		}
	default:
		return "url must be an absolute http or https URL"
	}
	return ""
}

// WebhookDeliveryStatus is where a delivery of an event to a
// subscription stands.
type WebhookDeliveryStatus string

// The statuses of a delivery.
const (
	DeliveryPending   WebhookDeliveryStatus = "pending"
	DeliverySucceeded WebhookDeliveryStatus = "succeeded"
	DeliveryFailed    WebhookDeliveryStatus = "failed"
)

// WebhookDelivery is an event's delivery to one subscription, with its
// attempts.
type WebhookDelivery struct {
	ID             int64
	EventID        string
	EventName      string
	SubscriptionID string
	Status         WebhookDeliveryStatus
	Attempts       []WebhookAttempt
	NextAttemptAt  *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// WebhookAttempt is one try of a delivery.
type WebhookAttempt struct {
	Status       WebhookDeliveryStatus // succeeded or failed
	ResponseCode *int
	Error        *string // why it failed without a response, or with one not 2xx
	Latency      time.Duration
	CreatedAt    time.Time
	// Request is what was sent; nil when nothing was (signing failed).
	Request *WebhookRequest
	// Response is what came back; nil when no answer did (a refused
	// connection, a timeout before the status).
	Response *WebhookResponse
}

// WebhookRequest is an attempt's request as sent, but the Basic
// credentials: their Authorization header reads RedactedHeader.
type WebhookRequest struct {
	URL     string
	Headers map[string]string // lower-case names
	// Body is the event's payload, the same on every attempt: kept once,
	// with the event, and set only where a listing renders it.
	Body *string
}

// WebhookResponse is what an endpoint answered, bounded: at most
// MaxWebhookResponseHeaders headers of MaxWebhookResponseHeaderBytes in
// all, secrets among them redacted, and the first
// MaxWebhookResponseBody bytes of the body as text.
type WebhookResponse struct {
	StatusCode    int
	Headers       map[string]string // lower-case names
	Body          string            // valid UTF-8, without NUL
	BodyTruncated bool              // the body was longer, or its read cut short
}

// The bounds of what an attempt keeps of a response.
const (
	MaxWebhookResponseBody        = 4 << 10
	MaxWebhookResponseHeaders     = 20
	MaxWebhookResponseHeaderBytes = 4 << 10
)

// RedactedHeader stands for a header value that is never kept.
const RedactedHeader = "[redacted]"

// WebhookHealth is how a subscription's endpoint fares.
type WebhookHealth struct {
	RecentAttempts int     // over the last hour
	FailureRate    float64 // of those, 0 when none
	QueueDepth     int     // deliveries pending
	FailedCount    int     // deliveries given up
}
