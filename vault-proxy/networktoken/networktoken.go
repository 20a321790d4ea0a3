// Package networktoken gives vaulted cards network tokens: scheme-issued
// substitutes for the card number (a DPAN, "device PAN"), each with its own
// expiry, usable only together with a one-time cryptogram.
//
// The domain is a Provider interface, the contract a token service provider
// (TSP) connector implements: Visa Token Service, Mastercard MDES and the
// like. A Registry picks the provider by card scheme. The product ships one
// provider, Sandbox, a simulator of a TSP (simulators are product features:
// README.md, "Sandbox simulators"); a real connector implements the same interface and is
// registered in its place.
//
// Service stores tokens in the vault database and implements
// forward.NetworkTokens, so the CARD_NETWORK_TOKEN_X, CARD_NETWORK_TOKEN_
// EXPIRATION_DATE_X and CARD_CRYPTOGRAM_X placeholders of /vault-forward and
// detokenized calls work:
//
//   - The first use of a card's network token provisions one
//     (docs/network-tokens.md, "Lifecycle") and stores it: token
//     value (DPAN) sealed with the same envelope encryption as card numbers
//     (associated data binds merchant account, payment method and network
//     token id), expiry, status, provider and the TSP's token reference in
//     clear columns. Later uses reuse it.
//   - A cryptogram is fresh per call and never stored.
//   - A suspended token is unavailable: its placeholders fail (400
//     value_unavailable, or "" in their _OR_EMPTY_STRING forms). It is not
//     replaced by a new one: suspension is a decision the merchant undoes
//     with resume.
//   - A deleted token is gone: the TSP is told, the row keeps only its
//     metadata (status deleted, last 4, expiry) and loses its ciphertext and
//     record key (crypto-shredded). The next use provisions a new token.
//   - A provisioning failure (a TSP decline, a card not eligible, a scheme
//     no provider serves) is returned as *ProvisioningError; nothing is
//     stored and the next use tries again. Every provisioning and lifecycle
//     change is audited (action "network-token"), never with values.
//
// A payment method has at most one token that is not deleted (a partial
// unique index); two first uses racing each other keep the first stored
// token and delete the other at the TSP.
package networktoken

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
)

// Status is a network token's lifecycle state.
type Status string

// Statuses. Deleted is terminal.
const (
	StatusActive    Status = "active"
	StatusSuspended Status = "suspended"
	StatusDeleted   Status = "deleted"
)

// NetworkToken is a stored network token. The token value exists only inside
// Sealed (nil once deleted).
type NetworkToken struct {
	ID                uuid.UUID // UUIDv7: time-ordered
	MerchantAccountID string
	PaymentMethodID   uuid.UUID
	Provider          string // the Provider's Name, e.g. "sandbox"
	Scheme            string
	Reference         string // the TSP's token reference id; not a credential
	Status            Status
	Expiry            card.Expiry
	Last4             string // the only digits of the token ever shown
	Sealed            envelope.Sealed
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// CardData is what a provider needs to provision a token: the card number
// and the card's own display data. Number is the caller's scratch buffer: a
// provider sends it to its TSP and neither keeps nor logs it.
type CardData struct {
	MerchantAccountID string    // the token requestor's merchant
	PaymentMethodID   uuid.UUID // the vault token of the card
	Scheme            card.Scheme
	Number            []byte
	Expiry            card.Expiry
}

// Provider is a token service provider connector. Implementations must be
// safe for concurrent use, must never log or keep a card number or token
// value, and must return provisioning refusals as *ProvisioningError (other
// errors count as the TSP being unreachable or broken).
type Provider interface {
	// Name identifies the provider in stored tokens (e.g. "sandbox",
	// "visa-vts"); lifecycle calls for a token go to the provider that
	// issued it.
	Name() string
	// Provision asks the TSP for a network token for the card: the token
	// value (digits), its expiry and the TSP's reference for later calls.
	Provision(ctx context.Context, d CardData) (token []byte, expiry card.Expiry, ref string, err error)
	// Cryptogram returns a fresh one-time cryptogram for the token and the
	// ECI to send with it ("" when the TSP gives none).
	Cryptogram(ctx context.Context, ref string) (cryptogram []byte, eci string, err error)
	// Suspend, Resume and Delete change the token's state at the TSP.
	Suspend(ctx context.Context, ref string) error
	Resume(ctx context.Context, ref string) error
	Delete(ctx context.Context, ref string) error
}

// Registry maps card schemes to providers. The zero value serves no scheme.
type Registry struct {
	byScheme map[card.Scheme]Provider
}

// Register makes p the provider for schemes.
func (r *Registry) Register(p Provider, schemes ...card.Scheme) {
	if r.byScheme == nil {
		r.byScheme = map[card.Scheme]Provider{}
	}
	for _, s := range schemes {
		r.byScheme[s] = p
	}
}

// For returns the provider for a scheme.
func (r *Registry) For(s card.Scheme) (Provider, bool) {
	if r == nil {
		return nil, false
	}
	p, ok := r.byScheme[s]
	return p, ok
}

// ByName returns the registered provider called name (the one that issued a
// stored token).
func (r *Registry) ByName(name string) (Provider, bool) {
	if r == nil {
		return nil, false
	}
	for _, p := range r.byScheme {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Provisioning failure reasons (ProvisioningError.Reason).
const (
	ReasonDeclined           = "tsp_declined"
	ReasonNotEligible        = "card_not_eligible"
	ReasonSchemeNotSupported = "scheme_not_supported"
	ReasonProviderError      = "tsp_error"
)

// ErrProvisioning matches every *ProvisioningError (errors.Is).
var ErrProvisioning = errors.New("networktoken: provisioning failed")

// ProvisioningError is a refusal to provision: by the TSP, or because no
// provider serves the card. Reason is a stable snake_case word; Message is
// for people. Neither ever holds a card number.
type ProvisioningError struct {
	Reason  string
	Message string
}

func (e *ProvisioningError) Error() string {
	return "networktoken: provisioning failed: " + e.Reason
}

// Is makes errors.Is(err, ErrProvisioning) true.
func (e *ProvisioningError) Is(target error) bool { return target == ErrProvisioning }

// Other errors of the service.
var (
	// ErrNotCard: network tokens exist for cards only.
	ErrNotCard = errors.New("networktoken: the payment method is not a card")
	// ErrSuspended: the card's token is suspended; it has no usable value.
	ErrSuspended = errors.New("networktoken: the network token is suspended")
	// ErrDeleted: a lifecycle change asked of a deleted token.
	ErrDeleted = errors.New("networktoken: the network token is deleted")
	// ErrConflict: the token changed between read and write.
	ErrConflict = errors.New("networktoken: the network token changed concurrently")
)

// Unavailable reports whether err, from Service.Token or Cryptogram, means
// the card has no usable network token for this request: provisioning was
// refused or no provider serves the card, the token is suspended or was
// deleted meanwhile, the payment method is not a card, or the TSP failed.
// A forward then leaves the value empty (the _OR_EMPTY_STRING forms) or
// refuses the placeholder. Any other error (the database, Vault, a
// deadline) is the vault's own failure, not the card's, and is not
// Unavailable.
func Unavailable(err error) bool {
	var pe *ProviderError
	return errors.Is(err, ErrProvisioning) || errors.Is(err, ErrSuspended) || errors.Is(err, ErrDeleted) ||
		errors.Is(err, ErrNotCard) || errors.Is(err, vaultproxy.ErrNotFound) || errors.As(err, &pe)
}

// ProviderError is a TSP that failed a lifecycle call or a cryptogram (not a
// provisioning refusal).
type ProviderError struct {
	Op  string
	Err error
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("networktoken: provider %s: %v", e.Op, e.Err)
}
func (e *ProviderError) Unwrap() error { return e.Err }

// AAD binds a sealed token value to its merchant account, payment method and
// network token id: a ciphertext copied to another row does not open.
func AAD(merchantAccountID string, paymentMethodID, id uuid.UUID) []byte {
	return []byte("payorch/network-token/v1|" + merchantAccountID + "|" + paymentMethodID.String() + "|" + id.String())
}
