package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

// A merchant pays with a stored gift card through its one base URL:
// core-api routes the payment to mock-card's gift card redemptions through
// vault-proxy, which fills in the number and PIN (and audits it), and the
// sale is recorded by the state machine: captured at once, a use counted on
// the gift card, its capture and void refused, a refund given back to the
// card. The gift card list shows the balance mock-card keeps. No number or
// PIN is in an answer, a log line or the core database.
func TestGiftCardPayment(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "payment-methods.read", "transactions.write", "transactions.read", "buyers.write")
	core := newCore(s, tok, "")
	pub := publicCore(s, tok, "")
	var seen responses
	// A sandbox gift card ending 1000 starts with a balance of 1000; the
	// PIN 0000 is refused.
	const number, pin, badNumber, badPIN = "6035710000001000", "73195284", "6035710000004242", "0000"
	buyer := core.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "gift-payer"})["id"].(string)
	vault := func(n, p string) string {
		return seen.addMap(pub.ok(t, 201, "POST", "/payment-methods", map[string]any{"method": "gift-card", "number": n, "pin": p, "buyer_id": buyer}))["id"].(string)
	}
	gift, refused := vault(number, pin), vault(badNumber, badPIN)
	payGift := func(t *testing.T, pm string, amount int64, header ...string) map[string]any {
		t.Helper()
		code, tx := pay(t, s, tok, map[string]any{"amount": amount, "currency": "USD", "payment_method": map[string]any{"method": "id", "id": pm}}, header...)
		if code != http.StatusCreated {
			t.Fatalf("payment: %d %v", code, tx)
		}
		return seen.addMap(tx)
	}
	balances := func(t *testing.T) map[string]map[string]any {
		t.Helper()
		out := map[string]map[string]any{}
		for _, it := range seen.addMap(core.ok(t, 200, "GET", "/buyers/gift-cards?buyer_id="+buyer, nil))["items"].([]any) {
			out[it.(map[string]any)["id"].(string)] = it.(map[string]any)
		}
		return out
	}
	usage := func(t *testing.T, pm string) float64 {
		t.Helper()
		return seen.addMap(core.ok(t, 200, "GET", "/payment-methods/"+pm, nil))["usage_count"].(float64)
	}

	if b := balances(t); b[gift]["balance"] != 1000.0 || b[gift]["balance_error_code"] != nil ||
		b[refused]["balance"] != nil || b[refused]["balance_error_code"] != "invalid_pin" {
		t.Fatalf("balances before: %v", b)
	}

	var tx map[string]any
	t.Run("redeemed: a sale, one use, once per Idempotency-Key", func(t *testing.T) {
		tx = payGift(t, gift, 600, "Idempotency-Key", "gift-order-1")
		if tx["status"] != "capture_succeeded" || tx["intent"] != "capture" || tx["captured_amount"] != 600.0 || tx["authorized_amount"] != 600.0 ||
			tx["payment_method"].(map[string]any)["method"] != "gift-card" {
			t.Fatalf("redemption: %v", tx)
		}
		if again := payGift(t, gift, 600, "Idempotency-Key", "gift-order-1"); again["id"] != tx["id"] {
			t.Fatalf("the same key paid again: %v", again)
		}
		if b := balances(t); b[gift]["balance"] != 400.0 || b[gift]["usage_count"] != 1.0 || b[gift]["last_used_at"] == nil {
			t.Fatalf("after one redemption: %v", b[gift])
		}
	})

	t.Run("declined: insufficient balance, invalid PIN; no use counted", func(t *testing.T) {
		d := payGift(t, gift, 401)
		if d["status"] != "authorization_declined" || d["error_code"] != "insufficient_balance" || d["captured_amount"] != 0.0 {
			t.Fatalf("over the balance: %v", d)
		}
		p := payGift(t, refused, 100)
		if p["status"] != "authorization_declined" || p["error_code"] != "invalid_pin" {
			t.Fatalf("wrong PIN: %v", p)
		}
		if u, v := usage(t, gift), usage(t, refused); u != 1 || v != 0 {
			t.Fatalf("usage counts %v and %v, want 1 and 0", u, v)
		}
	})

	t.Run("capture and void refused, refund given back", func(t *testing.T) {
		id := tx["id"].(string)
		for _, tc := range []struct{ path, code string }{{"/capture", "capture_exceeds_authorized"}, {"/void", "transaction_not_voidable"}} {
			code, raw := core.do(t, "POST", "/transactions/"+id+tc.path, map[string]any{})
			if e := apiError(t, raw); code != 422 || e.Code != tc.code {
				t.Fatalf("%s: %d %s", tc.path, code, raw)
			}
		}
		r := seen.addMap(core.ok(t, 201, "POST", "/transactions/"+id+"/refunds", map[string]any{"amount": 100}))
		if r["status"] != "succeeded" || r["amount"] != 100.0 {
			t.Fatalf("refund: %v", r)
		}
		if b := balances(t); b[gift]["balance"] != 500.0 {
			t.Fatalf("after a refund of 100: %v", b[gift])
		}
	})

	t.Run("vault-proxy audits the number and PIN it opened", func(t *testing.T) {
		events, all := forwardAudit(t, s)
		reveals := 0
		for _, e := range events {
			if ph, _ := e.Detail["placeholders"].([]any); e.Action == "detokenize" && e.Outcome == "success" &&
				slices.Contains(e.Tokens, gift) && slices.Contains(ph, any("GIFT_CARD_PIN_1")) {
				reveals++
			}
		}
		if reveals < 2 { // the redemptions and the balances
			t.Fatalf("no audit record of the gift card's reveals: %s", all)
		}
		logging.AssertNoPANIn(t, "audit log", all, number, badNumber)
		assertNoSecurityCode(t, "audit log", all, pin)
	})

	seen.assertNoPAN(t, number, badNumber)
	assertNoCardDataLogged(t, s, number, badNumber)
	coreDump := s.Dump(t, "core")
	logging.AssertNoPANIn(t, "the core database", coreDump, number, badNumber)
	for i, body := range seen {
		assertNoSecurityCode(t, fmt.Sprintf("response %d", i), body, pin)
	}
	assertNoSecurityCode(t, "the logs", s.Logs.String(), pin)
	assertNoSecurityCode(t, "the core database", coreDump, pin)
}
