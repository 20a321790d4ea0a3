package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/e2e/stack"
)

// Captures, voids and refunds of an authorized direct payment through
// vault-proxy's public URL against the real mock-direct: partial and
// multiple captures up to the authorized amount, partial refunds up to the
// captured one, a void of another payment; what the state machine refuses
// is refused with its code and changes nothing, at core-api or at the
// wallet.
func TestDirectOperations(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	core.c, core.base = s.PublicClient, s.PublicURL

	// authorized is a direct payment the buyer approved, authorized.
	authorized := func(t *testing.T, amount int64) (id, order string) {
		t.Helper()
		_, tx := pay(t, s, tok, directPayment(amount, "authorize"))
		id = tx["id"].(string)
		session := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/session", map[string]any{"session_token": tx["session_token"]})
		order = session["session_data"].(map[string]any)["order_id"].(string)
		buyerDecides(t, s, order, "approve")
		if code, done := completion(t, s, session["default_completion_url"].(string)); code != http.StatusOK || done["status"] != "authorization_succeeded" {
			t.Fatalf("completion: %d %v", code, done)
		}
		return id, order
	}
	post := func(t *testing.T, want int, path string, body any, key string) map[string]any {
		t.Helper()
		status, raw := core.do(t, http.MethodPost, path, body, "Idempotency-Key", key)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || status != want {
			t.Fatalf("POST %s: %d %s", path, status, raw)
		}
		return m
	}
	refused := func(t *testing.T, path string, body any, key, code string) {
		t.Helper()
		status, raw := core.do(t, http.MethodPost, path, body, "Idempotency-Key", key)
		if e := apiError(t, raw); status != http.StatusConflict && status != http.StatusUnprocessableEntity || e.Code != code {
			t.Fatalf("POST %s: %d %s, want %s", path, status, raw, code)
		}
	}

	id, order := authorized(t, 1000)
	tx := "/transactions/" + id
	got := post(t, http.StatusOK, tx+"/capture", map[string]any{"amount": 400}, "dcap-1")
	if got["captured_amount"] != 400.0 || got["capture_pending_amount"] != 0.0 {
		t.Fatalf("partial capture: %v", got)
	}
	refused(t, tx+"/capture", map[string]any{"amount": 601}, "dcap-2", "capture_exceeds_authorized")
	refused(t, tx+"/void", nil, "dvoid-1", "transaction_not_voidable")
	// The SPEC alias, the transaction in the body.
	got = post(t, http.StatusOK, "/captures", map[string]any{"transaction_id": id, "amount": 600}, "dcap-3")
	if got["captured_amount"] != 1000.0 || got["status"] != "capture_succeeded" {
		t.Fatalf("second capture: %v", got)
	}
	refused(t, tx+"/capture", map[string]any{"amount": 1}, "dcap-4", "capture_exceeds_authorized")
	r := post(t, http.StatusCreated, tx+"/refunds", map[string]any{"amount": 300}, "dref-1")
	if r["status"] != "succeeded" || r["amount"] != 300.0 {
		t.Fatalf("refund: %v", r)
	}
	// The same request again is the same refund, not a second one.
	if again := post(t, http.StatusCreated, tx+"/refunds", map[string]any{"amount": 300}, "dref-1"); again["id"] != r["id"] {
		t.Fatalf("refund again: %v", again)
	}
	refused(t, tx+"/refunds", map[string]any{"amount": 701}, "dref-2", "refund_exceeds_captured")
	post(t, http.StatusCreated, tx+"/refunds", map[string]any{"amount": 700}, "dref-3")
	got = core.ok(t, http.StatusOK, http.MethodGet, tx, nil)
	if got["captured_amount"] != 1000.0 || got["refunded_amount"] != 1000.0 {
		t.Fatalf("after the refunds: %v", got)
	}
	var names []string
	for _, e := range core.ok(t, http.StatusOK, http.MethodGet, tx+"/events", nil)["items"].([]any) {
		names = append([]string{e.(map[string]any)["name"].(string)}, names...)
	}
	if want := "capture-requested,capture-succeeded,capture-requested,capture-succeeded,refund-requested,refund-succeeded,refund-requested,refund-succeeded"; !strings.HasSuffix(strings.Join(names, ","), want) {
		t.Fatalf("events %v", names)
	}

	// The wallet holds two captures and two refunds: the refusals sent
	// nothing, the retry was answered by core-api.
	req, _ := http.NewRequest(http.MethodGet, s.MockDirect.URL()+"/v2/checkout/orders/"+order, nil)
	req.SetBasicAuth("payorch_builtin_sandbox", "sandbox")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var o struct {
		Payments struct {
			Authorizations []struct{ Status string }
			Captures       []struct {
				RequestID string `json:"request_id"`
			}
			Refunds []struct{ Amount struct{ Value int64 } }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || len(o.Payments.Captures) != 2 || len(o.Payments.Refunds) != 2 ||
		o.Payments.Authorizations[0].Status != "CAPTURED" || o.Payments.Refunds[0].Amount.Value != 300 {
		t.Fatalf("the wallet's order: %+v %v", o, err)
	}

	id2, _ := authorized(t, 500)
	tx2 := "/transactions/" + id2
	if got := post(t, http.StatusOK, tx2+"/void", nil, "dvoid-2"); got["status"] != "authorization_voided" {
		t.Fatalf("void: %v", got)
	}
	refused(t, tx2+"/capture", nil, "dcap-5", "transaction_not_capturable")
	refused(t, tx2+"/refunds", map[string]any{"amount": 1}, "dref-4", "transaction_not_refundable")
	if got := core.ok(t, http.StatusOK, http.MethodGet, tx2, nil); got["status"] != "authorization_voided" || got["captured_amount"] != 0.0 {
		t.Fatalf("after the refusals: %v", got)
	}
}
