// Package webhooks is core-api's outbound webhooks (docs/webhooks.md): a
// merchant account's subscriptions, with their signing secrets and Basic
// authentication credentials encrypted at rest, and the Dispatcher that
// delivers the events the store's outbox holds.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// SecretPrefix starts every signing secret, as Standard Webhooks has it:
// the rest is the standard base64 of the HMAC key.
const SecretPrefix = "whsec_"

// DefaultRotationGrace is how long a rotated-out secret still signs when
// the request names no grace period; MaxRotationGrace bounds it.
const (
	DefaultRotationGrace = 24 * time.Hour
	MaxRotationGrace     = 7 * 24 * time.Hour
)

// Sealed are a subscription's secrets as the store keeps them: Vault
// transit ciphertext, bound to the subscription.
type Sealed struct {
	Secret    string
	BasicAuth *string // nil: none; "" in an update: keep the stored one
}

// Store is the core database as the subscriptions use it. Every call is
// scoped to a merchant account; another account's subscription is
// coreapi.ErrNotFound.
type Store interface {
	InsertWebhookSubscription(ctx context.Context, s *coreapi.WebhookSubscription, sealed Sealed) error
	WebhookSubscription(ctx context.Context, merchant, id string) (*coreapi.WebhookSubscription, error)
	ListWebhookSubscriptions(ctx context.Context, merchant string, page pagination.Page) ([]coreapi.WebhookSubscription, error)
	// UpdateWebhookSubscription writes the fields set in f; basicAuth
	// is the new credentials' ciphertext when f sets them (nil clears).
	UpdateWebhookSubscription(ctx context.Context, merchant, id string, f coreapi.WebhookSubscriptionFields, basicAuth *string) (*coreapi.WebhookSubscription, error)
	DeleteWebhookSubscription(ctx context.Context, merchant, id string) error
	// RotateWebhookSecret makes secret the signing secret, the current
	// one signing too until graceEnds.
	RotateWebhookSecret(ctx context.Context, merchant, id, secret string, graceEnds time.Time) (*coreapi.WebhookSubscription, error)
	WebhookHealth(ctx context.Context, merchant, id string, since time.Time) (coreapi.WebhookHealth, error)
	// ListWebhookDeliveries lists an event's deliveries (subscription
	// "") or a subscription's (event ""), newest first, up to limit;
	// withPayload sets each attempt's request body (the event's payload).
	ListWebhookDeliveries(ctx context.Context, merchant, eventID, subscriptionID string, limit int, withPayload bool) ([]coreapi.WebhookDelivery, error)
	// WebhookEventPayload is event id's payload as every delivery of
	// it sends it (coreapi.ErrNotFound).
	WebhookEventPayload(ctx context.Context, merchant, id string) ([]byte, error)
	// ReplayWebhookEvent makes every delivery of event id due now
	// (only subscription's when not ""), and returns how many.
	ReplayWebhookEvent(ctx context.Context, merchant, eventID, subscriptionID string, now time.Time) (int, error)
	// ReplayFailedWebhookDeliveries makes the failed deliveries of a
	// subscription created since then due now, and returns how many.
	ReplayFailedWebhookDeliveries(ctx context.Context, merchant, subscriptionID string, since, now time.Time) (int, error)
}

// Crypter encrypts at rest (vaulttransit.Client): a ciphertext decrypts
// with the binding it was made with only.
type Crypter interface {
	Encrypt(ctx context.Context, binding string, plaintext []byte) (string, error)
	Decrypt(ctx context.Context, binding, ciphertext string) ([]byte, error)
}

// Service manages subscriptions.
type Service struct {
	Store   Store
	Crypter Crypter
	// Production: endpoints must be https.
	Production bool
	Now        func() time.Time // nil: time.Now
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// secretBinding and basicAuthBinding are the derivation contexts of a
// subscription's ciphertexts: one cannot stand for the other, nor for
// another subscription's.
func secretBinding(merchant, id string) string {
	return "webhook-secret\x00" + merchant + "\x00" + id
}

func basicAuthBinding(merchant, id string) string {
	return "webhook-basic-auth\x00" + merchant + "\x00" + id
}

// NewSecret is a fresh signing secret: 32 random bytes.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// Create stores a subscription; the answer carries its secret, which no
// later read shows.
func (s *Service) Create(ctx context.Context, merchant string, f coreapi.WebhookSubscriptionFields) (*coreapi.WebhookSubscription, error) {
	if err := f.Validate(true, s.Production); err != nil {
		return nil, err
	}
	sub := &coreapi.WebhookSubscription{ID: uuid.NewString(), MerchantAccountID: merchant, URL: f.URL.Value, Active: true}
	if p := f.Active.Ptr(); p != nil {
		sub.Active = *p
	}
	if p := f.EventNames.Ptr(); p != nil {
		sub.EventNames = *p
	}
	secret := NewSecret()
	var sealed Sealed
	var err error
	if sealed.Secret, err = s.Crypter.Encrypt(ctx, secretBinding(merchant, sub.ID), []byte(secret)); err != nil {
		return nil, err
	}
	if b := basicAuthOf(f); b != nil {
		ct, err := s.sealBasicAuth(ctx, merchant, sub.ID, b)
		if err != nil {
			return nil, err
		}
		sealed.BasicAuth, sub.BasicAuthUsername = &ct, &b.Username
	}
	if err := s.Store.InsertWebhookSubscription(ctx, sub, sealed); err != nil {
		return nil, err
	}
	sub.Secret = &secret
	return sub, nil
}

func basicAuthOf(f coreapi.WebhookSubscriptionFields) *coreapi.BasicAuth {
	if p := f.BasicAuth.Ptr(); p != nil {
		return *p
	}
	return nil
}

func (s *Service) sealBasicAuth(ctx context.Context, merchant, id string, b *coreapi.BasicAuth) (string, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	defer clear(raw)
	return s.Crypter.Encrypt(ctx, basicAuthBinding(merchant, id), raw)
}

// Get reads a subscription.
func (s *Service) Get(ctx context.Context, merchant, id string) (*coreapi.WebhookSubscription, error) {
	return s.Store.WebhookSubscription(ctx, merchant, id)
}

// HealthWindow is the span of attempts a subscription's health counts.
const HealthWindow = time.Hour

// Health reads how a subscription's endpoint fares.
func (s *Service) Health(ctx context.Context, merchant, id string) (coreapi.WebhookHealth, error) {
	return s.Store.WebhookHealth(ctx, merchant, id, s.now().Add(-HealthWindow))
}

// List lists a merchant account's subscriptions.
func (s *Service) List(ctx context.Context, merchant string, page pagination.Page) ([]coreapi.WebhookSubscription, error) {
	return s.Store.ListWebhookSubscriptions(ctx, merchant, page)
}

// Update changes the fields f sets.
func (s *Service) Update(ctx context.Context, merchant, id string, f coreapi.WebhookSubscriptionFields) (*coreapi.WebhookSubscription, error) {
	if err := f.Validate(false, s.Production); err != nil {
		return nil, err
	}
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("webhook subscription: %w", coreapi.ErrNotFound)
	}
	var basic *string
	if b := basicAuthOf(f); b != nil {
		ct, err := s.sealBasicAuth(ctx, merchant, id, b)
		if err != nil {
			return nil, err
		}
		basic = &ct
	}
	return s.Store.UpdateWebhookSubscription(ctx, merchant, id, f, basic)
}

// Delete removes a subscription and its pending deliveries.
func (s *Service) Delete(ctx context.Context, merchant, id string) error {
	return s.Store.DeleteWebhookSubscription(ctx, merchant, id)
}

// RotateSecret gives a subscription a new secret, returned once; the
// previous one keeps signing for grace (DefaultRotationGrace when 0), so
// a receiver can switch without losing a delivery.
func (s *Service) RotateSecret(ctx context.Context, merchant, id string, grace time.Duration) (*coreapi.WebhookSubscription, error) {
	if grace < 0 || grace > MaxRotationGrace {
		var v coreapi.Problems
		v.Add("/grace_period_seconds", fmt.Sprintf("must be between 0 and %d", int(MaxRotationGrace.Seconds())), "value_error")
		return nil, v.Err()
	}
	if grace == 0 {
		grace = DefaultRotationGrace
	}
	if _, err := s.Store.WebhookSubscription(ctx, merchant, id); err != nil {
		return nil, err
	}
	secret := NewSecret()
	ct, err := s.Crypter.Encrypt(ctx, secretBinding(merchant, id), []byte(secret))
	if err != nil {
		return nil, err
	}
	sub, err := s.Store.RotateWebhookSecret(ctx, merchant, id, ct, s.now().Add(grace))
	if err != nil {
		return nil, err
	}
	sub.Secret = &secret
	return sub, nil
}

// MaxDeliveriesListed bounds a list of deliveries.
const MaxDeliveriesListed = 100

// Event returns an outbound event's payload, byte for byte the body of
// its deliveries; it exists whether or not any subscription took it.
func (s *Service) Event(ctx context.Context, merchant, id string) ([]byte, error) {
	return s.Store.WebhookEventPayload(ctx, merchant, id)
}

// EventDeliveries lists the deliveries of an event, with their attempts
// and each attempt's request body (the event's payload): an event has a
// delivery per subscription at most.
func (s *Service) EventDeliveries(ctx context.Context, merchant, eventID string) ([]coreapi.WebhookDelivery, error) {
	if !coreapi.IsUUID(eventID) {
		return nil, fmt.Errorf("event: %w", coreapi.ErrNotFound)
	}
	return s.Store.ListWebhookDeliveries(ctx, merchant, eventID, "", MaxDeliveriesListed, true)
}

// SubscriptionDeliveries lists a subscription's latest deliveries, with
// their attempts but not the request bodies: a hundred deliveries of up
// to some 35 attempts each would repeat each payload as often
// (EventDeliveries has them).
func (s *Service) SubscriptionDeliveries(ctx context.Context, merchant, id string) ([]coreapi.WebhookDelivery, error) {
	if _, err := s.Store.WebhookSubscription(ctx, merchant, id); err != nil {
		return nil, err
	}
	return s.Store.ListWebhookDeliveries(ctx, merchant, "", id, MaxDeliveriesListed, false)
}

// ReplayEvent delivers an event again to every subscription it was
// delivered to (or subscriptionID's alone), with the same webhook-id.
func (s *Service) ReplayEvent(ctx context.Context, merchant, eventID, subscriptionID string) (int, error) {
	if !coreapi.IsUUID(eventID) || (subscriptionID != "" && !coreapi.IsUUID(subscriptionID)) {
		return 0, fmt.Errorf("event: %w", coreapi.ErrNotFound)
	}
	n, err := s.Store.ReplayWebhookEvent(ctx, merchant, eventID, subscriptionID, s.now())
	if err == nil && n == 0 {
		err = fmt.Errorf("event: %w", coreapi.ErrNotFound)
	}
	return n, err
}

// ReplayFailed delivers again every delivery of a subscription that
// failed, of the events since then.
func (s *Service) ReplayFailed(ctx context.Context, merchant, id string, since time.Time) (int, error) {
	if _, err := s.Store.WebhookSubscription(ctx, merchant, id); err != nil {
		return 0, err
	}
	return s.Store.ReplayFailedWebhookDeliveries(ctx, merchant, id, since, s.now())
}
