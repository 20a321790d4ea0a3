package connector

import (
	"net/http"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
)

// MockCardSandboxWebhookSecret is the public secret mock-card signs its
// notifications with unless started with another: what verifies them
// for a payment without a payment service, or one whose service has no
// webhook_secret.
const MockCardSandboxWebhookSecret = "whsec_mock_card_sandbox_public"

// mockCardKinds map mock-card's notification types to core-api's kinds;
// the type's suffix is the result (docs/sandbox/mock-card.md,
// "Notifications").
var mockCardKinds = map[string]NotificationKind{
	"authorization": KindAuthorizationResult,
	"capture":       KindCaptureResult,
	"refund":        KindRefundResult,
}

// mockCardResults are the results a notification type may end with, by
// the status its object must have.
var mockCardResults = map[string]string{"approved": "", "declined": mcDeclined, "failed": mcFailed, "succeeded": "succeeded"}

// mockCardNotificationData is a notification's object: the authorization
// as it stands after the result (no card number: mock-card keeps none),
// and for a capture's or refund's result the operation.
type mockCardNotificationData struct {
	Authorization mockCardAuthorization `json:"authorization"`
	Operation     *mockCardStep         `json:"operation"`
}

// mockCardType splits a notification type: its kind and its result.
func mockCardType(typ string) (NotificationKind, string, bool) {
	obj, res, ok := strings.Cut(typ, ".")
	kind, known := mockCardKinds[obj]
	if _, r := mockCardResults[res]; !ok || !known || !r {
		return "", "", false
	}
	return kind, res, true
}

var mockCardNotifications = simulatorNotifications[mockCardNotificationData]{
	headers:       notificationHeaders{id: "Mock-Card-Notification-Id", timestamp: "Mock-Card-Timestamp", signature: "Mock-Card-Signature"},
	builtInSecret: MockCardSandboxWebhookSecret,
	subject: func(n simulatorNotification[mockCardNotificationData]) (NotificationSubject, bool) {
		kind, _, ok := mockCardType(n.Type)
		a := n.Data.Authorization
		if !ok || a.ID == "" || a.IdempotencyKey == "" {
			return NotificationSubject{}, false
		}
		sub := NotificationSubject{Kind: kind, Reference: mockCardReference(a.IdempotencyKey), ProcessorID: a.ID}
		if kind != KindAuthorizationResult {
			op := n.Data.Operation
			if op == nil || op.IdempotencyKey == "" {
				return NotificationSubject{}, false
			}
			sub.OperationReference = mockCardReference(op.IdempotencyKey)
		}
		return sub, true
	},
	result: func(n simulatorNotification[mockCardNotificationData], sub NotificationSubject) (coreapi.ConnectorResult, bool) {
		_, res, _ := mockCardType(n.Type)
		if sub.Kind == KindAuthorizationResult {
			r := n.Data.Authorization.result()
			want := map[string]coreapi.Outcome{"approved": coreapi.OutcomeSucceeded, "declined": coreapi.OutcomeDeclined, "failed": coreapi.OutcomeFailed}[res]
			return r, want != "" && r.Outcome == want
		}
		op := n.Data.Operation
		switch {
		case res == "succeeded" && op.Status == "succeeded":
			return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: op.ID}, true
		case res == "failed" && op.Status == mcFailed:
			return coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, Reference: op.ID, ErrorCode: deref(op.FailureCode)}, true
		}
		return coreapi.ConnectorResult{}, false
	},
}

// ParseNotification reads what a notification is about, unverified.
func (MockCard) ParseNotification(body []byte) (NotificationSubject, error) {
	return mockCardNotifications.parse(body)
}

// VerifyNotification checks Mock-Card-Signature ("v1=" + hex
// HMAC-SHA256(secret, timestamp + "." + body)) with the payment
// service's webhook_secret and that Mock-Card-Timestamp is within
// NotificationTolerance of now.
func (MockCard) VerifyNotification(cfg Config, h http.Header, body []byte, now time.Time) (Notification, error) {
	return mockCardNotifications.verify(cfg, h, body, now)
}
