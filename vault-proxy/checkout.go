package vaultproxy

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
)

// CheckoutSession lets a buyer's browser send a card to the vault through
// the secure card fields with no credential but the session's id, and a
// payment use the card that came with it. It belongs to one merchant
// account, expires, takes a bounded number of field submissions
// (MaxCheckoutFieldAttempts) and pays at most once.
type CheckoutSession struct {
	ID                uuid.UUID // random (122 bits): the fields' only credential
	MerchantAccountID string
	// The merchant's order, all optional: a payment with the session must
	// be of Amount and Currency when they are set.
	Amount    *int64
	Currency  *string
	CartItems json.RawMessage // a JSON array, or nil
	Metadata  json.RawMessage // a JSON object, or nil
	ExpiresAt time.Time
	CreatedAt time.Time
	// PaymentMethodID is the token of the card the fields sent (uuid.Nil
	// until they have): vaulted with them (CheckoutCardVaulted) or one the
	// merchant stored before (CheckoutCardStored).
	PaymentMethodID   uuid.UUID
	PaymentMethodKind string
	FieldAttempts     int
	UsedAt            *time.Time
	// UsedIdempotencyKey is the Idempotency-Key of the payment that used
	// the session, empty when it had none: a retry under it is that
	// payment again, not a second use.
	UsedIdempotencyKey string
}

// Kinds of a checkout session's card.
const (
	CheckoutCardVaulted = "card"
	CheckoutCardStored  = "id"
)

// MaxCheckoutFieldAttempts bounds the field submissions of one session: the
// fields endpoint takes no credential, so a session id cannot be used to
// try card after card.
const MaxCheckoutFieldAttempts = 10

// CheckoutSessionTTL is how long a session lives.
const CheckoutSessionTTL = time.Hour

// Expired reports whether s has expired at now.
func (s *CheckoutSession) Expired(now time.Time) bool { return !now.Before(s.ExpiresAt) }

// Status is what GET /checkout/sessions/{id} shows: used, expired,
// fields_submitted or created.
func (s *CheckoutSession) Status(now time.Time) string {
	switch {
	case s.UsedAt != nil:
		return "used"
	case s.Expired(now):
		return "expired"
	case s.PaymentMethodID != uuid.Nil:
		return "fields_submitted"
	}
	return "created"
}

// Why a checkout session refuses fields or a payment.
var (
	ErrCheckoutSessionExpired    = errors.New("vaultproxy: the checkout session has expired")
	ErrCheckoutSessionUsed       = errors.New("vaultproxy: the checkout session was used by a payment")
	ErrCheckoutSessionIncomplete = errors.New("vaultproxy: no card was sent with the checkout session")
)
