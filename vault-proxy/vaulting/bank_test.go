package vaulting_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/bank"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
)

// A bank account given with a payment under an idempotency key is vaulted
// under the token derived from it; a retry finds it vaulted and checks
// the details again (CheckBank) without a second record. Bad details are
// field errors, and nothing is vaulted.
func TestVaultBankUnderAToken(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	in := func() bank.Input {
		return bank.Input{Scheme: "sepa", IBAN: []byte("DE89 3704 0044 0532 0130 00"), AccountHolderName: "Erika Mustermann"}
	}
	tok := f.svc.IdempotentToken("m1", "key-1", []byte(`{"method":"bank","scheme":"sepa","iban":"DE89370400440532013000"}`))
	rec, acct, err := f.svc.VaultBank(ctx, caller("m1"), in(), tok)
	if err != nil || rec.Token != tok || rec.Kind != vaultproxy.KindBankAccount || rec.Last4 != "3000" || acct.Scheme != "sepa" || acct.Currency != "EUR" {
		t.Fatalf("VaultBank: %+v %+v %v", rec, acct, err)
	}
	if held, err := f.svc.Vaulted(ctx, caller("m1"), tok); err != nil || !held {
		t.Fatalf("vaulted: %v %v", held, err)
	}
	again, err := vaulting.CheckBank(in())
	if err != nil || again.Scheme != acct.Scheme || again.Country != acct.Country || again.AccountHolderName != acct.AccountHolderName {
		t.Fatalf("CheckBank: %+v %v", again, err)
	}
	again.Zero()

	if rec, _, err := f.svc.VaultBank(ctx, caller("m1"), in(), uuid.Nil); err != nil || rec.Token == tok || rec.Token == uuid.Nil {
		t.Fatalf("a new token: %+v %v", rec, err)
	}

	bad := bank.Input{Scheme: "sepa", IBAN: []byte("DE00370400440532013000"), AccountHolderName: "E"}
	var fe vaulting.FieldErrors
	if _, err := vaulting.CheckBank(bad); !errors.As(err, &fe) || fe[0].Field != "iban" {
		t.Fatalf("CheckBank of a bad IBAN: %v", err)
	}
	badTok := f.svc.IdempotentToken("m1", "key-2", []byte("bad"))
	if _, _, err := f.svc.VaultBank(ctx, caller("m1"), bad, badTok); !errors.As(err, &fe) || fe[0].Field != "iban" {
		t.Fatalf("VaultBank of a bad IBAN: %v", err)
	}
	if held, err := f.svc.Vaulted(ctx, caller("m1"), badTok); err != nil || held {
		t.Fatalf("a bad account was vaulted: %v %v", held, err)
	}
}
