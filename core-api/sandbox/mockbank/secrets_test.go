package mockbank

import (
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// Every notification (a charge's, a mandate's, a debit's) is signed with
// the webhook secret of the API key its object was created with:
// configured at start-up or set through the sandbox endpoint; a key
// without one, the built-in sandbox key among them, is signed with the
// default secret. The endpoint refuses a bad secret or key.
func TestWebhookSecretPerAPIKey(t *testing.T) {
	const (
		startKey, startSecret = "mb_test_configured_key", "whsec_configured_at_startup"
		setKey, setSecret     = "mb_test_dashboard_key", "whsec_set_in_the_dashboard"
	)
	signed := make(chan string, 20) // the secret each notification verified with
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, s := range []string{SandboxWebhookSecret, startSecret, setSecret} {
			if r.Header.Get(HeaderSignature) == Sign(s, r.Header.Get(HeaderTimestamp), body) {
				signed <- s
				return
			}
		}
		signed <- "none"
	}))
	defer hook.Close()
	m, err := New(Config{Config: simulator.Config{Environment: config.Sandbox, RetryDelay: time.Millisecond},
		WebhookSecrets: map[string]string{startKey: startSecret}, DebitDelay: time.Millisecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(func() { srv.Close(); _ = m.Close() })

	for _, tc := range []struct {
		name, key, method string
		body              any
		status            int
		code              string
	}{
		{"no key", "", http.MethodPut, map[string]any{"webhook_secret": setSecret}, 401, "invalid_api_key"},
		{"another simulator's key", "mr_test_dashboard_key", http.MethodPut, map[string]any{"webhook_secret": setSecret}, 401, "invalid_api_key"},
		{"too short", setKey, http.MethodPut, map[string]any{"webhook_secret": "short"}, 400, "invalid_webhook_secret"},
		{"a separator", setKey, http.MethodPut, map[string]any{"webhook_secret": "whsec_with,a_comma"}, 400, "invalid_webhook_secret"},
		{"an unknown field", setKey, http.MethodPut, map[string]any{"secret": setSecret}, 400, "invalid_json"},
		{"delete without a key", "", http.MethodDelete, nil, 401, "invalid_api_key"},
		{"set", setKey, http.MethodPut, map[string]any{"webhook_secret": setSecret}, 204, ""},
	} {
		if status, out := call(t, tc.method, srv.URL+"/sandbox/webhook-secret", tc.key, tc.body); status != tc.status || tc.code != "" && out["error"] != tc.code {
			t.Fatalf("%s: %d %v, want %d %s", tc.name, status, out, tc.status, tc.code)
		}
	}

	expect := func(t *testing.T, what, want string) {
		t.Helper()
		select {
		case got := <-signed:
			if got != want {
				t.Fatalf("%s: signed with %s, want %s", what, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no notification", what)
		}
	}
	for _, tc := range []struct{ key, want string }{
		{startKey, startSecret}, {setKey, setSecret}, {key, SandboxWebhookSecret},
	} {
		t.Run(tc.key, func(t *testing.T) {
			_, c := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", tc.key, charge("ref-"+tc.key, hook.URL))
			call(t, http.MethodPost, srv.URL+"/sandbox/qr/"+c["id"].(string)+"/pay", "", nil)
			expect(t, "the charge", tc.want)

			_, md := call(t, http.MethodPost, srv.URL+"/v1/mandates", tc.key,
				map[string]any{"reference": "pm-" + tc.key, "scheme": "ach", "currency": "USD", "account_holder_name": "E", "notification_url": hook.URL})
			call(t, http.MethodPost, srv.URL+"/sandbox/mandates/"+md["id"].(string)+"/activate", "", nil)
			expect(t, "the mandate's activation", tc.want)
			expect(t, "the mandate's recurring token", tc.want)

			if status, d := call(t, http.MethodPost, srv.URL+"/v1/debits", tc.key, map[string]any{"reference": "tx-" + tc.key, "account": "pm-" + tc.key,
				"scheme": "ach", "amount": 100, "currency": "USD", "mandate_id": md["id"], "notification_url": hook.URL}); status != http.StatusCreated {
				t.Fatalf("debit: %d %v", status, d)
			}
			expect(t, "the debit", tc.want)
		})
	}

	// Removed, the key's notifications are signed with the default again.
	if status, _ := call(t, http.MethodDelete, srv.URL+"/sandbox/webhook-secret", setKey, nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d", status)
	}
	_, c := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", setKey, charge("ref-after-delete", hook.URL))
	call(t, http.MethodPost, srv.URL+"/sandbox/qr/"+c["id"].(string)+"/pay", "", nil)
	expect(t, "after the delete", SandboxWebhookSecret)

	if _, err := New(Config{Config: simulator.Config{Environment: config.Sandbox}, WebhookSecrets: map[string]string{"mr_test_not_a_bank_key": startSecret}},
		slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a secret of an invalid key was taken")
	}
}

// MOCK_BANK_WEBHOOK_SECRETS gives API keys their secrets at start-up; a
// malformed entry is refused without showing it.
func TestLoadWebhookSecrets(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]string
		ok    bool
	}{
		{"", map[string]string{}, true},
		{"mb_test_key_number_one=whsec_0123456789abcdef, mb_test_key_number_two=whsec_fedcba9876543210",
			map[string]string{"mb_test_key_number_one": "whsec_0123456789abcdef", "mb_test_key_number_two": "whsec_fedcba9876543210"}, true},
		{"mb_test_key_number_one=short", nil, false},
		{"mr_test_key_number_one=whsec_0123456789abcdef", nil, false},
		{"mb_test_key_number_one", nil, false},
	} {
		env := []string{"ENVIRONMENT=sandbox"}
		if tc.value != "" {
			env = append(env, "MOCK_BANK_WEBHOOK_SECRETS="+tc.value)
		}
		l := config.NewLoader(config.EnvironLookup(env))
		cfg := LoadConfig(l)
		err := l.Err()
		if tc.ok != (err == nil) || tc.ok && !maps.Equal(cfg.WebhookSecrets, tc.want) {
			t.Fatalf("%q: %v %v", tc.value, cfg.WebhookSecrets, err)
		}
		if err != nil && strings.Contains(err.Error(), "whsec") {
			t.Fatalf("the error shows the secret: %v", err)
		}
	}
}
