package mockredirect_test

import (
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// approvedPayment is a payment of 1000 of type typ (sale or
// authorization) its buyer approved.
func approvedPayment(t *testing.T, m *mockredirect.Main, notify, ref, typ string) string {
	t.Helper()
	p := payment(notify, ref, time.Now().Add(time.Hour))
	p["type"], p["amount"] = typ, 1000
	if status, out := call(t, http.MethodPost, m.URL()+"/v1/payments", key, p); status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, out)
	}
	_, out := call(t, http.MethodGet, m.URL()+"/v1/payments?reference="+ref, key, nil)
	id := out["id"].(string)
	if status, out := call(t, http.MethodPost, m.URL()+"/sandbox/payments/"+id+"/approve", "", nil); status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, out)
	}
	return id
}

// Captures, voids and refunds of an approved payment: up to what is
// left of the authorization and of the captures, idempotent by the
// merchant's reference, listed on the payment; each refusal with its code.
func TestOperations(t *testing.T) {
	m, _, notify := start(t)
	auth := approvedPayment(t, m, notify, "ref-auth", "authorization")
	sale := approvedPayment(t, m, notify, "ref-sale", "sale")
	voided := approvedPayment(t, m, notify, "ref-void", "authorization")
	_, pendingOut := call(t, http.MethodPost, m.URL()+"/v1/payments", key, payment(notify, "ref-pending", time.Now().Add(time.Hour)))
	pending := pendingOut["id"].(string)
	type op struct {
		path   string // after /v1/payments/
		key    string
		body   map[string]any
		status int
		code   string
	}
	for i, o := range []op{
		{auth + "/captures", key, map[string]any{"reference": "c1", "amount": 400}, 201, ""},
		{auth + "/captures", key, map[string]any{"reference": "c1", "amount": 400}, 200, ""}, // the same capture
		{auth + "/captures", key, map[string]any{"reference": "c2", "amount": 601}, 422, "amount_exceeds_authorized"},
		{auth + "/captures", key, map[string]any{"reference": "c2", "amount": 0}, 400, "invalid_amount"},
		{auth + "/captures", key, map[string]any{"amount": 10}, 400, "invalid_reference"},
		{auth + "/captures", "mr_test_another_key", map[string]any{"reference": "c3", "amount": 10}, 404, "payment_not_found"},
		{auth + "/void", key, map[string]any{"reference": "v1"}, 422, "payment_captured"},
		{auth + "/refunds", key, map[string]any{"reference": "r1", "amount": 401}, 422, "amount_exceeds_captured"},
		{auth + "/refunds", key, map[string]any{"reference": "r1", "amount": 400}, 201, ""},
		{sale + "/captures", key, map[string]any{"reference": "c1", "amount": 10}, 422, "not_an_authorization"},
		{sale + "/void", key, map[string]any{"reference": "v1"}, 422, "not_an_authorization"},
		{sale + "/refunds", key, map[string]any{"reference": "r1", "amount": 1000}, 201, ""},
		{sale + "/refunds", key, map[string]any{"reference": "r2", "amount": 1}, 422, "amount_exceeds_captured"},
		{voided + "/void", key, map[string]any{"reference": "v1", "amount": 5}, 400, "invalid_amount"},
		{voided + "/void", key, map[string]any{"reference": "v1"}, 200, ""},
		{voided + "/void", key, map[string]any{"reference": "v1"}, 200, ""}, // the same void
		{voided + "/captures", key, map[string]any{"reference": "c1", "amount": 10}, 422, "payment_voided"},
		{pending + "/captures", key, map[string]any{"reference": "c1", "amount": 10}, 422, "payment_pending"},
		{pending + "/refunds", key, map[string]any{"reference": "r1", "amount": 10}, 422, "payment_pending"},
	} {
		if status, out := call(t, http.MethodPost, m.URL()+"/v1/payments/"+o.path, o.key, o.body); status != o.status || o.code != "" && out["error"] != o.code {
			t.Fatalf("%d %s: %d %v, want %d %s", i, o.path, status, out, o.status, o.code)
		}
	}
	_, p := call(t, http.MethodGet, m.URL()+"/v1/payments/"+auth, key, nil)
	captures, refunds := p["captures"].([]any), p["refunds"].([]any)
	if len(captures) != 1 || len(refunds) != 1 || captures[0].(map[string]any)["reference"] != "c1" || refunds[0].(map[string]any)["amount"] != float64(400) {
		t.Fatalf("payment: %v", p)
	}
	if _, v := call(t, http.MethodGet, m.URL()+"/v1/payments/"+voided, key, nil); v["voided"] != true || v["void_reference"] != "v1" {
		t.Fatalf("voided payment: %v", v)
	}
}

// An API key's webhook secret, configured at start-up or set through the
// sandbox endpoint, signs the notifications of its payments; a key
// without one is signed with the default secret; the endpoint refuses a
// bad secret or key.
func TestWebhookSecrets(t *testing.T) {
	const (
		startKey, startSecret = "mr_test_configured_key", "whsec_configured_at_startup"
		setKey, setSecret     = "mr_test_dashboard_key", "whsec_set_in_the_dashboard"
	)
	signed := make(chan string, 10) // the secret each notification verified with
	inbound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, s := range []string{mockredirect.SandboxWebhookSecret, startSecret, setSecret} {
			if r.Header.Get(mockredirect.HeaderSignature) == mockredirect.Sign(s, r.Header.Get(mockredirect.HeaderTimestamp), body) {
				signed <- s
				return
			}
		}
		signed <- "none"
	}))
	defer inbound.Close()
	m, err := mockredirect.New(mockredirect.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"},
		WebhookSecrets: map[string]string{startKey: startSecret}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	for _, tc := range []struct {
		name   string
		key    string
		body   any
		status int
		code   string
	}{
		{"no key", "", map[string]any{"webhook_secret": setSecret}, 401, "invalid_api_key"},
		{"too short", setKey, map[string]any{"webhook_secret": "short"}, 400, "invalid_webhook_secret"},
		{"an unknown field", setKey, map[string]any{"secret": setSecret}, 400, "invalid_json"},
		{"set", setKey, map[string]any{"webhook_secret": setSecret}, 204, ""},
	} {
		if status, out := call(t, http.MethodPut, m.URL()+"/sandbox/webhook-secret", tc.key, tc.body); status != tc.status || tc.code != "" && out["error"] != tc.code {
			t.Fatalf("%s: %d %v, want %d %s", tc.name, status, out, tc.status, tc.code)
		}
	}
	for i, tc := range []struct{ key, want string }{
		{startKey, startSecret}, {setKey, setSecret}, {key, mockredirect.SandboxWebhookSecret},
	} {
		p := payment(inbound.URL, "ref-secret", time.Now().Add(time.Hour))
		p["amount"] = mockredirect.InstantApprovalAmount // approved at once: notified before the answer
		if status, out := call(t, http.MethodPost, m.URL()+"/v1/payments", tc.key, p); status != http.StatusCreated {
			t.Fatalf("%d: create %d %v", i, status, out)
		}
		if got := <-signed; got != tc.want {
			t.Fatalf("%s: signed with %s, want %s", tc.key, got, tc.want)
		}
	}
	if status, _ := call(t, http.MethodDelete, m.URL()+"/sandbox/webhook-secret", setKey, nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d", status)
	}
	p := payment(inbound.URL, "ref-secret-2", time.Now().Add(time.Hour))
	p["amount"] = mockredirect.InstantApprovalAmount
	call(t, http.MethodPost, m.URL()+"/v1/payments", setKey, p)
	if got := <-signed; got != mockredirect.SandboxWebhookSecret {
		t.Fatalf("after the delete: signed with %s", got)
	}
	if _, err := mockredirect.New(mockredirect.Config{Config: simulator.Config{Environment: config.Sandbox}, WebhookSecrets: map[string]string{"sk_live_x": startSecret}},
		slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("a secret of an invalid key was taken")
	}
}

// MOCK_REDIRECT_WEBHOOK_SECRETS gives API keys their secrets at
// start-up; a malformed entry is refused without showing it.
func TestLoadWebhookSecrets(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]string
		ok    bool
	}{
		{"", map[string]string{}, true},
		{"mr_test_key_number_one=whsec_0123456789abcdef, mr_test_key_number_two=whsec_fedcba9876543210",
			map[string]string{"mr_test_key_number_one": "whsec_0123456789abcdef", "mr_test_key_number_two": "whsec_fedcba9876543210"}, true},
		{"mr_test_key_number_one=short", nil, false},
		{"sk_live_key_number_one=whsec_0123456789abcdef", nil, false},
		{"mr_test_key_number_one", nil, false},
	} {
		env := []string{"ENVIRONMENT=sandbox"}
		if tc.value != "" {
			env = append(env, "MOCK_REDIRECT_WEBHOOK_SECRETS="+tc.value)
		}
		l := config.NewLoader(config.EnvironLookup(env))
		cfg := mockredirect.LoadConfig(l)
		err := l.Err()
		if tc.ok != (err == nil) || tc.ok && !maps.Equal(cfg.WebhookSecrets, tc.want) {
			t.Fatalf("%q: %v %v", tc.value, cfg.WebhookSecrets, err)
		}
		if err != nil && strings.Contains(err.Error(), "whsec") {
			t.Fatalf("the error shows the secret: %v", err)
		}
	}
}
