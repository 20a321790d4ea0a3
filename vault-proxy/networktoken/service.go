package networktoken

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
)

// Store is what the service needs from the vault database.
type Store interface {
	// CurrentNetworkToken returns the payment method's token that is not
	// deleted, or vaultproxy.ErrNotFound.
	CurrentNetworkToken(ctx context.Context, merchantAccountID string, paymentMethodID uuid.UUID) (*NetworkToken, error)
	// NetworkTokens lists the payment method's tokens, oldest first,
	// deleted ones included.
	NetworkTokens(ctx context.Context, merchantAccountID string, paymentMethodID uuid.UUID) ([]*NetworkToken, error)
	// NetworkToken returns one token of the payment method.
	NetworkToken(ctx context.Context, merchantAccountID string, paymentMethodID, id uuid.UUID) (*NetworkToken, error)
	// InsertNetworkToken stores t; it reports false (and stores nothing)
	// when the payment method already has a token that is not deleted, and
	// vaultproxy.ErrNotFound when the payment method is gone.
	InsertNetworkToken(ctx context.Context, t *NetworkToken) (bool, error)
	// ChangeNetworkToken locks one token of the payment method, passes it
	// to change and moves it to the status change returns (deleted also
	// drops the sealed value), in one transaction; on an error of change
	// nothing changes. The lock is held while change runs, so that changes
	// of one token, on any instance, take turns and each sees the status
	// the one before left. It returns the token as stored.
	ChangeNetworkToken(ctx context.Context, merchantAccountID string, paymentMethodID, id uuid.UUID,
		change func(context.Context, *NetworkToken) (Status, error)) (*NetworkToken, error)
}

// Service provisions, stores and uses network tokens. It implements
// forward.NetworkTokens. See the package comment for the rules.
type Service struct {
	Store     Store
	Audits    vaultproxy.AuditLog
	Sealer    *envelope.Sealer
	Providers *Registry
	// Vaulting reveals the card number for a provisioning asked through the
	// API (the forward path hands the revealed card in).
	Vaulting *vaulting.Service
	Log      *slog.Logger     // optional
	Now      func() time.Time // default time.Now
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Token returns the card's network token value and expiry, provisioning
// and storing a token on first use (forward.NetworkTokens). The caller owns
// the returned slice and should clear it after use.
func (s *Service) Token(ctx context.Context, c vaulting.Caller, r *vaulting.Revealed) ([]byte, card.Expiry, uuid.UUID, error) {
	t, value, _, err := s.ensure(ctx, c, r, nil)
	if err != nil {
		return nil, card.Expiry{}, uuid.Nil, err
	}
	return value, t.Expiry, t.ID, nil
}

// Cryptogram returns a fresh cryptogram for the card's token id, the one
// Token gave the caller (forward.NetworkTokens), while it is active: a
// token deleted or suspended since, or replaced by another, gets none. It
// is never stored.
func (s *Service) Cryptogram(ctx context.Context, c vaulting.Caller, r *vaulting.Revealed, id uuid.UUID) ([]byte, error) {
	if r.Card.Kind != vaultproxy.KindCard {
		return nil, ErrNotCard
	}
	t, err := s.Store.NetworkToken(ctx, c.MerchantAccountID, r.Card.Token, id)
	if err != nil {
		return nil, err
	}
	switch t.Status {
	case StatusSuspended:
		return nil, ErrSuspended
	case StatusDeleted:
		return nil, ErrDeleted
	}
	p, err := s.providerOf(t)
	if err != nil {
		return nil, err
	}
	v, _, err := p.Cryptogram(ctx, t.Reference)
	if err != nil {
		return nil, &ProviderError{Op: "cryptogram", Err: err}
	}
	return v, nil
}

// ensure returns the card's usable token and its value, provisioning one
// when the card has none (or only an expired one). o is the room r's
// reveal held for a provisioning's record (Provision), or nil.
func (s *Service) ensure(ctx context.Context, c vaulting.Caller, r *vaulting.Revealed, o *vaulting.Outcome) (*NetworkToken, []byte, bool, error) {
	if r.Card.Kind != vaultproxy.KindCard {
		return nil, nil, false, ErrNotCard
	}
	since := s.Sealer.Drops() // before the token is read: see open
	t, err := s.Store.CurrentNetworkToken(ctx, c.MerchantAccountID, r.Card.Token)
	switch {
	case errors.Is(err, vaultproxy.ErrNotFound):
		return s.provision(ctx, c, r, since, o)
	case err != nil:
		return nil, nil, false, err
	case t.Status == StatusSuspended:
		return t, nil, false, ErrSuspended
	case t.Expiry.ExpiredSomewhere(s.now()):
		// A token past its expiry is useless: retire it and provision
		// another, as a TSP's lifecycle update would.
		if err := s.remove(ctx, c, t.PaymentMethodID, t.ID); err != nil {
			return nil, nil, false, err
		}
		return s.provision(ctx, c, r, since, o)
	}
	v, err := s.open(ctx, t, since)
	return t, v, false, err
}

// open opens t's value. since is the sealer's Drops as read before t was:
// a token deleted since has had its record key forgotten, which the open
// must not bring back (envelope.Sealer.OpenSince).
func (s *Service) open(ctx context.Context, t *NetworkToken, since uint64) ([]byte, error) {
	return s.Sealer.OpenSince(ctx, t.Sealed, AAD(t.MerchantAccountID, t.PaymentMethodID, t.ID), since)
}

// provision asks the scheme's provider for a token and stores it. since is
// the sealer's Drops as read before the card's current token was looked up
// (open). Its record goes into o's room when there is one.
func (s *Service) provision(ctx context.Context, c vaulting.Caller, r *vaulting.Revealed, since uint64, o *vaulting.Outcome) (*NetworkToken, []byte, bool, error) {
	scheme := card.Scheme(r.Card.Scheme)
	fail := func(provider string, err error) (*NetworkToken, []byte, bool, error) {
		var pe *ProvisioningError
		if !errors.As(err, &pe) {
			s.logError(ctx, c, "network token provisioning failed", provider, err)
			pe = &ProvisioningError{Reason: ReasonProviderError, Message: "the token service provider could not be reached or failed"}
		}
		s.auditProvision(ctx, o, c, r.Card.Token, "failure: "+pe.Reason, map[string]any{"provider": provider})
		return nil, nil, false, pe
	}
	p, ok := s.Providers.For(scheme)
	if !ok {
		return fail("", &ProvisioningError{Reason: ReasonSchemeNotSupported, Message: "no token service provider serves the card's scheme here"})
	}
	var exp card.Expiry
	if err := exp.UnmarshalText([]byte(r.Card.ExpirationDate)); err != nil {
		return fail(p.Name(), &ProvisioningError{Reason: ReasonNotEligible, Message: "the card has no expiry"})
	}
	value, texp, ref, err := p.Provision(ctx, CardData{
		MerchantAccountID: c.MerchantAccountID, PaymentMethodID: r.Card.Token, Scheme: scheme, Number: r.Number, Expiry: exp,
	})
	if err != nil {
		return fail(p.Name(), err)
	}
	if n := len(value); n < 13 || n > 19 || !card.Luhn(value) || bytes.Equal(value, r.Number) || !texp.IsValid() || ref == "" {
		clear(value)
		return fail(p.Name(), errors.New("the provider returned an invalid token"))
	}
	t := &NetworkToken{
		ID: uuid.Must(uuid.NewV7()), MerchantAccountID: c.MerchantAccountID, PaymentMethodID: r.Card.Token,
		Provider: p.Name(), Scheme: string(scheme), Reference: ref, Status: StatusActive, Expiry: texp,
		Last4: string(value[len(value)-4:]),
	}
	if t.Sealed, err = s.Sealer.Seal(ctx, value, AAD(t.MerchantAccountID, t.PaymentMethodID, t.ID)); err != nil {
		clear(value)
		s.release(ctx, c, p, ref)
		return nil, nil, false, err
	}
	inserted, err := s.Store.InsertNetworkToken(ctx, t)
	if err != nil || !inserted {
		clear(value)
		s.release(ctx, c, p, ref)
		if err != nil {
			return nil, nil, false, err
		}
		// Another request provisioned first: use its token.
		t, err := s.Store.CurrentNetworkToken(ctx, c.MerchantAccountID, r.Card.Token)
		if err != nil {
			return nil, nil, false, err
		}
		if t.Status != StatusActive {
			return t, nil, false, ErrSuspended
		}
		v, err := s.open(ctx, t, since)
		return t, v, false, err
	}
	s.auditProvision(ctx, o, c, r.Card.Token, "success", map[string]any{"network_token_id": t.ID.String(), "provider": t.Provider})
	return t, value, true, nil
}

// release deletes a token at the TSP that we are not going to store.
func (s *Service) release(ctx context.Context, c vaulting.Caller, p Provider, ref string) {
	if err := p.Delete(context.WithoutCancel(ctx), ref); err != nil {
		s.logError(ctx, c, "deleting an unused network token at the provider failed", p.Name(), err)
	}
}

// --- the API: list, provision, suspend, resume, delete ---

// paymentMethod checks the merchant has the payment method and it is a card.
func (s *Service) paymentMethod(ctx context.Context, c vaulting.Caller, pm uuid.UUID) error {
	vc, err := s.Vaulting.Metadata(ctx, c, pm)
	if err != nil {
		return err
	}
	if vc.Kind != vaultproxy.KindCard {
		return ErrNotCard
	}
	return nil
}

// List returns the payment method's tokens, oldest first, deleted included.
func (s *Service) List(ctx context.Context, c vaulting.Caller, pm uuid.UUID) ([]*NetworkToken, error) {
	if err := s.paymentMethod(ctx, c, pm); err != nil {
		return nil, err
	}
	return s.Store.NetworkTokens(ctx, c.MerchantAccountID, pm)
}

// Get returns one of the payment method's tokens.
func (s *Service) Get(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID) (*NetworkToken, error) {
	if err := s.paymentMethod(ctx, c, pm); err != nil {
		return nil, err
	}
	return s.Store.NetworkToken(ctx, c.MerchantAccountID, pm, id)
}

// Provision makes sure the payment method has a token now. It returns the
// token and whether it was created by this call; an existing active or
// suspended token is returned as it is.
func (s *Service) Provision(ctx context.Context, c vaulting.Caller, pm uuid.UUID) (*NetworkToken, bool, error) {
	if err := s.paymentMethod(ctx, c, pm); err != nil {
		return nil, false, err
	}
	t, err := s.Store.CurrentNetworkToken(ctx, c.MerchantAccountID, pm)
	if err == nil && !t.Expiry.ExpiredSomewhere(s.now()) {
		return t, false, nil
	}
	if err != nil && !errors.Is(err, vaultproxy.ErrNotFound) {
		return nil, false, err
	}
	// The reveal's room is for the provisioning's record: the card number
	// goes to the token service before it is written.
	cards, o, err := s.Vaulting.Reveal(ctx, c, "network-token", "provision", []uuid.UUID{pm}, false)
	if err != nil {
		return nil, false, err
	}
	defer o.Release() // a token found meanwhile records nothing
	defer cards[0].Zero()
	t, value, created, err := s.ensure(ctx, c, cards[0], o)
	clear(value)
	if errors.Is(err, ErrSuspended) {
		return t, false, nil
	}
	return t, created, err
}

// Suspend suspends an active token at the TSP and in the store; suspending
// a suspended token changes nothing.
func (s *Service) Suspend(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID) (*NetworkToken, error) {
	return s.transition(ctx, c, pm, id, "suspend", StatusActive, StatusSuspended, Provider.Suspend)
}

// Resume makes a suspended token active again; resuming an active token
// changes nothing.
func (s *Service) Resume(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID) (*NetworkToken, error) {
	return s.transition(ctx, c, pm, id, "resume", StatusSuspended, StatusActive, Provider.Resume)
}

func (s *Service) transition(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID, op string, from, to Status,
	call func(Provider, context.Context, string) error) (*NetworkToken, error) {
	if err := s.paymentMethod(ctx, c, pm); err != nil {
		return nil, err
	}
	return s.change(ctx, c, pm, id, op, to, call, func(st Status) (bool, error) {
		switch st {
		case to:
			return false, nil
		case StatusDeleted:
			return false, ErrDeleted
		case from:
			return true, nil
		}
		return false, ErrConflict
	})
}

// change runs one lifecycle operation on a token: under the token's row
// lock (Store.ChangeNetworkToken), so that a concurrent operation cannot
// call the TSP in between, it asks needed whether the token's current
// status calls for the operation, calls the TSP with the request's context
// and stores status to. A TSP call that fails changes nothing.
func (s *Service) change(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID, op string, to Status,
	call func(Provider, context.Context, string) error, needed func(Status) (bool, error)) (*NetworkToken, error) {
	var (
		sealed envelope.Sealed
		called bool
	)
	t, err := s.Store.ChangeNetworkToken(ctx, c.MerchantAccountID, pm, id, func(ctx context.Context, t *NetworkToken) (Status, error) {
		if ok, err := needed(t.Status); !ok || err != nil {
			return t.Status, err
		}
		p, err := s.providerOf(t)
		if err != nil {
			return t.Status, err
		}
		sealed = t.Sealed
		// Audited while the row lock is held, so that the trail lists the
		// token's operations in the order they reached the TSP (the next
		// one waits for this lock). The record is what the TSP did; a
		// store that then fails to follow is the request's error.
		detail := map[string]any{"network_token_id": id.String(), "provider": t.Provider}
		if err := call(p, ctx, t.Reference); err != nil {
			s.audit(ctx, c, pm, op, "failure: tsp_error", detail)
			return t.Status, &ProviderError{Op: op, Err: err}
		}
		called = true
		s.audit(ctx, c, pm, op, "success", detail)
		return to, nil
	})
	if err != nil {
		return nil, err
	}
	if called && to == StatusDeleted {
		s.Sealer.Forget(sealed)
	}
	return t, nil
}

// Delete deletes a token at the TSP and shreds its stored value; the row
// stays as status deleted. Deleting a deleted token changes nothing. The
// payment method's next network-token use provisions a new token.
func (s *Service) Delete(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID) error {
	if err := s.paymentMethod(ctx, c, pm); err != nil {
		return err
	}
	return s.remove(ctx, c, pm, id)
}

// DeleteAll deletes every token of the payment method that is not deleted
// yet, at its TSP first, before the payment method itself is deleted (the
// stored rows would go with it, and the tokens would stay live at the
// schemes with nothing left to name them). A payment method that is not
// the caller's card has none. It stops at the first token the TSP does not
// delete, so that the payment method is kept and the deletion can be
// repeated.
func (s *Service) DeleteAll(ctx context.Context, c vaulting.Caller, pm uuid.UUID) error {
	ts, err := s.List(ctx, c, pm)
	if errors.Is(err, vaultproxy.ErrNotFound) || errors.Is(err, ErrNotCard) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Status == StatusDeleted {
			continue
		}
		if err := s.remove(ctx, c, pm, t.ID); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes a token at the TSP and in the store, unless it is deleted
// already (by a concurrent operation, possibly).
func (s *Service) remove(ctx context.Context, c vaulting.Caller, pm, id uuid.UUID) error {
	_, err := s.change(ctx, c, pm, id, "delete", StatusDeleted, Provider.Delete, func(st Status) (bool, error) {
		return st != StatusDeleted, nil
	})
	return err
}

func (s *Service) providerOf(t *NetworkToken) (Provider, error) {
	p, ok := s.Providers.ByName(t.Provider)
	if !ok {
		return nil, &ProviderError{Op: "lookup", Err: errors.New("provider " + t.Provider + " is not configured")}
	}
	return p, nil
}

// auditProvision records a provisioning in the room its reveal held (o,
// from Provision), or without one: a forward's network-token placeholder,
// whose reveal's room is the forward's own record.
func (s *Service) auditProvision(ctx context.Context, o *vaulting.Outcome, c vaulting.Caller, pm uuid.UUID, outcome string, detail map[string]any) {
	if o != nil {
		o.Record(context.WithoutCancel(ctx), outcome, detail)
		return
	}
	s.audit(ctx, c, pm, "provision", outcome, detail)
}

func (s *Service) audit(ctx context.Context, c vaulting.Caller, pm uuid.UUID, purpose, outcome string, detail map[string]any) {
	err := s.Audits.Record(context.WithoutCancel(ctx), vaultproxy.AuditEvent{
		Actor: c.Actor, MerchantAccountID: c.MerchantAccountID, Action: "network-token", Tokens: []uuid.UUID{pm},
		Purpose: purpose, Outcome: outcome, RequestID: c.RequestID, Detail: detail,
	})
	if err != nil {
		s.logError(ctx, c, "network token audit event not recorded", "", err)
	}
}

func (s *Service) logError(ctx context.Context, c vaulting.Caller, msg, provider string, err error) {
	if s.Log != nil {
		s.Log.ErrorContext(ctx, msg, "request_id", c.RequestID, "provider", provider, "err", err)
	}
}
