package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

// payment is a POST /transactions body paying amount with stored card pm.
func payment(pm string, amount int64) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "country": "DE",
		"payment_method": map[string]any{"method": "id", "id": pm}}
}

// pay sends POST /transactions through vault-proxy's public listener, as
// a merchant does, and decodes the answer.
func pay(t *testing.T, s *stack.Stack, tok string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body, header...)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("POST /transactions: %d %s", code, raw)
	}
	return code, m
}

// A merchant pays with a stored card through its one base URL: core-api
// creates the transaction, mock-card authorizes it (approved, or declined
// by amount) with the transaction's id as the idempotency reference, and
// the answer is the transaction as the connector left it. The same
// Idempotency-Key sent again is the same transaction and one charge. No
// card number is in any answer, log line or the core database.
func TestCardPayment(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "transactions.write", "transactions.read")
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "123")["id"].(string)
	var answers []map[string]any

	t.Run("approved", func(t *testing.T) {
		code, tx := pay(t, s, tok, payment(pm, 1299))
		answers = append(answers, tx)
		if code != http.StatusCreated || tx["type"] != "transaction" || tx["status"] != "authorization_succeeded" ||
			tx["authorized_amount"] != 1299.0 || tx["captured_amount"] != 0.0 || tx["intent"] != "authorize" {
			t.Fatalf("approval: %d %v", code, tx)
		}
		pmOut := tx["payment_method"].(map[string]any)
		if pmOut["id"] != pm || pmOut["method"] != "card" || pmOut["label"] != "1111" {
			t.Fatalf("payment method: %v", pmOut)
		}
		if st := mockCardStats(t, s, tx["id"].(string)); st.Charges != 1 {
			t.Fatalf("mock-card stats: %+v", st)
		}
	})

	t.Run("intent capture", func(t *testing.T) {
		body := payment(pm, 500)
		body["intent"] = "capture"
		code, tx := pay(t, s, tok, body)
		answers = append(answers, tx)
		if code != http.StatusCreated || tx["status"] != "capture_succeeded" || tx["captured_amount"] != 500.0 {
			t.Fatalf("sale: %d %v", code, tx)
		}
	})

	t.Run("declined by amount", func(t *testing.T) {
		code, tx := pay(t, s, tok, payment(pm, 4051))
		answers = append(answers, tx)
		if code != http.StatusCreated || tx["status"] != "authorization_declined" || tx["error_code"] != "insufficient_funds" ||
			tx["raw_response_code"] != "51" || tx["authorized_amount"] != 0.0 {
			t.Fatalf("decline: %d %v", code, tx)
		}
	})

	t.Run("same Idempotency-Key: one transaction, one charge", func(t *testing.T) {
		code, first := pay(t, s, tok, payment(pm, 777), "Idempotency-Key", "order-777")
		again, second := pay(t, s, tok, payment(pm, 777), "Idempotency-Key", "order-777")
		answers = append(answers, first)
		if code != http.StatusCreated || again != http.StatusCreated || first["id"] != second["id"] {
			t.Fatalf("replay: %d %v, then %d %v", code, first, again, second)
		}
		if st := mockCardStats(t, s, first["id"].(string)); st.Charges != 1 || st.Requests != 1 {
			t.Fatalf("mock-card stats: %+v", st)
		}
	})

	t.Run("refused requests", func(t *testing.T) {
		cases := []struct {
			name   string
			body   map[string]any
			status int
			code   string
		}{
			{"unknown field", map[string]any{"amount": 1, "currency": "EUR", "payment_method": map[string]any{"method": "id", "id": pm}, "colour": "red"}, 400, "bad_request"},
			{"card number in metadata", map[string]any{"amount": 1, "currency": "EUR", "payment_method": map[string]any{"method": "id", "id": pm}, "metadata": map[string]any{"k": pan}}, 400, "bad_request"},
			{"unknown payment method", payment("00000000-0000-4000-8000-000000000000", 100), 400, "bad_request"},
			{"a method other than id", map[string]any{"amount": 1, "currency": "EUR", "payment_method": map[string]any{"method": "card", "id": pm}}, 400, "bad_request"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, tc.body)
				if code != tc.status || apiError(t, raw).Code != tc.code {
					t.Fatalf("%d %s", code, raw)
				}
			})
		}
	})

	t.Run("read back: one, its events, lists by filter", func(t *testing.T) {
		core := newCore(s, tok, "")
		approved, declined := answers[0], answers[2]
		got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+approved["id"].(string), nil)
		if got["status"] != "authorization_succeeded" || got["payment_service_transaction_id"] != approved["payment_service_transaction_id"] {
			t.Fatalf("GET: %v", got)
		}
		events := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+approved["id"].(string)+"/events", nil)["items"].([]any)
		if len(events) != 2 || events[0].(map[string]any)["name"] != "authorization-succeeded" || events[1].(map[string]any)["name"] != "transaction-created" {
			t.Fatalf("events: %v", events)
		}
		list := func(query string) []any {
			t.Helper()
			return core.ok(t, http.StatusOK, http.MethodGet, "/transactions"+query, nil)["items"].([]any)
		}
		if all := list(""); len(all) != 4 {
			t.Fatalf("list: %d items", len(all))
		}
		if d := list("?status=authorization_declined"); len(d) != 1 || d[0].(map[string]any)["id"] != declined["id"] {
			t.Fatalf("declined: %v", d)
		}
		if two := list("?status=authorization_declined&status=capture_succeeded"); len(two) != 2 {
			t.Fatalf("two statuses: %v", two)
		}
		if byPM := list("?payment_method_id=" + pm + "&limit=1"); len(byPM) != 1 {
			t.Fatalf("by payment method: %v", byPM)
		}
		if none := list("?buyer_id=00000000-0000-4000-8000-000000000000"); len(none) != 0 {
			t.Fatalf("by buyer: %v", none)
		}
		for _, tc := range []struct {
			name, path string
			status     int
		}{
			{"unknown transaction", "/transactions/00000000-0000-4000-8000-000000000000", 404},
			{"events of an unknown transaction", "/transactions/00000000-0000-4000-8000-000000000000/events", 404},
			{"id not a UUID", "/transactions/nope", 400},
			{"unknown status", "/transactions?status=paid", 400},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if code, raw := core.do(t, http.MethodGet, tc.path, nil); code != tc.status {
					t.Fatalf("%d %s", code, raw)
				}
			})
		}
		createMerchantAccount(t, s, "other")
		other := newCore(s, s.TokenFor(t, []string{"other"}, "transactions.read"), "other")
		if code, raw := other.do(t, http.MethodGet, "/transactions/"+approved["id"].(string), nil); code != http.StatusNotFound {
			t.Fatalf("another account's transaction: %d %s", code, raw)
		}
	})

	all, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	logging.AssertNoPANIn(t, "core-api's answers", string(all), pan)
	logging.AssertNoPANIn(t, "the core database", s.Dump(t, "core"), pan)
	assertNoCardDataLogged(t, s, pan)
}
