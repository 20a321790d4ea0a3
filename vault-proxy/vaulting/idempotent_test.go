package vaulting_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
)

// A card given with a payment under an idempotency key is vaulted under a
// token derived from the account, the key and the card's bytes: the same
// three give the same token, any change another; Vaulted tells whether it
// is held, and the security code of a retry can be held for it and its
// holding reported and ended without the code leaving.
func TestIdempotentTokens(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	card := []byte(`{"method":"card","number":"4111111111111111","expiration_date":"12/30","security_code":"123"}`)
	tok := f.svc.IdempotentToken("m1", "key-1", card)
	if tok.Version() != 4 || tok.Variant() != uuid.RFC4122 {
		t.Fatalf("token %s is not shaped as a v4 UUID", tok)
	}
	for name, other := range map[string]uuid.UUID{
		"another account": f.svc.IdempotentToken("m2", "key-1", card),
		"another key":     f.svc.IdempotentToken("m1", "key-2", card),
		"another card":    f.svc.IdempotentToken("m1", "key-1", append(card[:len(card):len(card)], ' ')),
		// Length-prefixed parts: moving a byte from the account to the key
		// does not give the same token.
		"shifted parts": f.svc.IdempotentToken("m", "1key-1", card),
	} {
		if other == tok {
			t.Errorf("%s: the same token", name)
		}
	}
	if again := f.svc.IdempotentToken("m1", "key-1", card); again != tok {
		t.Fatal("the same account, key and card give another token")
	}

	if held, err := f.svc.Vaulted(ctx, caller("m1"), tok); err != nil || held {
		t.Fatalf("before vaulting: %v %v", held, err)
	}
	rec, err := f.svc.VaultCard(ctx, caller("m1"), vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"),
		ExpirationDate: "12/30", SecurityCode: []byte("123"), Token: tok})
	if err != nil || rec.Token != tok {
		t.Fatalf("vault under the token: %v %v", rec, err)
	}
	if held, err := f.svc.Vaulted(ctx, caller("m1"), tok); err != nil || !held {
		t.Fatalf("after vaulting: %v %v", held, err)
	}
	if held, err := f.svc.Vaulted(ctx, caller("m2"), tok); err != nil || held {
		t.Fatalf("in another account: %v %v", held, err)
	}
	if !f.svc.SecurityCodeHeld(tok) {
		t.Fatal("the vaulted code is not held")
	}
	f.svc.ForgetSecurityCode(tok)
	if f.svc.SecurityCodeHeld(tok) {
		t.Fatal("the code is held after ForgetSecurityCode")
	}
	code := []byte("456")
	f.svc.HoldSecurityCode(tok, code)
	if string(code) != "\x00\x00\x00" {
		t.Fatal("HoldSecurityCode left its argument readable")
	}
	cards, err := reveal(ctx, f.svc, caller("m1"), "detokenize", vaulting.PurposeAuthorization, []uuid.UUID{tok}, true)
	if err != nil || string(cards[0].SecurityCode) != "456" {
		t.Fatalf("the retry's code: %v", err)
	}
	if f.svc.SecurityCodeHeld(tok) {
		t.Fatal("the code is held after its authorization")
	}
}
