// Package threeds is the sandbox 3-D Secure simulator's rule book: a
// merchant account's ordered scenarios (docs/three-d-secure.md) and their
// evaluation for a payment. It exists outside production only; app does
// not build it there, and the routes are then not registered.
//
// Order is kept contiguous (priorities 1..n) by the store; every change of
// order runs under the account's scenario lock (Tx.LockScenarios), so
// concurrent creates, moves and deletes are applied one after another and
// never leave two rules at one priority.
package threeds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/zone"
)

// Store is the core database as this service uses it; every call is
// scoped to a merchant account, another account's scenario is
// coreapi.ErrNotFound.
type Store interface {
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// Scenario reads one scenario.
	Scenario(ctx context.Context, merchant, id string) (*coreapi.ThreeDSScenario, error)
	// ListScenarios returns up to page.FetchLimit() scenarios in the
	// page's query order (KeysetID over priority, lowest first).
	ListScenarios(ctx context.Context, merchant string, page pagination.Page) ([]coreapi.ThreeDSScenario, error)
	// Scenarios returns every scenario of the account in evaluation order.
	Scenarios(ctx context.Context, merchant string) ([]coreapi.ThreeDSScenario, error)
}

// Tx is the core database within one transaction.
type Tx interface {
	// LockScenarios takes the account's scenario lock until the
	// transaction ends and returns how many scenarios it has.
	LockScenarios(ctx context.Context, merchant string) (int, error)
	// LockScenario reads a scenario, its row locked.
	LockScenario(ctx context.Context, merchant, id string) (*coreapi.ThreeDSScenario, error)
	// InsertScenario stores s at s.Priority, moving those at or after it
	// one place down, and sets its times.
	InsertScenario(ctx context.Context, s *coreapi.ThreeDSScenario) error
	// UpdateScenario writes s's conditions and outcome and sets UpdatedAt.
	UpdateScenario(ctx context.Context, s *coreapi.ThreeDSScenario) error
	// MoveScenario moves scenario id from priority from to priority to,
	// shifting those between by one.
	MoveScenario(ctx context.Context, merchant, id string, from, to int) error
	// DeleteScenario removes scenario id at priority at, moving those
	// after it one place up.
	DeleteScenario(ctx context.Context, merchant, id string, at int) error
}

// Vault is vault-proxy as the scenarios' card conditions need it
// (vaultclient.Client): vault-proxy keeps a card_number condition's number
// as a vaulted record that no payment method holds, and core-api holds
// its reference.
type Vault interface {
	// Card reads a vaulted record's display data.
	Card(ctx context.Context, merchant, token string) (*zone.CardMetadata, error)
	// Delete crypto-shreds a vaulted record.
	Delete(ctx context.Context, merchant, actor, token string) error
}

// vaultActor is who shreds a scenario's card condition, in vault-proxy's
// audit trail.
const vaultActor = "three-ds-scenarios"

// Service manages the scenarios.
type Service struct {
	Store Store
	Vault Vault
	Log   *slog.Logger
}

// Create stores a scenario at f.Priority (last when absent or beyond the
// end).
func (s *Service) Create(ctx context.Context, merchant string, f coreapi.ThreeDSScenarioFields) (*coreapi.ThreeDSScenario, error) {
	if err := f.Validate(true); err != nil {
		return nil, err
	}
	if err := s.checkCardCondition(ctx, merchant, &f); err != nil {
		return nil, err
	}
	sc := &coreapi.ThreeDSScenario{ID: uuid.NewString(), MerchantAccountID: merchant, Outcome: withDefaults(f.Outcome.Value)}
	if c := f.Conditions.Ptr(); c != nil {
		sc.Conditions = *c
	}
	err := s.Store.InTx(ctx, func(tx Tx) error {
		n, err := tx.LockScenarios(ctx, merchant)
		if err != nil {
			return err
		}
		sc.Priority = place(f.Priority, n+1)
		return tx.InsertScenario(ctx, sc)
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// Get reads a scenario.
func (s *Service) Get(ctx context.Context, merchant, id string) (*coreapi.ThreeDSScenario, error) {
	return s.Store.Scenario(ctx, merchant, id)
}

// List reads a page of scenarios in evaluation order.
func (s *Service) List(ctx context.Context, merchant string, page pagination.Page) ([]coreapi.ThreeDSScenario, error) {
	return s.Store.ListScenarios(ctx, merchant, page)
}

// Update replaces the conditions or the outcome given and moves the
// scenario to f.Priority when given (the last place when beyond the end).
func (s *Service) Update(ctx context.Context, merchant, id string, f coreapi.ThreeDSScenarioFields) (*coreapi.ThreeDSScenario, error) {
	if err := f.Validate(false); err != nil {
		return nil, err
	}
	if err := s.checkCardCondition(ctx, merchant, &f); err != nil {
		return nil, err
	}
	var sc *coreapi.ThreeDSScenario
	var replaced *coreapi.ThreeDSCardCondition
	err := s.Store.InTx(ctx, func(tx Tx) error {
		n, err := tx.LockScenarios(ctx, merchant)
		if err != nil {
			return err
		}
		if sc, err = tx.LockScenario(ctx, merchant, id); err != nil {
			return err
		}
		if c := f.Conditions.Ptr(); c != nil {
			replaced = replacedCard(sc.Conditions.CardCondition, c.CardCondition)
			sc.Conditions = *c
		}
		if o := f.Outcome.Ptr(); o != nil {
			sc.Outcome = withDefaults(*o)
		}
		if f.Priority.Set {
			to := place(f.Priority, n)
			if err := tx.MoveScenario(ctx, merchant, id, sc.Priority, to); err != nil {
				return err
			}
			sc.Priority = to
		}
		return tx.UpdateScenario(ctx, sc)
	})
	if err != nil {
		return nil, err
	}
	s.shred(ctx, merchant, replaced)
	return sc, nil
}

// Move is where a move call puts a scenario: right before or right after
// another one of the account. Exactly one is set.
type Move struct {
	BeforeID, AfterID string
}

// ErrMoveRelativeToItself is a move of a scenario before or after itself.
var ErrMoveRelativeToItself = errors.New("a scenario cannot move relative to itself")

// Move places scenario id right before or right after another.
func (s *Service) Move(ctx context.Context, merchant, id string, m Move) (*coreapi.ThreeDSScenario, error) {
	anchor, pointer := m.BeforeID, "/before_id"
	if m.AfterID != "" {
		anchor, pointer = m.AfterID, "/after_id"
	}
	if (m.BeforeID == "") == (m.AfterID == "") {
		return nil, (coreapi.Problems{{Pointer: "", Message: "give exactly one of before_id and after_id", Type: "value_error.move"}}).Err()
	}
	if anchor == id {
		return nil, (coreapi.Problems{{Pointer: pointer, Message: ErrMoveRelativeToItself.Error(), Type: "value_error.move"}}).Err()
	}
	var sc *coreapi.ThreeDSScenario
	err := s.Store.InTx(ctx, func(tx Tx) error {
		if _, err := tx.LockScenarios(ctx, merchant); err != nil {
			return err
		}
		var err error
		if sc, err = tx.LockScenario(ctx, merchant, id); err != nil {
			return err
		}
		other, err := tx.LockScenario(ctx, merchant, anchor)
		if errors.Is(err, coreapi.ErrNotFound) {
			return (coreapi.Problems{{Pointer: pointer, Message: "no such scenario in this merchant account", Type: "value_error.not_found"}}).Err()
		}
		if err != nil {
			return err
		}
		// Taking id out first shifts everything after it up one place.
		to := other.Priority
		if m.AfterID != "" {
			to++
		}
		if sc.Priority < to {
			to--
		}
		if err := tx.MoveScenario(ctx, merchant, id, sc.Priority, to); err != nil {
			return err
		}
		sc.Priority = to
		return tx.UpdateScenario(ctx, sc)
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// Delete removes a scenario, those after it moving up one place, and
// has vault-proxy shred its card condition's number.
func (s *Service) Delete(ctx context.Context, merchant, id string) error {
	var card *coreapi.ThreeDSCardCondition
	err := s.Store.InTx(ctx, func(tx Tx) error {
		if _, err := tx.LockScenarios(ctx, merchant); err != nil {
			return err
		}
		sc, err := tx.LockScenario(ctx, merchant, id)
		if err != nil {
			return err
		}
		card = sc.Conditions.CardCondition
		return tx.DeleteScenario(ctx, merchant, id, sc.Priority)
	})
	if err != nil {
		return err
	}
	s.shred(ctx, merchant, card)
	return nil
}

// checkCardCondition confirms with vault-proxy, over the zone link, that
// f's card condition is a card_number condition's record of the merchant
// account (a card vaulted without an expiry: no payment method's card)
// and fills in its display data, the card's first 6 digits and last 4,
// from the record: a client's request is no authority for either.
func (s *Service) checkCardCondition(ctx context.Context, merchant string, f *coreapi.ThreeDSScenarioFields) error {
	if f.Conditions.Ptr() == nil || f.Conditions.Value.CardCondition == nil {
		return nil
	}
	c := &f.Conditions.Value
	refused := coreapi.Problems{{Pointer: "/conditions/card_condition/id",
		Message: "not a card condition's reference; give conditions.card_number through vault-proxy", Type: "value_error.card_condition"}}.Err()
	if s.Vault == nil {
		return refused
	}
	md, err := s.Vault.Card(ctx, merchant, c.CardCondition.ID)
	if errors.Is(err, coreapi.ErrVaultProxyNotFound) {
		return refused
	}
	if err != nil {
		return fmt.Errorf("3-D Secure scenario's card condition: %w", err)
	}
	if md.Kind != "card" || md.ExpirationDate != "" || len(md.BIN) < 6 || len(md.Label) != 4 {
		return refused
	}
	c.CardCondition = &coreapi.ThreeDSCardCondition{ID: c.CardCondition.ID, BIN: md.BIN[:6], Last4: md.Label}
	return nil
}

// replacedCard is the card condition old that an update to new lets go.
func replacedCard(old, new *coreapi.ThreeDSCardCondition) *coreapi.ThreeDSCardCondition {
	if old == nil || (new != nil && new.ID == old.ID) {
		return nil
	}
	return old
}

// shred has vault-proxy crypto-shred card, a card condition no scenario
// holds any more. A failure leaves a record that no payment method and
// no scenario holds, which the vault reconciliation shreds: it is
// logged, and the change stands.
func (s *Service) shred(ctx context.Context, merchant string, card *coreapi.ThreeDSCardCondition) {
	if card == nil || s.Vault == nil {
		return
	}
	err := s.Vault.Delete(ctx, merchant, vaultActor, card.ID)
	if err != nil && !errors.Is(err, coreapi.ErrVaultProxyNotFound) && s.Log != nil {
		s.Log.WarnContext(ctx, "a 3-D Secure scenario's card condition was not shredded; the vault reconciliation will",
			"merchant_account_id", merchant, "token", card.ID, "err", err)
	}
}

// Candidates are the merchant account's scenarios that may match payment
// p, in evaluation order (coreapi.ThreeDSCandidates): what the 3-D
// Secure connector sends the simulator, which decides.
func (s *Service) Candidates(ctx context.Context, merchant string, p coreapi.ThreeDSPayment) ([]coreapi.ThreeDSScenario, error) {
	all, err := s.Store.Scenarios(ctx, merchant)
	if err != nil {
		return nil, fmt.Errorf("3-D Secure scenarios: %w", err)
	}
	return coreapi.ThreeDSCandidates(all, p), nil
}

// place is the priority asked for, within 1..last; last when not given.
func place(p coreapi.Optional[int], last int) int {
	if !p.Set || p.Null || p.Value > last {
		return last
	}
	return p.Value
}

func withDefaults(o coreapi.ThreeDSOutcome) coreapi.ThreeDSOutcome {
	if o.Version == "" {
		o.Version = coreapi.ThreeDSVersions[0]
	}
	return o
}
