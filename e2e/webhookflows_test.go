package e2e

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/payorch/e2e/stack"
)

// The payment flows beyond a plain card authorization announce their
// steps as outbound webhooks, each delivered with the transaction (or the
// payment method) as the API shows it once that step committed: a card
// payment screened for review and authenticated after a 3-D Secure
// challenge, a redirect payment the buyer approves, and a bank account's
// first debit, which sets up its mandate and is captured on the bank's
// notification.
func TestWebhookEventsOfPaymentFlows(t *testing.T) {
	s := stack.Start(t, withWebhooks())
	tok := s.Token(t, append([]string{"three-ds-scenarios.write", "payment-services.write", "payment-methods.read", "transactions.read"},
		webhookScopes...)...)
	core := newCore(s, tok, "")
	h := newHookReceiver(t)
	sub := core.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": h.srv.URL + "/hooks"})
	secret := sub["secret"].(string)

	// awaitTarget waits for event name about resource id and checks its
	// signature and the target's status.
	awaitTarget := func(t *testing.T, name, id, status string) map[string]any {
		t.Helper()
		r := h.await(t, name+" of "+id, func(r hookRequest) bool {
			return r.Name == name && targetOf(t, r)["id"] == id
		})
		if err := verify(t, secret, r); err != nil {
			t.Fatalf("%s: the official library refuses the signature: %v", name, err)
		}
		target := targetOf(t, r)
		if status != "" && target["status"] != status {
			t.Fatalf("%s: target status %v, want %s", name, target["status"], status)
		}
		return target
	}

	t.Run("anti-fraud review and a 3-D Secure challenge", func(t *testing.T) {
		pm := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
		core.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", antiFraudService("af_test_webhooks", map[string]any{}))
		core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "Y", map[string]any{"amount": 2700}))
		body := screened(pm, 2700, "sess-review")
		body["three_d_secure"] = map[string]any{"amount": 2700}
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" {
			t.Fatalf("pay: %d %v", code, tx)
		}
		id := tx["id"].(string)
		awaitTarget(t, "transaction.anti-fraud-review", id, "")
		awaitTarget(t, "transaction.buyer-approval-pending", id, "buyer_approval_pending")
		if code, _ := s.Do(t, s.PublicClient, http.MethodPost, tx["payment_method"].(map[string]any)["approval_url"].(string), "", nil); code != http.StatusOK {
			t.Fatalf("challenge completion: %d", code)
		}
		awaitTarget(t, "transaction.three-d-secure-authenticated", id, "")
		if target := awaitTarget(t, "transaction.authorized", id, "authorization_succeeded"); target["anti_fraud_decision"] != "review" {
			t.Fatalf("authorized target %v", target)
		}
	})

	t.Run("a redirect payment the buyer approves", func(t *testing.T) {
		code, tx := pay(t, s, tok, gcashPayment(1500, "capture"))
		if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" {
			t.Fatalf("pay: %d %v", code, tx)
		}
		id := tx["id"].(string)
		awaitTarget(t, "transaction.buyer-approval-pending", id, "buyer_approval_pending")
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.PostForm(tx["payment_method"].(map[string]any)["approval_url"].(string), url.Values{"decision": {"approve"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if target := awaitTarget(t, "transaction.captured", id, "capture_succeeded"); target["captured_amount"] != 1500.0 {
			t.Fatalf("captured target %v", target)
		}
	})

	t.Run("a bank account's first debit and its mandate", func(t *testing.T) {
		pm := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", sepaAccount)["id"].(string)
		code, tx := pay(t, s, tok, bankPayment(pm, "EUR", 1800, false))
		if code != http.StatusCreated {
			t.Fatalf("pay: %d %v", code, tx)
		}
		id := tx["id"].(string)
		if target := awaitTarget(t, "transaction.captured", id, "capture_succeeded"); target["captured_amount"] != 1800.0 {
			t.Fatalf("captured target %v", target)
		}
		target := awaitTarget(t, "mandate.created", pm, "")
		if m, _ := target["mandate"].(map[string]any); m == nil || m["status"] != "pending" {
			t.Fatalf("mandate.created target %v", target)
		}
	})
}
