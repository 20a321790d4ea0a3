package mockcard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// Sandbox gift cards: a number ending 1000 starts with 1000, one ending
// 0000 with nothing, others with 10000.
const (
	giftNumber   = "6035710000001000"
	giftEmpty    = "6035710000000000"
	giftDefault  = "6035710000004242"
	giftPIN      = "4321"
	otherGiftPIN = "98765"
)

func redemption(number, pin string, amount int64) map[string]any {
	return map[string]any{"number": number, "pin": pin, "amount": amount, "currency": "USD"}
}

func decodeRedemption(t *testing.T, code int, raw []byte) mockcard.Redemption {
	t.Helper()
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("status %d: %s", code, raw)
	}
	var r mockcard.Redemption
	if err := json.Unmarshal(raw, &r); err != nil || r.Type != "gift-card-redemption" {
		t.Fatalf("not a redemption (%v): %s", err, raw)
	}
	return r
}

func (s *sim) giftBalance(t *testing.T, number, pin string) (int, int64, []byte) {
	t.Helper()
	code, raw, _ := s.call(t, http.MethodPost, "/v1/gift-cards/balance", "", map[string]any{"number": number, "pin": pin})
	var b mockcard.GiftCardBalance
	_ = json.Unmarshal(raw, &b)
	return code, b.Balance, raw
}

// A redemption takes from the card's balance; the same key and body is
// the same redemption (no second debit); a larger amount than is left is
// declined insufficient_balance with the balance; the sandbox's invalid
// PIN is declined invalid_pin; a refund gives the amount back.
func TestGiftCardRedemptions(t *testing.T) {
	s := start(t, mockcard.Config{})
	if code, bal, raw := s.giftBalance(t, giftNumber, giftPIN); code != 200 || bal != 1000 {
		t.Fatalf("balance = %d %d %s, want 1000", code, bal, raw)
	}
	r := redeemed(t, s, "red-1", redemption(giftNumber, giftPIN, 600))
	if r.Status != "approved" || r.RedeemedAmount != 600 || r.RemainingBalance == nil || *r.RemainingBalance != 400 || r.DeclineCode != nil {
		t.Fatalf("redemption = %+v, want approved with 400 left", r)
	}
	code, raw, h := s.call(t, http.MethodPost, "/v1/gift-cards/redemptions", "red-1", redemption(giftNumber, giftPIN, 600))
	if again := decodeRedemption(t, code, raw); again.ID != r.ID || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same key redeemed again: %+v", again)
	}
	if _, bal, _ := s.giftBalance(t, giftNumber, otherGiftPIN); bal != 400 {
		t.Fatalf("balance after one redemption sent twice = %d, want 400", bal)
	}
	code, raw, _ = s.call(t, http.MethodPost, "/v1/gift-cards/redemptions", "red-1", redemption(giftNumber, giftPIN, 601))
	apiError(t, code, raw, 422, "idempotency_key_reused")

	d := redeemed(t, s, "red-2", redemption(giftNumber, giftPIN, 401))
	if d.Status != "declined" || str(d.DeclineCode) != "insufficient_balance" || d.RedeemedAmount != 0 || *d.RemainingBalance != 400 {
		t.Fatalf("over the balance = %+v, want declined insufficient_balance with 400 left", d)
	}
	if e := redeemed(t, s, "red-3", redemption(giftEmpty, giftPIN, 1)); str(e.DeclineCode) != "insufficient_balance" {
		t.Fatalf("empty card = %+v", e)
	}
	p := redeemed(t, s, "red-4", redemption(giftDefault, mockcard.InvalidPIN, 1))
	if p.Status != "declined" || str(p.DeclineCode) != "invalid_pin" || p.RemainingBalance != nil {
		t.Fatalf("invalid PIN = %+v, want declined invalid_pin without a balance", p)
	}
	code, raw, _ = s.call(t, http.MethodPost, "/v1/gift-cards/balance", "", map[string]any{"number": giftDefault, "pin": mockcard.InvalidPIN})
	apiError(t, code, raw, 422, "invalid_pin")

	code, raw, _ = s.call(t, http.MethodPost, "/v1/gift-cards/redemptions/"+r.ID+"/refunds", "rf-1", map[string]any{"amount": 100})
	if rf := decodeRedemption(t, code, raw); rf.RefundedAmount != 100 || len(rf.Refunds) != 1 || rf.Refunds[0].IdempotencyKey != "rf-1" {
		t.Fatalf("refund = %+v", rf)
	}
	if _, bal, _ := s.giftBalance(t, giftNumber, giftPIN); bal != 500 {
		t.Fatalf("balance after a refund of 100 = %d, want 500", bal)
	}
	code, raw, _ = s.call(t, http.MethodPost, "/v1/gift-cards/redemptions/"+r.ID+"/refunds", "rf-2", map[string]any{"amount": 501})
	apiError(t, code, raw, 422, "amount_exceeds_redeemed")
	code, raw, _ = s.call(t, http.MethodPost, "/v1/gift-cards/redemptions/"+d.ID+"/refunds", "rf-3", nil)
	apiError(t, code, raw, 422, "redemption_not_refundable")

	code, raw, _ = s.call(t, http.MethodGet, "/v1/gift-cards/redemptions?idempotency_key=red-1", "", nil)
	if l := decodeRedemption(t, code, raw); l.ID != r.ID || l.RefundedAmount != 100 {
		t.Fatalf("lookup = %+v", l)
	}
	code, raw, _ = s.call(t, http.MethodGet, "/v1/gift-cards/redemptions?idempotency_key=never", "", nil)
	apiError(t, code, raw, 404, "not_found")

	for _, n := range []string{giftNumber, giftEmpty, giftDefault} {
		for _, secret := range []string{n, giftPIN, otherGiftPIN} {
			if strings.Contains(s.logs.String(), secret) {
				t.Fatalf("a log line holds a gift card's number or PIN %s", secret)
			}
		}
	}
}

func redeemed(t *testing.T, s *sim, key string, body any) mockcard.Redemption {
	t.Helper()
	code, raw, _ := s.call(t, http.MethodPost, "/v1/gift-cards/redemptions", key, body)
	if code != http.StatusCreated {
		t.Fatalf("redemption: %d %s, want 201", code, raw)
	}
	return decodeRedemption(t, code, raw)
}

// withCart is body with cart items.
func withCart(body map[string]any, items ...any) map[string]any {
	body["cart_items"] = items
	return body
}

// Malformed requests are 400 with the field, never the value.
func TestGiftCardRequestsRefused(t *testing.T) {
	s := start(t, mockcard.Config{})
	for _, tc := range []struct {
		name, path, key string
		body            any
		pointer         string
	}{
		{"no key", "/v1/gift-cards/redemptions", "", redemption(giftNumber, giftPIN, 1), "Idempotency-Key"},
		{"short number", "/v1/gift-cards/redemptions", "k", redemption("12345", giftPIN, 1), "/number"},
		{"letters in the PIN", "/v1/gift-cards/redemptions", "k", redemption(giftNumber, "12ab", 1), "/pin"},
		{"zero amount", "/v1/gift-cards/redemptions", "k", redemption(giftNumber, giftPIN, 0), "/amount"},
		{"a cart item without a name", "/v1/gift-cards/redemptions", "k", withCart(redemption(giftNumber, giftPIN, 1), map[string]any{"quantity": 1, "unit_amount": 1}), "/cart_items/0/name"},
		{"balance without a PIN", "/v1/gift-cards/balance", "", map[string]any{"number": giftNumber}, "/pin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw, _ := s.call(t, http.MethodPost, tc.path, tc.key, tc.body)
			e := apiError(t, code, raw, 400, "bad_request")
			if !strings.Contains(string(raw), tc.pointer) || strings.Contains(string(raw), giftNumber) {
				t.Fatalf("refusal %v does not name %s, or quotes the number", e, tc.pointer)
			}
		})
	}
}
