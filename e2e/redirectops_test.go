package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
)

// redirectDecides plays the buyer (or the clock) at mock-redirect about
// transaction tx's payment: the delivery of its notification.
func redirectDecides(t *testing.T, s *stack.Stack, tx map[string]any, action string) map[string]any {
	t.Helper()
	resp, err := http.Post(s.MockRedirect.URL()+"/sandbox/payments/"+tx["payment_service_transaction_id"].(string)+"/"+action, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sandbox %s: %d %v", action, resp.StatusCode, err)
	}
	return out["delivery"].(map[string]any)
}

// Captures, voids and refunds of a redirect payment over the routes and
// their aliases, with Idempotency-Key, through the state machine to
// mock-redirect over HTTP: partial and multiple up to the authorized and
// captured amounts. One whose answer from mock-redirect is lost is settled
// by a sync or the sweep from mock-redirect's record of the payment; a
// notification lost while the buyer decided is settled by the sweep
// without waiting for the reference's expiry.
func TestRedirectOperations(t *testing.T) {
	var link walletLink
	s := stack.Start(t, link.option(t, func(c *coreapp.Config, u string) { c.MockRedirectURL = u }))
	target, _ := url.Parse(s.MockRedirect.URL())
	link.target.Store(target)
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	approved := func(t *testing.T, body map[string]any, want string) string {
		t.Helper()
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" {
			t.Fatalf("redirect payment: %d %v", code, tx)
		}
		if d := redirectDecides(t, s, tx, "approve"); d["status_code"] != 200.0 {
			t.Fatalf("delivery: %v", d)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil); got["status"] != want {
			t.Fatalf("after the approval: %v", got)
		}
		return tx["id"].(string)
	}
	// until polls transaction id until ok or 10 s.
	until := func(t *testing.T, id string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			tx := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
			if ok(tx) || time.Now().After(deadline) {
				return tx
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	t.Run("captures and refunds, partial and multiple", func(t *testing.T) {
		id := approved(t, gcashPayment(1000, "authorize"), "authorization_succeeded")
		for i, st := range []struct {
			path   string
			body   map[string]any
			key    string
			status int
			want   string // in the answer
		}{
			{"/transactions/" + id + "/capture", map[string]any{"amount": 400}, "cap-1", 200, `"captured_amount":400`},
			{"/transactions/" + id + "/capture", map[string]any{"amount": 400}, "cap-1", 200, `"captured_amount":400`}, // the same request
			{"/transactions/" + id + "/capture", map[string]any{"amount": 601}, "cap-2", 422, `"code":"capture_exceeds_authorized"`},
			{"/transactions/" + id + "/void", map[string]any{}, "void-1", 422, `"code":"transaction_not_voidable"`},
			{"/captures", map[string]any{"transaction_id": id, "amount": 600}, "cap-3", 200, `"captured_amount":1000`},
			{"/transactions/" + id + "/refunds", map[string]any{"amount": 300}, "ref-1", 201, `"status":"succeeded"`},
			{"/refunds", map[string]any{"transaction_id": id, "amount": 701}, "ref-2", 422, `"code":"refund_exceeds_captured"`},
			{"/refunds", map[string]any{"transaction_id": id, "amount": 700}, "ref-3", 201, `"status":"succeeded"`},
		} {
			code, raw := core.do(t, http.MethodPost, st.path, st.body, "Idempotency-Key", st.key+"-"+id)
			if code != st.status || !strings.Contains(string(raw), st.want) {
				t.Fatalf("step %d %s: %d %s", i, st.path, code, raw)
			}
		}
		got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
		if got["status"] != "capture_succeeded" || got["captured_amount"] != 1000.0 || got["refunded_amount"] != 1000.0 {
			t.Fatalf("after the operations: %v", got)
		}
		// mock-redirect holds each once.
		req, _ := http.NewRequest(http.MethodGet, s.MockRedirect.URL()+"/v1/payments/"+got["payment_service_transaction_id"].(string), nil)
		req.Header.Set("Authorization", "Bearer "+connector.MockRedirectSandboxAPIKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p struct{ Captures, Refunds []map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || len(p.Captures) != 2 || len(p.Refunds) != 2 {
			t.Fatalf("at mock-redirect: %+v %v", p, err)
		}
	})

	t.Run("void", func(t *testing.T) {
		id := approved(t, gcashPayment(500, "authorize"), "authorization_succeeded")
		code, raw := core.do(t, http.MethodPost, "/voids", map[string]any{"transaction_id": id}, "Idempotency-Key", "void-"+id)
		if code != http.StatusOK || !strings.Contains(string(raw), `"status":"authorization_voided"`) {
			t.Fatalf("void: %d %s", code, raw)
		}
		if code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/capture", nil, "Idempotency-Key", "cap-"+id); code != http.StatusUnprocessableEntity ||
			!strings.Contains(string(raw), `"code":"transaction_not_capturable"`) {
			t.Fatalf("capture after the void: %d %s", code, raw)
		}
	})

	t.Run("a capture's answer lost: synced, captured once", func(t *testing.T) {
		id := approved(t, gcashPayment(1000, "authorize"), "authorization_succeeded")
		captureAnswerLostThenSynced(t, core, &link, id)
	})

	t.Run("a refund's answer lost: the sweep settles it as refunded", func(t *testing.T) {
		id := approved(t, gcashPayment(800, "capture"), "capture_succeeded")
		link.arm("answer", "/refunds")
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/refunds", map[string]any{"amount": 300}, "Idempotency-Key", "lost-ref-"+id)
		if code != http.StatusCreated || !strings.Contains(string(raw), `"status":"processing"`) {
			t.Fatalf("refund, answer lost: %d %s", code, raw)
		}
		if got := until(t, id, func(tx map[string]any) bool { return tx["refunded_amount"] == 300.0 }); got["refund_pending_amount"] != 0.0 {
			t.Fatalf("after the sweep: %v", got)
		}
	})

	t.Run("a void mock-redirect never received: failed by the sweep", func(t *testing.T) {
		id := approved(t, gcashPayment(600, "authorize"), "authorization_succeeded")
		link.arm("request", "/void")
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/void", nil, "Idempotency-Key", "unsent-void-"+id)
		if code != http.StatusOK || !strings.Contains(string(raw), `"status":"authorization_void_pending"`) {
			t.Fatalf("void, request lost: %d %s", code, raw)
		}
		if got := until(t, id, func(tx map[string]any) bool { return tx["status"] != "authorization_void_pending" }); got["status"] != "authorization_succeeded" {
			t.Fatalf("after the sweep: %v", got)
		}
	})

	// A payment service whose webhook secret mock-redirect does not sign
	// with: its notification is refused (401) until mock-redirect gives
	// up, as if lost; the sweep finds the buyer's decision.
	t.Run("a notification lost while the buyer decides: settled by the sweep", func(t *testing.T) {
		ps := newCore(s, s.Token(t, "payment-services.write"), "").ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
			"connector": "mock-redirect", "method": "gcash",
			"credentials": map[string]any{"api_key": "mr_test_merchant_" + uuid.NewString()[:8], "webhook_secret": "whsec_not_what_mock_redirect_signs_with"}})["id"].(string)
		body := gcashPayment(900, "capture")
		body["payment_service_id"] = ps
		_, tx := pay(t, s, tok, body)
		if d := redirectDecides(t, s, tx, "approve"); d["status_code"] != 401.0 {
			t.Fatalf("delivery: %v", d)
		}
		got := until(t, tx["id"].(string), func(tx map[string]any) bool { return tx["status"] != "buyer_approval_pending" })
		if got["status"] != "capture_succeeded" || got["captured_amount"] != 900.0 {
			t.Fatalf("after the sweep: %v", got)
		}
	})
}
