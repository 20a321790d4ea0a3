package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"

	coreapi "github.com/payorch/core-api"
)

// MockRedirectName is the registry name of the connector to
// mock-redirect, the sandbox processor of redirect (push) payments.
const MockRedirectName = "mock-redirect"

// The built-in sandbox configuration's credentials (a zero Config):
// public, as a processor's published sandbox test credentials are.
// mock-redirect signs with the secret it is started with, by default
// this one.
const (
	MockRedirectSandboxAPIKey        = "mr_test_payorch_builtin_sandbox"
	MockRedirectSandboxWebhookSecret = "whsec_mock_redirect_sandbox_public"
)

// mock-redirect's approval windows (docs/sandbox/mock-redirect.md): a
// reference is payable for 7 days unless the payment or its
// configuration says otherwise, and for 30 days at most.
const (
	MockRedirectDefaultWindow = 7 * 24 * time.Hour
	MockRedirectMaxWindow     = 30 * 24 * time.Hour
)

var (
	mockRedirectKeyRE = regexp.MustCompile(`^mr_test_[A-Za-z0-9_-]{8,120}$`)
	// rfc3339RE is the shape of an RFC 3339 date-time; time.Parse
	// checks the values.
	rfc3339RE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$`)
)

// MockRedirect is the redirect-payment connector to mock-redirect
// (docs/sandbox/mock-redirect.md), registered as "mock-redirect" outside
// production when core-api is given the simulator's address. It is
// written as a real processor's connector is: its own wire types from the
// simulator's documented contract, over HTTP.
type MockRedirect struct {
	BaseURL string       // the simulator's, no trailing slash
	HTTP    *http.Client // nil: a client with a 30 s timeout
}

// Name is "mock-redirect".
func (MockRedirect) Name() string { return MockRedirectName }

// Schemas declares mock-redirect's configuration: the API key it issued
// the merchant and the secret it signs notifications with; a default
// approval window of the configuration's own; and a transaction's
// override of its reference's expiry.
func (MockRedirect) Schemas() Schemas {
	return Schemas{
		Methods: coreapi.RedirectMethods,
		Credentials: Schema{
			{Name: "api_key", Kind: KindString, Required: true, MinLength: 16, MaxLength: 128, Pattern: mockRedirectKeyRE, PatternText: "mr_test_ and letters, digits, _ or -"},
			{Name: "webhook_secret", Kind: KindString, Required: true, MinLength: 16, MaxLength: 128},
		},
		Settings: Schema{
			{Name: "approval_window_hours", Kind: KindInteger, Min: 1, Max: int64(MockRedirectMaxWindow / time.Hour)},
		},
		ConnectionOptions: Schema{
			{Name: "approval_expires_at", Kind: KindString, MaxLength: 40, Pattern: rfc3339RE, PatternText: "an RFC 3339 date-time"},
		},
	}
}

// Windows is 7 days by default, or the configuration's
// approval_window_hours; 30 days at most.
func (MockRedirect) Windows(cfg Config) ApprovalWindows {
	w := ApprovalWindows{Default: MockRedirectDefaultWindow, Max: MockRedirectMaxWindow}
	if h, ok := cfg.Settings["approval_window_hours"].(int64); ok {
		w.Default = time.Duration(h) * time.Hour
	}
	return w
}

// ApprovalOverride is the options' approval_expires_at.
func (MockRedirect) ApprovalOverride(options Values) *time.Time {
	at, err := time.Parse(time.RFC3339Nano, options.String("approval_expires_at"))
	if err != nil {
		return nil
	}
	return &at
}

// mockRedirectPayment is mock-redirect's payment.
type mockRedirectPayment struct {
	ID          string                  `json:"id"`
	Reference   string                  `json:"reference"`
	Status      string                  `json:"status"`
	ApprovalURL string                  `json:"approval_url"`
	ExpiresAt   time.Time               `json:"expires_at"`
	Captures    []mockRedirectOperation `json:"captures"`
	Refunds     []mockRedirectOperation `json:"refunds"`
	Voided      bool                    `json:"voided"`
}

// mockRedirectOperation is mock-redirect's capture or refund (the
// fields of a CardStep).
type mockRedirectOperation struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Amount    int64  `json:"amount"`
}

var mockRedirectIntents = map[string]string{coreapi.IntentCapture: "sale", coreapi.IntentAuthorize: "authorization"}

// CreatePayment sends POST /v1/payments.
func (m MockRedirect) CreatePayment(ctx context.Context, r RedirectPayment) (coreapi.ConnectorResult, error) {
	in := map[string]any{"reference": r.Reference, "method": r.Method, "type": mockRedirectIntents[r.Intent],
		"amount": r.Amount, "currency": r.Currency, "redirect_url": r.RedirectURL, "notification_url": r.NotificationURL,
		"expires_at": r.ExpiresAt.UTC().Format(time.RFC3339)}
	if len(r.CartItems) > 0 {
		in["cart_items"] = r.CartItems
	}
	body, err := json.Marshal(in)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	var p mockRedirectPayment
	status, code, err := m.call(ctx, r.Config, http.MethodPost, "/v1/payments", body, &p)
	switch {
	case err != nil:
		return unknown(MockRedirectName, "payment", err)
	case status == http.StatusUnprocessableEntity:
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: code, RawResponseCode: code}, nil
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockRedirectName, Status: status, Code: code}
	}
	return paymentResult(p), nil
}

// LookupPayment sends GET /v1/payments?reference=.
func (m MockRedirect) LookupPayment(ctx context.Context, reference string, cfg Config) (coreapi.ConnectorResult, error) {
	var p mockRedirectPayment
	status, code, err := m.call(ctx, cfg, http.MethodGet, "/v1/payments?reference="+url.QueryEscape(reference), nil, &p)
	switch {
	case err != nil:
		return unknown(MockRedirectName, "lookup", err)
	case status == http.StatusNotFound:
		return coreapi.ConnectorResult{}, fmt.Errorf("%w: %s", ErrNotFound, code)
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockRedirectName, Status: status, Code: code}
	}
	return paymentResult(p), nil
}

// CancelPayment sends POST /v1/payments/{id}/cancel.
func (m MockRedirect) CancelPayment(ctx context.Context, paymentID string, cfg Config) (coreapi.ConnectorResult, error) {
	var p mockRedirectPayment
	status, code, err := m.call(ctx, cfg, http.MethodPost, "/v1/payments/"+url.PathEscape(paymentID)+"/cancel", nil, &p)
	switch {
	case err != nil:
		return unknown(MockRedirectName, "cancel", err)
	case status == http.StatusNotFound:
		return coreapi.ConnectorResult{}, fmt.Errorf("%w: %s", ErrNotFound, code)
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockRedirectName, Status: status, Code: code}
	}
	return paymentResult(p), nil
}

// LookupOperations sends GET /v1/payments/{id}: its captures and
// refunds by reference, and whether it is voided.
func (m MockRedirect) LookupOperations(ctx context.Context, paymentID string, cfg Config) (DirectState, error) {
	var p mockRedirectPayment
	status, code, err := m.call(ctx, cfg, http.MethodGet, "/v1/payments/"+url.PathEscape(paymentID), nil, &p)
	switch {
	case err != nil:
		return DirectState{}, fmt.Errorf("%w: %s lookup: %w", ErrOutcomeUnknown, MockRedirectName, err)
	case status == http.StatusNotFound:
		return DirectState{}, fmt.Errorf("%w: %s", ErrNotFound, code)
	case status/100 != 2:
		return DirectState{}, &ProcessorError{Connector: MockRedirectName, Status: status, Code: code}
	}
	steps := func(ops []mockRedirectOperation) []CardStep {
		out := make([]CardStep, 0, len(ops))
		for _, o := range ops {
			out = append(out, CardStep{ID: o.ID, Reference: o.Reference, Amount: o.Amount})
		}
		return out
	}
	return DirectState{Captures: steps(p.Captures), Refunds: steps(p.Refunds), Voided: p.Voided}, nil
}

// Capture sends POST /v1/payments/{id}/captures.
func (m MockRedirect) Capture(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error) {
	return m.operation(ctx, r, "captures", true)
}

// Void sends POST /v1/payments/{id}/void.
func (m MockRedirect) Void(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error) {
	return m.operation(ctx, r, "void", false)
}

// Refund sends POST /v1/payments/{id}/refunds.
func (m MockRedirect) Refund(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error) {
	return m.operation(ctx, r, "refunds", true)
}

// operation sends one operation on the payment with its reference, by
// which mock-redirect answers the same operation again: its refusal
// (422) is a decline with its error code. A capture or refund is
// referenced by its own id, a void by the payment's.
func (m MockRedirect) operation(ctx context.Context, r DirectOperation, kind string, withAmount bool) (coreapi.ConnectorResult, error) {
	in := map[string]any{"reference": r.Reference}
	if withAmount {
		in["amount"] = r.Amount
	}
	body, err := json.Marshal(in)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	var out struct {
		ID string `json:"id"`
	}
	status, code, err := m.call(ctx, r.Config, http.MethodPost, "/v1/payments/"+url.PathEscape(r.OrderID)+"/"+kind, body, &out)
	switch {
	case err != nil:
		return unknown(MockRedirectName, kind, err)
	case status == http.StatusUnprocessableEntity:
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, Reference: r.OrderID, ErrorCode: code, RawResponseCode: code}, nil
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockRedirectName, Status: status, Code: code}
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: out.ID, RawResponseCode: "succeeded"}, nil
}

// paymentResult is what a payment's status says of its authorization.
func paymentResult(p mockRedirectPayment) coreapi.ConnectorResult {
	res := coreapi.ConnectorResult{Reference: p.ID, RawResponseCode: p.Status}
	switch p.Status {
	case "approved":
		res.Outcome = coreapi.OutcomeSucceeded
	case "declined":
		res.Outcome, res.ErrorCode = coreapi.OutcomeDeclined, "buyer_declined"
	case "expired":
		res.Outcome, res.ErrorCode = coreapi.OutcomeFailed, "expired"
	default:
		res.Outcome, res.ApprovalURL, res.ExpiresAt = coreapi.OutcomeApprovalRequired, p.ApprovalURL, p.ExpiresAt
	}
	return res
}

// call sends a request to mock-redirect and decodes a 2xx answer into
// out; any other answer's error code is returned with its status, but a
// 5xx is a call without a verdict.
func (m MockRedirect) call(ctx context.Context, cfg Config, method, path string, body []byte, out any) (int, string, error) {
	c := simulatorClient{name: MockRedirectName, baseURL: m.BaseURL, authorization: bearer(credential(cfg, "api_key", MockRedirectSandboxAPIKey)), http: m.HTTP, timeout: 30 * time.Second, maxAnswer: 1 << 16}
	status, code, err := c.callCoded(ctx, method, path, body, out)
	if err == nil && status >= 500 {
		return 0, "", fmt.Errorf("processor answered %d", status)
	}
	return status, code, err
}

// credential is cfg's credential name, or the built-in sandbox one's.
func credential(cfg Config, name, builtIn string) string {
	if k, ok := cfg.Credentials[name]; ok {
		return k.Reveal()
	}
	return builtIn
}

// mockRedirectTypes are the notification types and the status each
// reports.
var mockRedirectTypes = map[string]string{"payment.approved": "approved", "payment.declined": "declined", "payment.expired": "expired"}

// mockRedirectNotifications are mock-redirect's notifications
// (docs/sandbox/mock-redirect.md, "Notifications"): the buyer's decision
// on a payment, or its expiry, named by the payment's reference (the
// transaction's id). A type must be the status of the payment it sends.
var mockRedirectNotifications = simulatorNotifications[mockRedirectPayment]{
	headers:       notificationHeaders{id: "Mock-Redirect-Notification-Id", timestamp: "Mock-Redirect-Timestamp", signature: "Mock-Redirect-Signature"},
	builtInSecret: MockRedirectSandboxWebhookSecret,
	subject: func(n simulatorNotification[mockRedirectPayment]) (NotificationSubject, bool) {
		return NotificationSubject{Kind: KindAuthorizationResult, Reference: n.Data.Reference, ProcessorID: n.Data.ID}, n.Data.Reference != ""
	},
	result: func(n simulatorNotification[mockRedirectPayment], _ NotificationSubject) (coreapi.ConnectorResult, bool) {
		return paymentResult(n.Data), n.Data.ID != "" && mockRedirectTypes[n.Type] == n.Data.Status
	},
}

// ParseNotification reads what a notification is about, unverified: the
// authorization of the payment with its reference.
func (MockRedirect) ParseNotification(body []byte) (NotificationSubject, error) {
	return mockRedirectNotifications.parse(body)
}

// VerifyNotification checks Mock-Redirect-Signature ("v1=" + hex
// HMAC-SHA256(secret, timestamp + "." + body)) with the configuration's
// webhook_secret and that Mock-Redirect-Timestamp is within
// NotificationTolerance of now.
func (MockRedirect) VerifyNotification(cfg Config, h http.Header, body []byte, now time.Time) (Notification, error) {
	return mockRedirectNotifications.verify(cfg, h, body, now)
}
