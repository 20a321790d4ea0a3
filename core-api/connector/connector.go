// Package connector is core-api's seam to payment processors: a small
// interface per capability, and a registry that names each implementation
// (README.md, "Sandbox simulators"; the connectors to come:
// docs/planned.md). Sandbox simulators shipped with the product
// register here exactly as a real processor's adapter would, so handlers
// never know which one they talk to.
//
// [MandateConnector] sets up and revokes bank debit mandates (ACH, SEPA,
// Bacs); [QRConnector] issues instant bank transfers paid by QR code (pix)
// and reads the processor's signed notifications about them; [MockBank]
// ("mock-bank") is the connector of the sandbox bank for both.
// [CardConnector] authorizes, captures, voids and refunds card payments
// through vault-proxy's detokenized call; [MockCard] ("mock-card") is its
// connector to the sandbox card processor.
package connector

import (
	"context"
	"errors"
	"sort"
)

// Connector is anything registered under a name.
type Connector interface {
	Name() string
}

// MandateRequest asks for a recurring debit mandate on a stored bank
// account. It names the account by token; a connector that needs the
// account number asks vault-proxy for a detokenized call.
type MandateRequest struct {
	MerchantAccountID string
	PaymentMethodID   string // the vault-proxy token of the bank account
	Scheme            string // ach, sepa, bacs
	Country           string
	Currency          string
	AccountHolderName string
	// NotificationURL is where the processor sends the mandate's
	// activation, revocation and recurring token.
	NotificationURL string
	// Config is the payment service's configuration the mandate is set
	// up with (zero: the built-in one).
	Config Config
}

// MandateResult is a connector's answer about a mandate.
type MandateResult struct {
	ID     string // the connector's mandate reference
	Status string // coreapi.MandatePending, MandateActive, MandateRevoked, MandateFailed
}

// MandateConnector sets up and revokes bank debit mandates. A new
// mandate is usually pending: its activation, revocation by the bank or
// the buyer, and the recurring token that lets the merchant charge it
// arrive as notifications (NotificationKind). RevokeMandate must be
// idempotent: revoking a revoked mandate succeeds.
type MandateConnector interface {
	Connector
	CreateMandate(ctx context.Context, r MandateRequest) (MandateResult, error)
	// RevokeMandate revokes mandateID under cfg, the configuration it
	// was set up with.
	RevokeMandate(ctx context.Context, merchantAccountID, mandateID string, cfg Config) (MandateResult, error)
}

// ErrUnknown is a connector name the registry does not have, or one without
// the asked-for capability.
var ErrUnknown = errors.New("connector: unknown connector")

// Registry maps names to connectors. It is built once at start and read
// concurrently afterwards.
type Registry struct {
	byName map[string]Connector
}

// NewRegistry registers cs; a later connector with the same name replaces
// an earlier one.
func NewRegistry(cs ...Connector) *Registry {
	r := &Registry{byName: map[string]Connector{}}
	for _, c := range cs {
		r.byName[c.Name()] = c
	}
	return r
}

// Names lists the registered connectors, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Mandates returns the named connector if it handles mandates.
func (r *Registry) Mandates(name string) (MandateConnector, error) {
	c, ok := r.byName[name].(MandateConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}

// Cards returns the named connector if it handles card payments.
func (r *Registry) Cards(name string) (CardConnector, error) {
	c, ok := r.byName[name].(CardConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}
