package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/payorch/e2e/stack"
)

// directPayment is a POST /transactions body of a direct integration.
func directPayment(amount int64, intent string) map[string]any {
	return map[string]any{"amount": amount, "currency": "USD", "intent": intent,
		"payment_method": map[string]any{"method": "paypal"}, "integration_client": "web"}
}

// buyerDecides approves or declines order at mock-direct, as the buyer in
// the wallet's SDK.
func buyerDecides(t *testing.T, s *stack.Stack, order, decision string) {
	t.Helper()
	resp, err := http.Post(s.MockDirect.URL()+"/sandbox/orders/"+url.PathEscape(order)+"/"+decision, "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("buyer %s at mock-direct: %v %v", decision, resp, err)
	}
	resp.Body.Close()
}

// completion GETs a completion URL as the buyer's client: no bearer token.
func completion(t *testing.T, s *stack.Stack, u string) (int, map[string]any) {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, http.MethodGet, u, "", nil)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("GET %s: %d %s", u, code, raw)
	}
	return code, m
}

// TestDirectIntegration checks a direct (PayPal-like) wallet integration
// end to end through vault-proxy's public URL. The payment opens an order
// at mock-direct and answers buyer_approval_pending with a `session_token`
// (the API field the wallet SDK starts from); POST
// /transactions/{id}/session exchanges it, once, for the SDK's
// `session_data` and a completion URL. After the buyer approves at the
// simulator, a GET on that URL captures or authorizes the order by the
// payment's intent, through the state machine with its events; a decline
// declines it. Used, expired, forged and other transactions' completion
// tokens are refused and change nothing.
func TestDirectIntegration(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "transactions.write", "transactions.read", "payment-services.write")
	core := newCore(s, tok, "")
	core.c, core.base = s.PublicClient, s.PublicURL

	// start creates a direct payment and exchanges its session_token for
	// the SDK's session_data and the completion URL.
	start := func(t *testing.T, intent string, amount int64) (tx, session map[string]any) {
		t.Helper()
		status, tx := pay(t, s, tok, directPayment(amount, intent))
		if status != http.StatusCreated || tx["status"] != "buyer_approval_pending" || tx["session_token"] == nil ||
			tx["payment_service_transaction_id"] == nil || tx["payment_method"].(map[string]any)["method"] != "paypal" ||
			!strings.HasPrefix(tx["payment_method"].(map[string]any)["approval_url"].(string), s.MockDirect.URL()+"/checkoutnow?token=") {
			t.Fatalf("payment: %d %v", status, tx)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil); got["session_token"] != nil {
			t.Fatalf("the session token is shown again: %v", got)
		}
		session = core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+tx["id"].(string)+"/session",
			map[string]any{"session_token": tx["session_token"]})
		return tx, session
	}
	events := func(t *testing.T, id string) []string {
		t.Helper()
		var names []string
		for _, e := range core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/events", nil)["items"].([]any) {
			names = append([]string{e.(map[string]any)["name"].(string)}, names...)
		}
		return names
	}

	for _, tc := range []struct {
		intent, status, last string
		captured             float64
	}{
		{"capture", "capture_succeeded", "sale-succeeded", 1500},
		{"authorize", "authorization_succeeded", "authorization-succeeded", 0},
	} {
		t.Run("approved, intent "+tc.intent, func(t *testing.T) {
			tx, session := start(t, tc.intent, 1500)
			id := tx["id"].(string)
			sd := session["session_data"].(map[string]any)
			if sd["order_id"] != tx["payment_service_transaction_id"] || sd["client_id"] != "payorch_builtin_sandbox" || sd["currency"] != "USD" ||
				sd["intent"] != tc.intent || sd["funding_source"] != "paypal" || sd["integration_client"] != "web" {
				t.Fatalf("session data: %v", sd)
			}
			u := session["default_completion_url"].(string)
			if !strings.HasPrefix(u, s.PublicURL+"/transactions/"+id+"/complete?token=") {
				t.Fatalf("completion URL %s", u)
			}
			// Before the buyer decided: refused, nothing changed.
			if code, e := completion(t, s, u); code != http.StatusConflict || e["code"] != "buyer_approval_pending" {
				t.Fatalf("completion before approval: %d %v", code, e)
			}
			buyerDecides(t, s, sd["order_id"].(string), "approve")
			code, done := completion(t, s, u)
			if code != http.StatusOK || done["status"] != tc.status || done["authorized_amount"] != 1500.0 || done["captured_amount"] != tc.captured {
				t.Fatalf("completion: %d %v", code, done)
			}
			if got := events(t, id); strings.Join(got, ",") != "transaction-created,approval-requested,"+tc.last {
				t.Fatalf("events %v", got)
			}
			// Used: refused, and the transaction stays as it is.
			if code, e := completion(t, s, u); code != http.StatusConflict || e["code"] != "completion_token_used" {
				t.Fatalf("a used completion token: %d %v", code, e)
			}
			// A second exchange of the same session token is refused.
			code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/session", map[string]any{"session_token": tx["session_token"]})
			if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "session_token_invalid" || e.Details[0].Pointer != "/session_token" {
				t.Fatalf("a second session exchange: %d %s", code, raw)
			}
			if got := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/sync", nil); got["status"] != tc.status {
				t.Fatalf("sync of a completed payment: %v", got)
			}
		})
	}

	t.Run("the buyer declines", func(t *testing.T) {
		tx, session := start(t, "capture", 700)
		buyerDecides(t, s, session["session_data"].(map[string]any)["order_id"].(string), "decline")
		code, done := completion(t, s, session["default_completion_url"].(string))
		if code != http.StatusOK || done["status"] != "authorization_declined" || done["error_code"] != "buyer_declined" || done["authorized_amount"] != 0.0 {
			t.Fatalf("completion after a decline: %d %v", code, done)
		}
		if got := events(t, tx["id"].(string)); got[len(got)-1] != "authorization-declined" {
			t.Fatalf("events %v", got)
		}
	})

	t.Run("sync settles an order the buyer decided", func(t *testing.T) {
		tx, session := start(t, "authorize", 900)
		id := tx["id"].(string)
		if got := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/sync", nil); got["status"] != "buyer_approval_pending" {
			t.Fatalf("sync before the buyer decided: %v", got)
		}
		buyerDecides(t, s, session["session_data"].(map[string]any)["order_id"].(string), "decline")
		if got := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/sync", nil); got["status"] != "authorization_declined" {
			t.Fatalf("sync after the decline: %v", got)
		}
	})

	t.Run("forged, expired and other transactions' completion tokens", func(t *testing.T) {
		a, sa := start(t, "capture", 1000)
		b, _ := start(t, "capture", 1000)
		buyerDecides(t, s, sa["session_data"].(map[string]any)["order_id"].(string), "approve")
		ua, _ := url.Parse(sa["default_completion_url"].(string))
		tokA := ua.Query().Get("token")
		parts := strings.Split(tokA, ".")
		forgedSig := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
		forgedPayload := parts[0] + "." + parts[1] + "x." + parts[2]
		// An expired token: the same transaction's, signed by the same
		// service, valid until a minute ago.
		expired := s.CoreAPI.Transactions().CompletionURL(a["merchant_account_id"].(string), a["id"].(string), time.Now().Add(-time.Minute))
		for _, tc := range []struct {
			name, url string
			status    int
			code      string
		}{
			{"another transaction's", s.PublicURL + "/transactions/" + b["id"].(string) + "/complete?token=" + url.QueryEscape(tokA), 403, "completion_token_mismatch"},
			{"a forged signature", s.PublicURL + "/transactions/" + a["id"].(string) + "/complete?token=" + url.QueryEscape(forgedSig), 403, "completion_token_invalid"},
			{"a changed payload", s.PublicURL + "/transactions/" + a["id"].(string) + "/complete?token=" + url.QueryEscape(forgedPayload), 403, "completion_token_invalid"},
			{"garbage", s.PublicURL + "/transactions/" + a["id"].(string) + "/complete?token=nope", 403, "completion_token_invalid"},
			{"expired", expired, 410, "completion_token_expired"},
			{"none", s.PublicURL + "/transactions/" + a["id"].(string) + "/complete", 400, "bad_request"},
		} {
			code, e := completion(t, s, tc.url)
			if code != tc.status || e["code"] != tc.code {
				t.Errorf("%s: %d %v", tc.name, code, e)
			}
		}
		for _, tx := range []map[string]any{a, b} {
			if got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil); got["status"] != "buyer_approval_pending" {
				t.Fatalf("a refused completion changed the transaction: %v", got)
			}
		}
		if code, done := completion(t, s, sa["default_completion_url"].(string)); code != http.StatusOK || done["status"] != "capture_succeeded" {
			t.Fatalf("the genuine token after the refusals: %d %v", code, done)
		}
	})

	t.Run("refused requests", func(t *testing.T) {
		noClient := directPayment(100, "capture")
		delete(noClient, "integration_client")
		cardWithClient := map[string]any{"amount": 100, "currency": "USD", "integration_client": "web",
			"payment_method": map[string]any{"method": "id", "id": "6f1c2a5e-0c1d-4d2b-9f1e-2b7d1c3e4f50"}}
		badClient := directPayment(100, "capture")
		badClient["integration_client"] = "desktop"
		for _, tc := range []struct {
			name    string
			body    any
			pointer string
		}{
			{"no integration_client", noClient, "/integration_client"},
			{"an unknown integration_client", badClient, "/integration_client"},
			{"integration_client with a stored card", cardWithClient, "/integration_client"},
		} {
			code, raw := core.do(t, http.MethodPost, "/transactions", tc.body)
			if e := apiError(t, raw); code != http.StatusBadRequest || len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer {
				t.Errorf("%s: %d %s", tc.name, code, raw)
			}
		}
		code, raw := core.do(t, http.MethodPost, "/transactions/6f1c2a5e-0c1d-4d2b-9f1e-2b7d1c3e4f50/session", map[string]any{"session_token": "st_x"})
		if code != http.StatusNotFound {
			t.Errorf("session of an unknown transaction: %d %s", code, raw)
		}
		code, raw = core.do(t, http.MethodPost, "/transactions/6f1c2a5e-0c1d-4d2b-9f1e-2b7d1c3e4f50/session", map[string]any{})
		if e := apiError(t, raw); code != http.StatusBadRequest || e.Details[0].Pointer != "/session_token" {
			t.Errorf("session without a token: %d %s", code, raw)
		}
	})

	t.Run("routed by a payment service", func(t *testing.T) {
		ps := core.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{"connector": "mock-direct", "display_name": "Wallet",
			"credentials": map[string]any{"client_id": "merchant_app_42", "client_secret": "s3cret"}, "settings": map[string]any{"merchant_id": "MERCHANT_42"}})
		if ps["method"] != "paypal" {
			t.Fatalf("payment service: %v", ps)
		}
		body := directPayment(1100, "capture")
		body["payment_service_id"] = ps["id"]
		status, tx := pay(t, s, tok, body)
		if status != http.StatusCreated || tx["payment_service_id"] != ps["id"] || tx["status"] != "buyer_approval_pending" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		session := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+tx["id"].(string)+"/session", map[string]any{"session_token": tx["session_token"]})
		sd := session["session_data"].(map[string]any)
		if sd["client_id"] != "merchant_app_42" || sd["merchant_id"] != "MERCHANT_42" {
			t.Fatalf("session data: %v", sd)
		}
		buyerDecides(t, s, sd["order_id"].(string), "approve")
		if code, done := completion(t, s, session["default_completion_url"].(string)); code != http.StatusOK || done["status"] != "capture_succeeded" {
			t.Fatalf("completion through the payment service: %d %v", code, done)
		}
	})

	t.Run("Idempotency-Key: the same payment, one order", func(t *testing.T) {
		key := "direct-" + time.Now().Format(time.RFC3339Nano)
		c1, first := pay(t, s, tok, directPayment(300, "capture"), "Idempotency-Key", key)
		c2, again := pay(t, s, tok, directPayment(300, "capture"), "Idempotency-Key", key)
		if c1 != http.StatusCreated || c2 != c1 || again["id"] != first["id"] || again["payment_service_transaction_id"] != first["payment_service_transaction_id"] {
			t.Fatalf("replay: %d %v / %d %v", c1, first, c2, again)
		}
		var n int
		if err := s.CoreAPI.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM direct_sessions WHERE transaction_id = $1`, first["id"]).Scan(&n); err != nil || n != 1 {
			t.Fatalf("sessions of the payment: %d %v", n, err)
		}
	})
}
