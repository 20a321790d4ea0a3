package coreapi

import "time"

// Mandate event names: what changed a mandate (GET
// /mandates/{id}/events). The names of the changes are the processor's
// notification kinds; a revocation asked through core-api (deleting the
// payment method) is MandateEventRevoked without a notification.
const (
	MandateEventCreated        = "mandate-created"
	MandateEventActivated      = "mandate-activated"
	MandateEventRevoked        = "mandate-revoked"
	MandateEventRecurringToken = "recurring-token-created"
	// MandateEventNotificationReceived records a notification that
	// changed nothing (the mandate already stood where it said).
	MandateEventNotificationReceived = "notification-received"
)

// MandateEvent records one change of a mandate, or a notification about
// it that changed nothing.
type MandateEvent struct {
	ID                string
	MerchantAccountID string
	MandateID         string
	PaymentMethodID   string
	Name              string
	StatusBefore      string
	StatusAfter       string
	// Notification is the processor's notification the event records, as
	// received; nil for a change core-api asked for.
	Notification *Notification
	CreatedAt    time.Time
}

// Mandate notification kinds, as connector.NotificationKind names them.
const (
	MandateActivated      = "mandate.activated"
	MandateRevokedKind    = "mandate.revoked"
	RecurringTokenCreated = "recurring.token.created"
)

// Notified applies a processor's notification of kind (one of the
// mandate notification kinds) at now: the mandate after it and the
// event's name, MandateEventNotificationReceived when nothing changes.
// A revoked or failed mandate stays so: an activation or a token after
// the revocation changes nothing.
func (m Mandate) Notified(kind string, now time.Time) (Mandate, string) {
	next := m
	final := m.Status == MandateRevoked || m.Status == MandateFailed
	switch {
	case kind == MandateActivated && m.Status == MandatePending:
		next.Status = MandateActive
	case kind == RecurringTokenCreated && !final && m.RecurringTokenAt == nil:
		next.RecurringTokenAt = &now
	case kind == MandateRevokedKind && !final:
		next.Status, next.RevokedAt = MandateRevoked, &now
	default:
		return m, MandateEventNotificationReceived
	}
	next.UpdatedAt = now
	return next, mandateEventNames[kind]
}

var mandateEventNames = map[string]string{
	MandateActivated: MandateEventActivated, RecurringTokenCreated: MandateEventRecurringToken, MandateRevokedKind: MandateEventRevoked,
}

// Codes a bank charge is refused with (MandateError.Code): a
// merchant-initiated one's mandate, or the mandate a first debit set up.
const (
	// CodeMandateRequired: the bank account has no mandate.
	CodeMandateRequired = "mandate_required"
	// CodeMandateNotReady: the mandate is not active yet, or its
	// recurring token has not arrived.
	CodeMandateNotReady = "mandate_not_ready"
	// CodeMandateRevoked: the mandate was revoked (or failed): the
	// account can no longer be charged on the merchant's initiative.
	CodeMandateRevoked = "mandate_revoked"
	// CodeMandateDeclined: the bank refused the mandate a first debit
	// set up; nothing was debited.
	CodeMandateDeclined = "mandate_declined"
)

// MandateError refuses a bank charge before it reaches the connector.
type MandateError struct {
	Code    string
	Message string
}

func (e *MandateError) Error() string { return e.Message }

// Usable reports whether m can be charged on the merchant's initiative:
// nil, or the *MandateError that says why not.
func (m *Mandate) Usable() error {
	switch {
	case m == nil:
		return &MandateError{Code: CodeMandateRequired, Message: "the bank account has no mandate: a merchant-initiated charge needs one (mandate.recurring when it is stored, or a first customer-initiated debit)"}
	case m.Status == MandateRevoked || m.Status == MandateFailed:
		return &MandateError{Code: CodeMandateRevoked, Message: "the bank account's mandate is " + m.Status + ": it can no longer be charged on the merchant's initiative"}
	case m.Status != MandateActive || m.RecurringTokenAt == nil:
		return &MandateError{Code: CodeMandateNotReady, Message: "the bank account's mandate is not ready for merchant-initiated charges: it waits for the bank's activation and recurring token"}
	}
	return nil
}
