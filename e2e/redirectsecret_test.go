package e2e

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/e2e/stack"
)

// A merchant's own webhook secret end to end: set for its API key at
// mock-redirect (PUT /sandbox/webhook-secret, as in a processor's
// dashboard) and held by its payment service, it signs and verifies the
// notifications about the service's payments, which settle them without
// a sync; the built-in sandbox pair keeps working beside it.
func TestRedirectWebhookSecretPerAPIKey(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	key, secret := "mr_test_merchant_"+uuid.NewString()[:8], "whsec_merchant_"+uuid.NewString()
	code, raw := s.Do(t, http.DefaultClient, http.MethodPut, s.MockRedirect.URL()+"/sandbox/webhook-secret", key, // the key is the bearer
		map[string]any{"webhook_secret": secret})
	if code != http.StatusNoContent {
		t.Fatalf("set the secret at mock-redirect: %d %s", code, raw)
	}
	ps := newCore(s, s.Token(t, "payment-services.write"), "").ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
		"connector": "mock-redirect", "method": "gcash", "credentials": map[string]any{"api_key": key, "webhook_secret": secret}})["id"].(string)

	for _, tc := range []struct{ name, ps string }{{"the payment service's own secret", ps}, {"the built-in sandbox pair", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			body := gcashPayment(1200, "capture")
			if tc.ps != "" {
				body["payment_service_id"] = tc.ps
			}
			_, tx := pay(t, s, tok, body)
			if d := redirectDecides(t, s, tx, "approve"); d["status_code"] != 200.0 {
				t.Fatalf("delivery: %v", d)
			}
			id := tx["id"].(string)
			if got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil); got["status"] != "capture_succeeded" {
				t.Fatalf("after the notification: %v", got)
			}
			if n := countRows(t, s.DBs.CoreDSN, "transaction_events WHERE transaction_id = '"+id+"' AND notification_id IS NOT NULL"); n != 1 {
				t.Fatalf("%d notification events", n)
			}
		})
	}
}
