package connector

import (
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
)

// NotificationTolerance is how far a notification's timestamp may be from
// core-api's clock: an older one (a replay) is refused.
const NotificationTolerance = 5 * time.Minute

// mockBankKinds maps mock-bank's notification types to core-api's kinds.
var mockBankKinds = map[string]NotificationKind{
	"qr_charge.paid":             KindTransferCompleted,
	"debit.succeeded":            KindDebitResult,
	"debit.failed":               KindDebitResult,
	"recurring_charge.succeeded": KindRecurringChargeResult,
	"recurring_charge.failed":    KindRecurringChargeResult,
	"mandate.activated":          KindMandateActivated,
	"mandate.revoked":            KindMandateRevoked,
	"recurring.token.created":    KindRecurringTokenCreated,
}

// mockBankObject is the data of a notification: a charge, a debit or a
// mandate, each with its id, reference and status.
type mockBankObject struct {
	mockBankCharge
	FailureCode string `json:"failure_code"`
}

// mockBankNotifications are mock-bank's notifications
// (docs/sandbox/mock-bank.md, "Notifications"): any of mockBankKinds,
// about the object with its id and reference.
var mockBankNotifications = simulatorNotifications[mockBankObject]{
	headers:       notificationHeaders{id: "Mock-Bank-Notification-Id", timestamp: "Mock-Bank-Timestamp", signature: "Mock-Bank-Signature"},
	builtInSecret: MockBankSandboxWebhookSecret,
	subject: func(n simulatorNotification[mockBankObject]) (NotificationSubject, bool) {
		kind, ok := mockBankKinds[n.Type]
		if !ok || n.Data.ID == "" || n.Data.Reference == "" {
			return NotificationSubject{}, false
		}
		return NotificationSubject{Kind: kind, Reference: n.Data.Reference, ProcessorID: n.Data.ID}, true
	},
	result: func(n simulatorNotification[mockBankObject], sub NotificationSubject) (coreapi.ConnectorResult, bool) {
		switch sub.Kind {
		case KindTransferCompleted:
			return chargeResult(n.Data.mockBankCharge), true
		case KindDebitResult, KindRecurringChargeResult:
			return debitResult(n.Data), true
		}
		return coreapi.ConnectorResult{}, true
	},
}

// ParseNotification reads what a notification is about, unverified.
func (MockBank) ParseNotification(body []byte) (NotificationSubject, error) {
	return mockBankNotifications.parse(body)
}

// VerifyNotification checks Mock-Bank-Signature ("v1=" + hex
// HMAC-SHA256(secret, timestamp + "." + body)) and that
// Mock-Bank-Timestamp is within NotificationTolerance of now.
func (MockBank) VerifyNotification(cfg Config, h http.Header, body []byte, now time.Time) (Notification, error) {
	return mockBankNotifications.verify(cfg, h, body, now)
}
