package connector

import (
	"context"
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
	// CartItems are the transaction's (nil: none), as CardAuthorization's.
	CartItems []coreapi.CartItem
	Config    Config
}

// QRConnector issues instant bank transfer charges paid by QR code; the
// processor's notifications about them it reads as a
// NotificationConnector. Calls are idempotent by
// their reference; an unknown outcome is reported as CardConnector's
// (ErrOutcomeUnknown).
type QRConnector interface {
	NotificationConnector
	// CreateQR answers OutcomeCapturePending with the charge's id
	// (Reference), its QR payload and expiry, or a decline.
	CreateQR(ctx context.Context, r QRCharge) (coreapi.ConnectorResult, error)
	// CancelQR ends an unpaid charge past its expiry so that it can no
	// longer be paid: OutcomeFailed, or OutcomeSucceeded when it was paid
	// meanwhile.
	CancelQR(ctx context.Context, chargeID string, cfg Config) (coreapi.ConnectorResult, error)
}

// QRs returns the named connector if it issues QR charges.
func (r *Registry) QRs(name string) (QRConnector, error) {
	c, ok := r.byName[name].(QRConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
