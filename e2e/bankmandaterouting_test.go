package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
)

// A bank account stored with mandate.recurring under a merchant account
// whose default payment service for bank has its own API key and webhook
// secret sets its mandate up through that payment service, as a debit of
// it would go: mock-bank holds the mandate under the service's key alone,
// and the mandate names the service. mock-bank signs the notifications
// about the key's mandates and debits with the secret registered for the
// key (PUT /sandbox/webhook-secret, as in a processor's dashboard): before
// the registration they carry the built-in sandbox secret, which the
// service refuses (401, nothing changes); after it, mock-bank's own
// notifications activate the mandate and settle its merchant-initiated
// charge, which goes through the service. Without the payment service
// the built-in sandbox mock-bank holds it, as before.
func TestBankMandateStoredThroughPaymentService(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	sim := bankSim{s}
	atBank := func(t *testing.T, key, path string) (int, []byte) {
		t.Helper()
		return s.Do(t, http.DefaultClient, http.MethodGet, s.MockBank.URL()+path, key, nil)
	}
	mandateOf := func(t *testing.T, pm string) map[string]any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any)
	}

	t.Run("without a payment service: the built-in sandbox mock-bank", func(t *testing.T) {
		m := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", bacsMandate)["mandate"].(map[string]any)
		if m["payment_service_id"] != nil || m["status"] != "pending" {
			t.Fatalf("mandate %v", m)
		}
		if code, raw := atBank(t, connector.MockBankSandboxAPIKey, "/v1/mandates/"+m["id"].(string)); code != http.StatusOK {
			t.Fatalf("mock-bank's mandate under the built-in key: %d %s", code, raw)
		}
	})

	key := "mb_test_stored_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	const secret = "whsec_the_payment_services_own"
	ps := newCore(s, s.Token(t, "payment-services.write"), "").ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
		"connector": "mock-bank", "method": "bank", "default": true,
		"credentials": map[string]any{"api_key": key, "webhook_secret": secret}})["id"].(string)

	account := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", achMandate)
	pm := account["id"].(string)
	m := account["mandate"].(map[string]any)
	mid := m["id"].(string)
	t.Run("set up under the payment service's API key, and naming it", func(t *testing.T) {
		if m["payment_service_id"] != ps || m["status"] != "pending" {
			t.Fatalf("mandate %v", m)
		}
		if code, raw := atBank(t, key, "/v1/mandates/"+mid); code != http.StatusOK || !strings.Contains(string(raw), `"reference":"`+pm+`"`) {
			t.Fatalf("mock-bank's mandate under the payment service's key: %d %s", code, raw)
		}
		if code, _ := atBank(t, connector.MockBankSandboxAPIKey, "/v1/mandates/"+mid); code != http.StatusNotFound {
			t.Fatalf("the built-in key sees the mandate: %d", code)
		}
	})

	t.Run("its notifications verify with the payment service's secret alone", func(t *testing.T) {
		data := map[string]any{"id": mid, "reference": pm, "scheme": "ach", "status": "active"}
		// The key has no secret of its own at mock-bank yet: mock-bank
		// signs with the built-in sandbox secret, which the payment
		// service refuses.
		out := sim.post(t, "/sandbox/mandates/"+mid+"/activate", map[string]any{})
		for _, d := range out["deliveries"].([]any) {
			if d.(map[string]any)["status_code"] != 401.0 {
				t.Fatalf("a notification signed with the built-in secret: %v", out)
			}
		}
		code, raw := signedBankNotification(t, s, "default", connector.MockBankSandboxWebhookSecret, "mandate.activated", data)
		if code != http.StatusUnauthorized || apiError(t, raw).Code != "unauthorized" {
			t.Fatalf("signed with the built-in secret: %d %s", code, raw)
		}
		if got := mandateOf(t, pm); got["status"] != "pending" {
			t.Fatalf("mandate after refused notifications: %v", got)
		}
		// The merchant registers the payment service's secret for its key
		// at mock-bank; mock-bank's own notifications then verify.
		if code, raw := s.Do(t, http.DefaultClient, http.MethodPut, s.MockBank.URL()+"/sandbox/webhook-secret", key, // the key is the bearer
			map[string]any{"webhook_secret": secret}); code != http.StatusNoContent {
			t.Fatalf("register the secret at mock-bank: %d %s", code, raw)
		}
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/activate", map[string]any{}), 2)
		if got := mandateOf(t, pm); got["status"] != "active" || got["recurring_token_at"] == nil {
			t.Fatalf("mandate after its notifications: %v", got)
		}
	})

	t.Run("a merchant-initiated charge goes through the payment service", func(t *testing.T) {
		// Another default for bank meanwhile: the mandate's service still
		// carries its charges.
		newCore(s, s.Token(t, "payment-services.write"), "").ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
			"connector": "mock-bank", "method": "bank", "default": true,
			"credentials": map[string]any{"api_key": "mb_test_another_default", "webhook_secret": "whsec_another_default_secret"}})
		status, tx := pay(t, s, tok, bankPayment(pm, "USD", 900, true))
		if status != http.StatusCreated || tx["payment_service_id"] != ps || tx["status"] != "capture_pending" {
			t.Fatalf("merchant-initiated charge: %d %v", status, tx)
		}
		code, raw := atBank(t, key, "/v1/debits?mandate_id="+mid)
		if code != http.StatusOK || !strings.Contains(string(raw), `"reference":"`+tx["id"].(string)+`"`) {
			t.Fatalf("mock-bank's debits under the payment service's key: %d %s", code, raw)
		}
		if n := sim.debits(t, mid); n != 0 {
			t.Fatalf("%d debits under the built-in key", n)
		}
		// Settled by mock-bank's own notification, signed with the
		// secret registered for the payment service's key.
		id := tx["id"].(string)
		waitStatus(t, core, id, "capture_succeeded")
		if n := countRows(t, s.DBs.CoreDSN, "transaction_events WHERE transaction_id = '"+id+"' AND notification_id IS NOT NULL"); n != 1 {
			t.Fatalf("%d notification events, want mock-bank's one", n)
		}
	})
}
