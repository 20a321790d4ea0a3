package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/e2e/stack"
)

// checkoutScopes are what a merchant's server needs to create checkout
// sessions and pay with them.
var checkoutScopes = []string{"checkout-sessions.write", "checkout-sessions.read", "payment-methods.write",
	"payment-methods.read", "transactions.write", "transactions.read", "buyers.write"}

// vp sends a request to vault-proxy's public listener, decoding the answer.
func vp(t *testing.T, s *stack.Stack, tok, method, path string, body any, header ...string) (int, map[string]any, []byte) {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, method, s.PublicURL+path, tok, body, header...)
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, code, raw)
		}
	}
	return code, m, raw
}

// newCheckoutSession creates a session through vault-proxy.
func newCheckoutSession(t *testing.T, s *stack.Stack, tok string, body any) map[string]any {
	t.Helper()
	code, m, raw := vp(t, s, tok, http.MethodPost, "/checkout/sessions", body)
	if code != http.StatusCreated {
		t.Fatalf("POST /checkout/sessions: %d %s", code, raw)
	}
	return m
}

// sendFields is what the secure fields' iframe sends: no bearer token.
func sendFields(t *testing.T, s *stack.Stack, session string, pm map[string]any) (int, map[string]any, []byte) {
	t.Helper()
	return vp(t, s, "", http.MethodPut, "/checkout/sessions/"+session+"/fields", map[string]any{"payment_method": pm})
}

// expireCheckoutSession moves a session's expiry into the past, as an hour
// going by would.
func expireCheckoutSession(t testing.TB, s *stack.Stack, id string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.DBs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

func checkoutPayment(session string, amount int64) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "country": "DE",
		"payment_method": map[string]any{"method": "checkout-session", "id": session}}
}

// wantError fails unless raw is the error envelope with status and code.
func wantError(t *testing.T, what string, status int, raw []byte, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || apiError(t, raw).Code != wantCode {
		t.Fatalf("%s: %d %s, want %d %s", what, status, raw, wantStatus, wantCode)
	}
}

// A merchant's server creates a checkout session; the buyer's browser (the
// secure fields' iframes) sends the card to vault-proxy with the session
// id alone; the merchant pays with the session. The session is
// single-merchant, used by one payment, expiring and rate-limited; its id
// is never logged in full, and no card number or security code is in an
// answer, a log line or the core database.
func TestCheckoutSessions(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, checkoutScopes...)
	const pan, code = "4111111111111111", "837"
	var sessions []string

	t.Run("create and read; another merchant account does not find it", func(t *testing.T) {
		cs := newCheckoutSession(t, s, tok, map[string]any{"amount": 1299, "currency": "EUR",
			"cart_items": []any{map[string]any{"name": "Mug", "quantity": 1}}, "metadata": map[string]any{"order": "A-1"}})
		if cs["type"] != "checkout-session" || cs["status"] != "created" || cs["amount"] != 1299.0 || cs["payment_method"] != nil ||
			cs["merchant_account_id"] != "default" || cs["expires_at"] == nil {
			t.Fatalf("session: %v", cs)
		}
		id := cs["id"].(string)
		sessions = append(sessions, id)
		if st, got, raw := vp(t, s, tok, http.MethodGet, "/checkout/sessions/"+id, nil); st != http.StatusOK || got["metadata"].(map[string]any)["order"] != "A-1" {
			t.Fatalf("GET: %d %s", st, raw)
		}
		st, _, raw := vp(t, s, tok, http.MethodGet, "/checkout/sessions/"+id, nil, "x-service-merchant-account-id", "other")
		wantError(t, "GET from another account", st, raw, http.StatusNotFound, "not_found")
		st, _, raw = vp(t, s, tok, http.MethodPost, "/checkout/sessions", map[string]any{"currency": "euro", "amount": -1, "extra": 1})
		wantError(t, "bad session body", st, raw, http.StatusBadRequest, "bad_request")
		st, _, raw = vp(t, s, s.Token(t, "transactions.write"), http.MethodPost, "/checkout/sessions", map[string]any{})
		wantError(t, "without the scope", st, raw, http.StatusForbidden, "forbidden")
	})

	var paid map[string]any
	t.Run("the fields' card pays once, with its security code", func(t *testing.T) {
		id := sessions[0]
		st, _, raw := sendFields(t, s, id, map[string]any{"method": "card", "number": "4111111111111112", "expiration_date": futureExpiry()})
		if st != http.StatusBadRequest || !strings.Contains(string(raw), "/payment_method/number") {
			t.Fatalf("a number failing its check digit: %d %s", st, raw)
		}
		st, _, raw = sendFields(t, s, id, map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry(), "security_code": code, "pin": "1"})
		if st != http.StatusBadRequest || !strings.Contains(string(raw), "/payment_method/pin") {
			t.Fatalf("an unknown field: %d %s", st, raw)
		}
		st, out, raw := sendFields(t, s, id, map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry(), "security_code": code})
		card, _ := out["payment_method"].(map[string]any)
		if st != http.StatusOK || card["scheme"] != "visa" || card["label"] != "1111" || card["bin"] != "41111111" {
			t.Fatalf("fields: %d %s", st, raw)
		}
		if _, got, _ := vp(t, s, tok, http.MethodGet, "/checkout/sessions/"+id, nil); got["status"] != "fields_submitted" {
			t.Fatalf("after the fields: %v", got)
		}
		st, _, raw = vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id, 1300))
		if e := apiError(t, raw); st != http.StatusUnprocessableEntity || len(e.Details) != 1 || e.Details[0].Pointer != "/amount" {
			t.Fatalf("another amount than the session's: %d %s", st, raw)
		}
		st, tx, raw := vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id, 1299), "Idempotency-Key", "checkout-1")
		if st != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["cvv_response_code"] != "M" {
			t.Fatalf("payment: %d %s", st, raw)
		}
		paid = tx
		if pmGot := tx["payment_method"].(map[string]any); pmGot["label"] != "1111" || pmGot["scheme"] != "visa" {
			t.Fatalf("payment method: %v", pmGot)
		}
		st, again, raw := vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id, 1299), "Idempotency-Key", "checkout-1")
		if st != http.StatusCreated || again["id"] != tx["id"] {
			t.Fatalf("the same payment again: %d %s", st, raw)
		}
		st, _, raw = vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id, 1299))
		wantError(t, "a second payment", st, raw, http.StatusUnprocessableEntity, "checkout_session_used")
		st, raw = newCore(s, tok, "").do(t, http.MethodPost, "/transactions", checkoutPayment(id, 1299))
		if e := apiError(t, raw); st != http.StatusBadRequest || e.Details[0].Pointer != "/payment_method/method" {
			t.Fatalf("a checkout session payment sent to core-api directly: %d %s", st, raw)
		}
		st, _, raw = sendFields(t, s, id, map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()})
		wantError(t, "fields after the payment", st, raw, http.StatusUnprocessableEntity, "checkout_session_used")
		if _, got, _ := vp(t, s, tok, http.MethodGet, "/checkout/sessions/"+id, nil); got["status"] != "used" {
			t.Fatalf("after the payment: %v", got)
		}
	})

	t.Run("store: true keeps the card; a stored card pays with a new security code", func(t *testing.T) {
		id := newCheckoutSession(t, s, tok, nil)["id"].(string)
		sessions = append(sessions, id)
		if st, _, raw := sendFields(t, s, id, map[string]any{"method": "card", "number": "5555555555554444", "expiration_date": futureExpiry(), "security_code": code}); st != http.StatusOK {
			t.Fatalf("fields: %d %s", st, raw)
		}
		body := checkoutPayment(id, 2500)
		body["store"] = true
		st, tx, raw := vp(t, s, tok, http.MethodPost, "/transactions", body)
		if st != http.StatusCreated || tx["status"] != "authorization_succeeded" {
			t.Fatalf("payment: %d %s", st, raw)
		}
		stored := tx["payment_method"].(map[string]any)["id"].(string)
		if st, pm, raw := vp(t, s, tok, http.MethodGet, "/payment-methods/"+stored, nil); st != http.StatusOK || pm["label"] != "4444" {
			t.Fatalf("stored card: %d %s", st, raw)
		}

		id2 := newCheckoutSession(t, s, tok, nil)["id"].(string)
		sessions = append(sessions, id2)
		st, _, raw = sendFields(t, s, id2, map[string]any{"method": "id", "id": stored})
		if st != http.StatusBadRequest || !strings.Contains(string(raw), "/payment_method/security_code") {
			t.Fatalf("a stored card without its security code: %d %s", st, raw)
		}
		if st, _, raw := sendFields(t, s, id2, map[string]any{"method": "id", "id": stored, "security_code": code}); st != http.StatusOK {
			t.Fatalf("stored card fields: %d %s", st, raw)
		}
		st, tx, raw = vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id2, 700))
		if st != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["cvv_response_code"] != "M" ||
			tx["payment_method"].(map[string]any)["id"] != stored {
			t.Fatalf("payment with the stored card: %d %s", st, raw)
		}
		oid := newCheckoutSessionIn(t, s, tok, "other")
		st, _, raw = sendFields(t, s, oid, map[string]any{"method": "id", "id": stored, "security_code": code})
		wantError(t, "another account's stored card", st, raw, http.StatusNotFound, "not_found")
	})

	t.Run("expired, unknown, incomplete and too many attempts are refused", func(t *testing.T) {
		id := newCheckoutSession(t, s, tok, nil)["id"].(string)
		sessions = append(sessions, id)
		st, _, raw := vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id, 100))
		wantError(t, "a payment before the fields", st, raw, http.StatusUnprocessableEntity, "checkout_session_incomplete")
		expireCheckoutSession(t, s, id)
		st, _, raw = sendFields(t, s, id, map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()})
		wantError(t, "fields of an expired session", st, raw, http.StatusUnprocessableEntity, "checkout_session_expired")
		st, _, raw = vp(t, s, tok, http.MethodPost, "/transactions", checkoutPayment(id, 100))
		wantError(t, "a payment with an expired session", st, raw, http.StatusUnprocessableEntity, "checkout_session_expired")
		st, _, raw = sendFields(t, s, "6f1c1d2e-0000-4000-8000-000000000000", map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()})
		wantError(t, "fields of an unknown session", st, raw, http.StatusNotFound, "not_found")

		id = newCheckoutSession(t, s, tok, nil)["id"].(string)
		sessions = append(sessions, id)
		for i := 0; i < 10; i++ {
			sendFields(t, s, id, map[string]any{"method": "card", "number": "4111111111111112", "expiration_date": futureExpiry()})
		}
		st, _, raw = sendFields(t, s, id, map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()})
		wantError(t, "the 11th submission", st, raw, http.StatusTooManyRequests, "too_many_requests")
	})

	t.Run("allowed origins", func(t *testing.T) {
		st, got, raw := vp(t, s, tok, http.MethodPut, "/checkout/settings", map[string]any{"allowed_origins": []string{"https://Shop.example:443", "http://localhost:8080"}})
		if st != http.StatusOK || strings.Join(toStrings(got["allowed_origins"]), " ") != "https://shop.example http://localhost:8080" {
			t.Fatalf("PUT: %d %s", st, raw)
		}
		for _, bad := range []string{"https://*.example", "http://shop.example", "https://shop.example/path", "javascript:alert(1)", "https://a.example; script-src *"} {
			st, _, raw := vp(t, s, tok, http.MethodPut, "/checkout/settings", map[string]any{"allowed_origins": []string{bad}})
			if e := apiError(t, raw); st != http.StatusBadRequest || e.Details[0].Pointer != "/allowed_origins/0" {
				t.Errorf("%q: %d %s", bad, st, raw)
			}
		}
	})

	if paid == nil {
		return
	}
	s.FlushAudit(t)
	s.Logs.AssertNoPAN(t, pan, "5555555555554444")
	logs := s.Logs.String()
	for _, id := range sessions {
		if strings.Contains(logs, id) {
			t.Errorf("a checkout session id is in the logs in full: %s", id)
		}
	}
	if !strings.Contains(logs, "/checkout/sessions/"+sessions[0][:8]+"…/fields") {
		t.Error("the access log does not show the fields endpoint with the session id masked")
	}
	assertNoSecurityCode(t, "the logs", logs, code)
	assertNoSecurityCode(t, "the core database", s.Dump(t, "core"), code)
}

// newCheckoutSessionIn creates a session in merchant account m.
func newCheckoutSessionIn(t *testing.T, s *stack.Stack, tok, m string) string {
	t.Helper()
	code, got, raw := vp(t, s, tok, http.MethodPost, "/checkout/sessions", map[string]any{}, "x-service-merchant-account-id", m)
	if code != http.StatusCreated {
		t.Fatalf("POST /checkout/sessions in %s: %d %s", m, code, raw)
	}
	return got["id"].(string)
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
