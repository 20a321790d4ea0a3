package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
)

// Bank debit, pix and gift card payments send their cart items to their
// processor, which records them as sent: a name holding a vault-proxy
// placeholder arrives as written (the gift card's request goes through
// vault-proxy's detokenized call, which fills only the connector's own
// placeholders).
func TestCartItemsReachBankPixAndGiftCardProcessors(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	pub := publicCore(s, tok, "")
	sim := bankSim{s}
	items := []any{
		map[string]any{"name": "Kettle {{ CARD_NUMBER_1 }}", "quantity": 1.0, "unit_amount": 1000.0, "sku": "KET-1"},
		map[string]any{"name": "Mug }}{{", "quantity": 2.0, "unit_amount": 250.0},
	}
	// A sandbox gift card ending 1000 starts with a balance of 1000.
	gift := pub.ok(t, http.StatusCreated, http.MethodPost, "/payment-methods",
		map[string]any{"method": "gift-card", "number": "6035710000001000", "pin": "73195284"})["id"].(string)
	account := pub.ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", sepaAccount)["id"].(string)

	for _, tc := range []struct {
		name   string
		body   map[string]any
		status string
		// record is the processor's record of the payment tx.
		record func(t *testing.T, tx map[string]any) map[string]any
	}{
		{"bank debit", bankPayment(account, "EUR", 1500, false), "capture_pending", func(t *testing.T, tx map[string]any) map[string]any {
			return sim.get(t, "/v1/debits/"+tx["payment_service_transaction_id"].(string))
		}},
		{"pix", pixPayment(1500), "capture_pending", func(t *testing.T, tx map[string]any) map[string]any {
			return sim.get(t, "/v1/qr-charges/"+tx["payment_service_transaction_id"].(string))
		}},
		{"gift card", map[string]any{"amount": 600, "currency": "USD", "payment_method": map[string]any{"method": "id", "id": gift}},
			"capture_succeeded", func(t *testing.T, tx map[string]any) map[string]any {
				code, raw := s.Do(t, http.DefaultClient, http.MethodGet, s.MockCard.URL()+"/v1/gift-cards/redemptions?idempotency_key="+
					url.QueryEscape(connector.MockCardKey(tx["id"].(string))), connector.MockCardSandboxAPIKey, nil)
				if code != http.StatusOK {
					t.Fatalf("mock-card redemption: %d %s", code, raw)
				}
				var red map[string]any
				if err := json.Unmarshal(raw, &red); err != nil {
					t.Fatalf("mock-card redemption: %v: %s", err, raw)
				}
				return red
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["cart_items"] = items
			code, tx := pay(t, s, tok, tc.body)
			if code != http.StatusCreated || (tx["status"] != tc.status && tx["status"] != "capture_succeeded") {
				t.Fatalf("payment: %d %v", code, tx)
			}
			if got := tc.record(t, tx)["cart_items"]; !reflect.DeepEqual(got, items) {
				t.Fatalf("the processor was sent cart items %v, want %v", got, items)
			}
		})
	}
	s.Logs.AssertNoPAN(t)
}
