package threeds_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/zone"
)

// vaultRecords stands in for vault-proxy's records over the zone link
// (vaultclient.Client's Card and Delete): what it holds, and what it was
// asked to shred.
type vaultRecords struct {
	mu       sync.Mutex
	records  map[string]zone.CardMetadata // by merchant + token
	shredded []string
}

func (v *vaultRecords) add(merchant string, md zone.CardMetadata) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	md.ID, md.MerchantAccountID, md.Kind = uuid.NewString(), merchant, "card"
	v.records[merchant+"/"+md.ID] = md
	return md.ID
}

func (v *vaultRecords) Card(_ context.Context, merchant, token string) (*zone.CardMetadata, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	md, ok := v.records[merchant+"/"+token]
	if !ok {
		return nil, coreapi.ErrVaultProxyNotFound
	}
	return &md, nil
}

func (v *vaultRecords) Delete(_ context.Context, merchant, _, token string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.records[merchant+"/"+token]; !ok {
		return coreapi.ErrVaultProxyNotFound
	}
	delete(v.records, merchant+"/"+token)
	v.shredded = append(v.shredded, token)
	return nil
}

func cardCondition(id string) coreapi.Optional[coreapi.ThreeDSConditions] {
	return coreapi.Some(coreapi.ThreeDSConditions{CardCondition: &coreapi.ThreeDSCardCondition{ID: id, BIN: "999999", Last4: "9999"}})
}

// A card condition's reference is believed only once vault-proxy shows a
// card-condition record of the merchant account; its display data are
// vault-proxy's; a record is one scenario's; replacing, clearing or
// deleting shreds it, once, and the vault reconciliation counts it held.
func TestCardConditions(t *testing.T) {
	s, db := setup(t)
	v := &vaultRecords{records: map[string]zone.CardMetadata{}}
	s.Vault = v
	cond := v.add("default", zone.CardMetadata{BIN: "40000000", Label: "1091"})
	other := v.add("default", zone.CardMetadata{BIN: "555555", Label: "4444"})
	pmCard := v.add("default", zone.CardMetadata{BIN: "411111", Label: "1111", ExpirationDate: "12/30"})
	elsewhere := v.add("other", zone.CardMetadata{BIN: "411111", Label: "1111"})

	for name, id := range map[string]string{
		"a payment method's card":    pmCard,
		"another merchant account's": elsewhere,
		"no record":                  uuid.NewString(),
		"not a reference":            "fp_abc",
	} {
		_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", ""), Conditions: cardCondition(id)})
		if !refusedAt(err, "/conditions/card_condition/id") {
			t.Errorf("%s: %v", name, err)
		}
	}

	sc := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("N", ""), Conditions: cardCondition(cond)})
	if cc := sc.Conditions.CardCondition; cc == nil || *cc != (coreapi.ThreeDSCardCondition{ID: cond, BIN: "400000", Last4: "1091"}) {
		t.Fatalf("card condition %+v", sc.Conditions.CardCondition)
	}
	got, err := s.Get(ctx, "default", sc.ID)
	if err != nil || *got.Conditions.CardCondition != *sc.Conditions.CardCondition {
		t.Fatalf("stored %+v %v", got, err)
	}
	if _, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", ""), Conditions: cardCondition(cond)}); !refusedAt(err, "/conditions/card_condition/id") {
		t.Fatalf("a second scenario took the reference: %v", err)
	}
	if held, err := db.WithoutPaymentMethod(ctx, []string{cond, other}); err != nil || !slices.Equal(held, []string{other}) {
		t.Fatalf("reconciliation sees %v unclaimed (%v)", held, err)
	}

	// A move or an outcome's change keeps it; a replacement shreds it.
	if _, err := s.Update(ctx, "default", sc.ID, coreapi.ThreeDSScenarioFields{Outcome: outcome("R", ""), Priority: coreapi.Some(1)}); err != nil || len(v.shredded) != 0 {
		t.Fatalf("update: %v, shredded %v", err, v.shredded)
	}
	if _, err := s.Update(ctx, "default", sc.ID, coreapi.ThreeDSScenarioFields{Conditions: cardCondition(other)}); err != nil || !slices.Equal(v.shredded, []string{cond}) {
		t.Fatalf("replace: %v, shredded %v", err, v.shredded)
	}
	if _, err := s.Update(ctx, "default", sc.ID, coreapi.ThreeDSScenarioFields{Conditions: cardCondition(other)}); err != nil || len(v.shredded) != 1 {
		t.Fatalf("the same condition again: %v, shredded %v", err, v.shredded)
	}
	if err := s.Delete(ctx, "default", sc.ID); err != nil || !slices.Equal(v.shredded, []string{cond, other}) {
		t.Fatalf("delete: %v, shredded %v", err, v.shredded)
	}
}

// refusedAt reports whether err is a validation error at pointer.
func refusedAt(err error, pointer string) bool {
	var ve *coreapi.ValidationError
	return errors.As(err, &ve) && len(ve.Problems) == 1 && ve.Problems[0].Pointer == pointer
}
