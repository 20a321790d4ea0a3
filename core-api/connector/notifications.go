package connector

import (
	"errors"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
)

// NotificationKind is what a processor's notification is about, in
// core-api's terms: each connector maps its processor's own types to one
// of these (docs/notifications.md, "Kinds").
type NotificationKind string

// The kinds. The first six are about a transaction, named by the
// reference it was sent with; the others about a bank debit mandate,
// named by the processor's mandate id.
const (
	// KindAuthorizationResult: the processor decided a payment's
	// authorization on its own time, as a push payment's buyer does at a
	// wallet (approved, declined, or expired undecided).
	KindAuthorizationResult NotificationKind = "authorization.result"
	// KindTransferCompleted: an instant bank transfer was paid.
	KindTransferCompleted NotificationKind = "transfer.completed"
	// KindDebitResult: a one-off bank debit succeeded or failed.
	KindDebitResult NotificationKind = "debit.result"
	// KindRecurringChargeResult: a merchant-initiated charge under a
	// mandate succeeded or failed.
	KindRecurringChargeResult NotificationKind = "recurring_charge.result"
	// KindCaptureResult: a capture the processor accepted without
	// settling it (its answer was pending) succeeded or failed; it names
	// the capture by the reference it was sent with.
	KindCaptureResult NotificationKind = "capture.result"
	// KindRefundResult: the same for a refund.
	KindRefundResult NotificationKind = "refund.result"

	KindMandateActivated NotificationKind = coreapi.MandateActivated
	KindMandateRevoked   NotificationKind = coreapi.MandateRevokedKind
	// KindRecurringTokenCreated: the processor can now charge the mandate
	// on the merchant's initiative.
	KindRecurringTokenCreated NotificationKind = coreapi.RecurringTokenCreated
)

// AboutMandate reports whether notifications of kind k name a mandate
// rather than a transaction.
func (k NotificationKind) AboutMandate() bool {
	return k == KindMandateActivated || k == KindMandateRevoked || k == KindRecurringTokenCreated
}

// NotificationSubject is what an unverified notification says it is
// about: enough to find the configuration that verifies it.
type NotificationSubject struct {
	Kind NotificationKind
	// Reference is the reference the transaction was sent with (its id);
	// for a mandate, the reference the mandate was created with.
	Reference string
	// ProcessorID is the processor's id of the payment, charge, debit or
	// mandate.
	ProcessorID string
	// OperationReference is, for a capture's or refund's result, the
	// reference that operation was sent with (its id).
	OperationReference string
}

// Notification is a verified notification.
type Notification struct {
	ID string // the processor's notification id: the same on each retry
	NotificationSubject
	// Result is a transaction kind's answer: about the authorization, or
	// about the charge it settles.
	Result coreapi.ConnectorResult
}

// ErrBadSignature is a notification whose signature does not verify
// (missing, malformed, wrong, or too old).
var ErrBadSignature = errors.New("connector: notification signature does not verify")

// ErrNotificationMalformed is a verified notification whose body the
// connector cannot read.
var ErrNotificationMalformed = errors.New("connector: notification malformed")

// NotificationConnector reads and verifies its processor's notifications.
// Verification is the connector's own (a signature scheme, a secret of the
// configuration that processes the payment); what it returns is the same
// for every connector, so core-api matches and applies them in one place.
type NotificationConnector interface {
	Connector
	// ParseNotification reads what an unverified notification is about,
	// to find the configuration that verifies it.
	ParseNotification(body []byte) (NotificationSubject, error)
	// VerifyNotification checks a notification's signature at now with
	// cfg's secret (ErrBadSignature) and reads it
	// (ErrNotificationMalformed).
	VerifyNotification(cfg Config, h http.Header, body []byte, now time.Time) (Notification, error)
}

// Notifications returns the named connector if it takes notifications.
func (r *Registry) Notifications(name string) (NotificationConnector, error) {
	c, ok := r.byName[name].(NotificationConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
