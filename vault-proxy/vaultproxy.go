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

// CardStore persists vaulted cards.
type CardStore interface {
	// InsertCardAudited stores the card together with its audit event.
	InsertCardAudited(ctx context.Context, c *VaultedCard, e AuditEvent) error
	Cards(ctx context.Context, merchantAccountID string, tokens []uuid.UUID) ([]*VaultedCard, error)
	UpdateExpiry(ctx context.Context, merchantAccountID string, token uuid.UUID, expiry string) error
	DeleteCard(ctx context.Context, merchantAccountID string, token uuid.UUID) error
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
	// Writable is nil when Record can write now. Card data is revealed
	// only then: an access that could not be recorded does not happen.
	Writable() error
}

// ErrAuditUnavailable is returned instead of revealing card data while the
// audit log cannot record.
var ErrAuditUnavailable = errors.New("vaultproxy: the audit log cannot record; nothing was revealed")
