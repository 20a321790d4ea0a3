package vaulting_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
)

// A 3-D Secure scenario's card number is vaulted as any card (sealed
// through the real Vault's transit, revealed for a detokenized call of
// its merchant account only, shredded by Delete) but with no expiry and
// no fingerprint, and with the first 6 digits and last 4 only as its
// display data.
func TestVaultCardCondition(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const pan = "5555555555554444"
	number := []byte(pan)
	rec, err := f.svc.VaultCardCondition(ctx, caller("m1"), number)
	if err != nil {
		t.Fatal(err)
	}
	if string(number) == pan {
		t.Fatal("the number's buffer was not cleared")
	}
	if rec.Kind != vaultproxy.KindCard || rec.BIN != "555555" || rec.Last4 != "4444" || rec.ExpirationDate != "" || rec.Fingerprint != "" || rec.Scheme != "mastercard" {
		t.Fatalf("record %+v", rec)
	}
	if _, err := reveal(ctx, f.svc, caller("m2"), "detokenize", "3ds-authentication", []uuid.UUID{rec.Token}, false); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant account revealed it: %v", err)
	}
	cards, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "3ds-authentication", []uuid.UUID{rec.Token}, false)
	if err != nil || string(cards[0].Number) != pan {
		t.Fatalf("reveal: %v", err)
	}
	cards[0].Zero()
	if strings.Contains(f.dbs.Dump(t, f.dbs.Vault.Name), pan) {
		t.Fatal("the vault database holds the number in clear")
	}
	if err := f.svc.Delete(ctx, caller("m1"), rec.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "3ds-authentication", []uuid.UUID{rec.Token}, false); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("a shredded condition was revealed: %v", err)
	}
}

func TestVaultCardConditionRefusesANonNumber(t *testing.T) {
	f := setup(t)
	for _, in := range []string{"4111111111111112", "41111", "4111-1111-1111-111x"} {
		_, err := f.svc.VaultCardCondition(context.Background(), caller("m1"), []byte(in))
		var fe vaulting.FieldErrors
		if !errors.As(err, &fe) || fe[0].Field != "number" || strings.Contains(fe.Error()+fe[0].Message, in) {
			t.Fatalf("%s: %v", in, err)
		}
	}
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM vaulted_cards`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d records stored (%v)", n, err)
	}
}
