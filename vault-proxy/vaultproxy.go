// Package vaultproxy holds the PCI zone's domain types: vaulted cards, their
// tokens and the audit trail. Adapters live in subpackages named after their
// technology (postgres, httpapi); wiring lives in app and cmd.
package vaultproxy

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/envelope"
)

// Kind is what a vaulted record holds.
type Kind string

const (
	KindCard        Kind = "card"
	KindGiftCard    Kind = "gift-card"
	KindBankAccount Kind = "bank-account"
)

// VaultedCard is a stored card: display data in the clear, the number only
// inside Sealed.
type VaultedCard struct {
	Token             uuid.UUID
	MerchantAccountID string
	Kind              Kind
	Scheme            string
	CardType          string // credit, debit, prepaid or empty
	BIN               string
	Last4             string
	ExpirationDate    string // MM/YY, may be empty for gift cards
	Fingerprint       string
	Sealed            envelope.Sealed
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// ErrNotFound is returned for a token that does not exist in the merchant
// account that asks: another account's token is indistinguishable from none.
var ErrNotFound = errors.New("vaultproxy: not found")

// ErrLiveNetworkToken is the store's refusal to delete a card that still
// has a network token not deleted at its token service: that token's row is
// the only record of a credential the scheme still honours. A use of the
// card that began before the deletion can provision one after the caller
// deleted the others; the caller deletes it too and asks again.
var ErrLiveNetworkToken = errors.New("vaultproxy: the card has a network token that is not deleted")

// ErrMerchantAccountClosed is the store's refusal to hold anything new for
// a merchant account core-api deleted (postgres.CloseMerchantAccount): it
// would pass to a later account created with the same id. To the caller
// the account does not exist.
var ErrMerchantAccountClosed = errors.New("vaultproxy: the merchant account was deleted")

// ErrTooRecent is the store's refusal to shred, as unclaimed, a record
// vaulted less than the reconciliation's minimum age ago: a payment
// method's creation may still be under way for it, and a reconciliation
// must not be able to shred cards as they arrive.
var ErrTooRecent = errors.New("vaultproxy: the record is younger than the reconciliation's minimum age")

// CardStore persists vaulted cards.
type CardStore interface {
	// InsertCardAudited stores the card together with its audit event.
	InsertCardAudited(ctx context.Context, c *VaultedCard, e AuditEvent) error
	Cards(ctx context.Context, merchantAccountID string, tokens []uuid.UUID) ([]*VaultedCard, error)
	UpdateExpiry(ctx context.Context, merchantAccountID string, token uuid.UUID, expiry string) error
	DeleteCard(ctx context.Context, merchantAccountID string, token uuid.UUID) error
	// DeleteCardOlderThan is DeleteCard for a card vaulted at least minAge
	// ago by the database's clock, checked atomically with the delete;
	// ErrTooRecent otherwise.
	DeleteCardOlderThan(ctx context.Context, merchantAccountID string, token uuid.UUID, minAge time.Duration) error
}

// RecordRef names a vaulted record (a card, gift card or bank account)
// without any of its contents: what the reconciliation lists.
type RecordRef struct {
	Token             uuid.UUID
	MerchantAccountID string
	Kind              Kind
	CreatedAt         time.Time
}

// RecordQuery selects one page of vaulted records, in token order.
type RecordQuery struct {
	// CreatedBefore and MinAge: records vaulted before CreatedBefore and
	// at least MinAge ago by the database's clock.
	CreatedBefore time.Time
	MinAge        time.Duration
	// MerchantAccountID, when not empty, is the only account listed.
	MerchantAccountID string
	After             uuid.UUID // the keyset: tokens after it (uuid.Nil: from the first)
	Limit             int
}

// AuditEvent records who touched which tokens and why. Values never.
type AuditEvent struct {
	ID                int64
	OccurredAt        time.Time
	Actor             string
	MerchantAccountID string
	Action            string // vault, detokenize, forward, delete, update
	Tokens            []uuid.UUID
	Purpose           string
	Outcome           string // success, failure: <code>
	RequestID         string
	Detail            map[string]any // names only: placeholders, destination host, status, duration
}

// AuditLog stores audit events (auditspool in vault-proxy).
type AuditLog interface {
	// Record keeps nothing of e once it returns (it has written the
	// record): callers may reuse e's Detail map and slices. An
	// implementation that keeps events (a test's) must copy or encode
	// them before it returns.
	Record(ctx context.Context, e AuditEvent) error
	// Reserve holds room for the record of an access that is about to
	// happen: e as known before it (no outcome, no detail yet). Card data
	// is revealed only once the room is held, since the record is written
	// after the card was used: an access that could not be recorded does
	// not happen. An error means there is no room.
	Reserve(e AuditEvent) (AuditReservation, error)
}

// AuditReservation is room held in the audit log for one record.
type AuditReservation interface {
	// Record writes e into the room, as AuditLog.Record would; the room
	// is used up.
	Record(ctx context.Context, e AuditEvent) error
	// Release gives the room back unused; after Record it does nothing.
	Release()
}

// ErrAuditUnavailable is returned instead of revealing card data while the
// audit log cannot record.
var ErrAuditUnavailable = errors.New("vaultproxy: the audit log cannot record; nothing was revealed")
