package e2e

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/payorch/e2e/stack"
)

// Both features on one payment, through the HTTP API: the screening comes
// first (a review flag, here), then 3-D Secure's challenge, completed by
// the buyer; the amounts and every step's event are on the transaction.
// Completions sent in parallel apply the challenge once.
func TestThreeDSWithAntiFraud(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "three-ds-scenarios.write", "payment-services.write", "payment-methods.write", "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	pm := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
	core.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", antiFraudService("af_test_both", map[string]any{"api_version": "v10.2"}))
	core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "Y", map[string]any{"amount": 2500}))

	body := screened(pm, 2500, "sess-review")
	body["three_d_secure"] = map[string]any{"amount": 3000}
	code, tx := pay(t, s, tok, body)
	if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" || tx["anti_fraud_decision"] != "review" ||
		tx["authorized_amount"].(float64) != 0 {
		t.Fatalf("pay: %d %v %v %v", code, tx["status"], tx["anti_fraud_decision"], tx["authorized_amount"])
	}
	url := tx["payment_method"].(map[string]any)["approval_url"].(string)

	var wg sync.WaitGroup
	codes := make(chan int, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := s.Do(t, s.PublicClient, http.MethodPost, url, "", nil)
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	var ok, used int
	for c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
			used++
		default:
			t.Errorf("completion answered %d", c)
		}
	}
	if ok != 1 || used != 3 {
		t.Fatalf("%d completions applied, %d refused; want 1 and 3", ok, used)
	}

	done := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil)
	tds := done["three_d_secure"].(map[string]any)
	if done["status"] != "authorization_succeeded" || done["authorized_amount"].(float64) != 2500 || done["amount"].(float64) != 2500 ||
		tds["amount"].(float64) != 3000 || tds["status"] != "Y" || tds["method"] != "challenge" || done["anti_fraud_decision"] != "review" {
		t.Fatalf("after the challenge: %v", done)
	}
	want := []string{"transaction-created", "anti-fraud-review", "three-d-secure-challenge-requested", "three-d-secure-authenticated", "authorization-succeeded"}
	if got := eventNames(t, core, tx["id"].(string)); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+tx["id"].(string)+"/anti-fraud-review", map[string]any{"decision": "accept"})

	// A rejection stops the payment before 3-D Secure is asked.
	body = screened(pm, 2500, "sess-reject")
	body["three_d_secure"] = map[string]any{"amount": 2500}
	if code, tx := pay(t, s, tok, body); code != http.StatusCreated || tx["status"] != "authorization_declined" || tx["three_d_secure"] != nil {
		t.Fatalf("rejected: %d %v", code, tx)
	}
}
