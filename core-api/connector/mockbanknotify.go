package connector

import (
	"encoding/json"
	"net/http"
	"time"
)

// NotificationTolerance is how far a notification's timestamp may be from
// core-api's clock: an older one (a replay) is refused.
const NotificationTolerance = 5 * time.Minute

// mock-bank's notification headers (docs/sandbox/mock-bank.md).
const (
	mockBankNotificationID = "Mock-Bank-Notification-Id"
	mockBankTimestamp      = "Mock-Bank-Timestamp"
	mockBankSignature      = "Mock-Bank-Signature"
)

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

// mockBankNotification is the body of mock-bank's notification.
type mockBankNotification struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	Data mockBankObject `json:"data"`
}

func (n mockBankNotification) subject() (NotificationSubject, bool) {
	kind, ok := mockBankKinds[n.Type]
	if !ok || n.Data.ID == "" || n.Data.Reference == "" {
		return NotificationSubject{}, false
	}
	return NotificationSubject{Kind: kind, Reference: n.Data.Reference, ProcessorID: n.Data.ID}, true
}

// ParseNotification reads what a notification is about, unverified.
func (MockBank) ParseNotification(body []byte) (NotificationSubject, error) {
	var n mockBankNotification
	if err := json.Unmarshal(body, &n); err != nil {
		return NotificationSubject{}, ErrNotificationMalformed
	}
	sub, ok := n.subject()
	if !ok {
		return NotificationSubject{}, ErrNotificationMalformed
	}
	return sub, nil
}

// VerifyNotification checks Mock-Bank-Signature ("v1=" + hex
// HMAC-SHA256(secret, timestamp + "." + body)) and that
// Mock-Bank-Timestamp is within NotificationTolerance of now.
func (MockBank) VerifyNotification(cfg Config, h http.Header, body []byte, now time.Time) (Notification, error) {
	secret := credential(cfg, "webhook_secret", MockBankSandboxWebhookSecret)
	if !validHMAC(secret, h.Get(mockBankTimestamp), h.Get(mockBankSignature), body, now) {
		return Notification{}, ErrBadSignature
	}
	var n mockBankNotification
	if err := json.Unmarshal(body, &n); err != nil || n.ID == "" {
		return Notification{}, ErrNotificationMalformed
	}
	sub, ok := n.subject()
	if !ok {
		return Notification{}, ErrNotificationMalformed
	}
	if id := h.Get(mockBankNotificationID); id != "" && id != n.ID {
		return Notification{}, ErrNotificationMalformed
	}
	out := Notification{ID: n.ID, NotificationSubject: sub}
	switch sub.Kind {
	case KindTransferCompleted:
		out.Result = chargeResult(n.Data.mockBankCharge)
	case KindDebitResult, KindRecurringChargeResult:
		out.Result = debitResult(n.Data)
	}
	return out, nil
}
