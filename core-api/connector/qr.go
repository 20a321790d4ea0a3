package connector

import (
	"context"
	"errors"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
)

// QRCharge asks a connector for an instant bank transfer the buyer pays
// by scanning a QR code (method pix).
type QRCharge struct {
	MerchantAccountID string
	// Reference is the idempotency reference (the transaction's id): the
	// same reference sent again is the same charge, and the processor's
	// notifications name it.
	Reference string
	Amount    int64 // minor units
	Currency  string
	// NotificationURL is where the processor sends its notifications
	// about the charge (core-api's inbound endpoint for the merchant
	// account).
	NotificationURL string
	ExpiresIn       time.Duration
	Config          Config
}

// QRNotification is a verified notification about a charge.
type QRNotification struct {
	ID        string // the processor's notification id: the same on each retry
	Reference string // the charge's reference (QRCharge.Reference)
	ChargeID  string // the processor's id of the charge
	Result    coreapi.ConnectorResult
}

// ErrBadSignature is a notification whose signature does not verify
// (missing, malformed, wrong, or too old).
var ErrBadSignature = errors.New("connector: notification signature does not verify")

// ErrNotificationMalformed is a verified notification whose body the
// connector cannot read.
var ErrNotificationMalformed = errors.New("connector: notification malformed")

// QRConnector issues instant bank transfer charges paid by QR code, and
// reads the processor's notifications about them. Calls are idempotent by
// their reference; an unknown outcome is reported as CardConnector's
// (ErrOutcomeUnknown).
type QRConnector interface {
	Connector
	// CreateQR answers OutcomeCapturePending with the charge's id
	// (Reference), its QR payload and expiry, or a decline.
	CreateQR(ctx context.Context, r QRCharge) (coreapi.ConnectorResult, error)
	// CancelQR ends an unpaid charge past its expiry so that it can no
	// longer be paid: OutcomeFailed, or OutcomeSucceeded when it was paid
	// meanwhile.
	CancelQR(ctx context.Context, chargeID string, cfg Config) (coreapi.ConnectorResult, error)
	// ParseNotification reads the reference of an unverified
	// notification, to find the configuration that verifies it.
	ParseNotification(body []byte) (reference string, err error)
	// VerifyNotification checks a notification's signature at now with
	// cfg's webhook secret (ErrBadSignature) and reads it.
	VerifyNotification(cfg Config, h http.Header, body []byte, now time.Time) (QRNotification, error)
}

// QRs returns the named connector if it issues QR charges.
func (r *Registry) QRs(name string) (QRConnector, error) {
	c, ok := r.byName[name].(QRConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
