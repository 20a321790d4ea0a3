package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payorch/core-api/sandbox/mockantifraud"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

// antiFraudService is a POST /payment-services body for mock-antifraud,
// the account's default for screening.
func antiFraudService(key string, settings map[string]any) map[string]any {
	return map[string]any{"connector": "mock-antifraud", "display_name": "Screening", "default": true,
		"settings": settings, "credentials": map[string]any{"api_key": key}}
}

// lastAntiFraudRequest is the last request mock-antifraud received with
// key.
func lastAntiFraudRequest(t *testing.T, s *stack.Stack, key string) mockantifraud.Request {
	t.Helper()
	all := s.MockAntiFraud.Requests.All()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].APIKey == key {
			return all[i]
		}
	}
	t.Fatalf("mock-antifraud received nothing with key %s", key)
	return mockantifraud.Request{}
}

func screened(pm string, amount int64, fingerprint string) map[string]any {
	b := payment(pm, amount)
	b["anti_fraud_fingerprint"] = fingerprint
	b["cart_items"] = []map[string]any{{"name": "Kettle", "quantity": 2, "unit_amount": amount / 2, "sku": "KET-1", "external_product_id": "p-1"}}
	return b
}

// Every anti-fraud decision through the HTTP API, the two API versions
// the connector speaks (v2.1 by default, v10.2 when a payment service's
// toggle says so, each request recorded by the simulator), and the toggle
// of one payment service changing that one only.
func TestAntiFraud(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-services.write", "payment-methods.write", "transactions.write", "transactions.read", "buyers.write", "merchant-accounts.write")
	core := newCore(s, tok, "")
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "")["id"].(string)
	buyer := core.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"billing_details": map[string]any{
		"first_name": "Jane", "last_name": "Doe", "email_address": "jane@example.com",
		"address": map[string]any{"country": "DE", "postal_code": "10115"}}})["id"].(string)

	// No anti-fraud service: nothing screened.
	if code, tx := pay(t, s, tok, screened(pm, 1000, "sess-1")); code != http.StatusCreated || tx["anti_fraud_decision"] != nil {
		t.Fatalf("unscreened: %d %v", code, tx)
	}

	const keyA, keyB = "af_test_AAAA", "af_test_BBBB"
	svcA := core.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", antiFraudService(keyA, map[string]any{}))
	if svcA["method"] != "anti-fraud" {
		t.Fatalf("service: %v", svcA)
	}
	// Another account, its own service on v2.1.
	newCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/merchant-accounts", map[string]any{"id": "acct-af", "display_name": "AF"})
	other := newCore(s, tok, "acct-af")
	other.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", antiFraudService(keyB, map[string]any{}))
	otherPM := vaultCardIn(t, s, tok, "acct-af", "5555555555554444")

	type want struct {
		status, decision, errorCode string
		events                      []string
	}
	run := func(t *testing.T, body map[string]any, w want) map[string]any {
		t.Helper()
		body["buyer_id"] = buyer
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != w.status || tx["anti_fraud_decision"] != w.decision {
			t.Fatalf("pay: %d %v %v %v", code, tx["status"], tx["anti_fraud_decision"], tx["error_code"])
		}
		if got, _ := tx["error_code"].(string); got != w.errorCode {
			t.Errorf("error_code %q, want %q", got, w.errorCode)
		}
		if got := eventNames(t, core, tx["id"].(string)); !slices.Equal(got, w.events) {
			t.Errorf("events %v, want %v", got, w.events)
		}
		return tx
	}
	var accepted, review1, review2 map[string]any
	t.Run("v2.1 decisions", func(t *testing.T) {
		accepted = run(t, screened(pm, 1000, "sess-ok"), want{"authorization_succeeded", "accept", "", []string{"transaction-created", "anti-fraud-accepted", "authorization-succeeded"}})
		req := lastAntiFraudRequest(t, s, keyA)
		var body mockantifraud.Request21
		if err := json.Unmarshal(req.Body, &body); err != nil || req.Version != "v2.1" || req.Path != "/v2.1/decisions" {
			t.Fatalf("request %+v: %v", req, err)
		}
		if body.OrderID != accepted["id"] || body.SessionID != "sess-ok" || body.CardBIN != "41111111" || body.CardBrand != "visa" ||
			body.Email != "jane@example.com" || body.FirstName != "Jane" || body.Country != "DE" || body.Postcode != "10115" ||
			len(body.Items) != 1 || body.Items[0].SKU != "KET-1" || body.Amount != 1000 {
			t.Errorf("v2.1 body %+v", body)
		}

		rejected := run(t, screened(pm, 1000, "sess-reject"), want{"authorization_declined", "reject", "anti_fraud_rejected", []string{"transaction-created", "anti-fraud-rejected"}})
		if rejected["payment_service_transaction_id"] != nil {
			t.Errorf("a rejected payment reached the processor: %v", rejected["payment_service_transaction_id"])
		}
		review1 = run(t, screened(pm, 1000, "sess-review"), want{"authorization_succeeded", "review", "", []string{"transaction-created", "anti-fraud-review", "authorization-succeeded"}})
		review2 = run(t, screened(pm, 1000, "sess-review-2"), want{"authorization_succeeded", "review", "", []string{"transaction-created", "anti-fraud-review", "authorization-succeeded"}})
		// fail-closed by default: the provider's error fails the payment.
		run(t, screened(pm, 1000, "sess-error"), want{"authorization_failed", "error", "anti_fraud_error", []string{"transaction-created", "anti-fraud-failed"}})
		// A merchant-initiated payment is not screened.
		mit := screened(pm, 1000, "sess-reject")
		mit["merchant_initiated"], mit["payment_source"], mit["previous_scheme_transaction_id"] = true, "recurring", "123456789012345"
		run(t, mit, want{"authorization_succeeded", "skipped", "", []string{"transaction-created", "anti-fraud-skipped", "authorization-succeeded"}})
	})

	t.Run("review actions", func(t *testing.T) {
		id1, id2 := review1["id"].(string), review2["id"].(string)
		tx := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id1+"/anti-fraud-review", map[string]any{"decision": "accept"})
		if tx["anti_fraud_decision"] != "accept" || tx["status"] != "authorization_succeeded" {
			t.Errorf("accepted review: %v %v", tx["anti_fraud_decision"], tx["status"])
		}
		tx = core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id2+"/anti-fraud-review", map[string]any{"decision": "decline"})
		if tx["anti_fraud_decision"] != "reject" || tx["status"] != "authorization_voided" {
			t.Errorf("declined review: %v %v", tx["anti_fraud_decision"], tx["status"])
		}
		if got := eventNames(t, core, id2); !slices.Equal(got, []string{"transaction-created", "anti-fraud-review", "authorization-succeeded",
			"anti-fraud-review-declined", "void-requested", "void-succeeded"}) {
			t.Errorf("events %v", got)
		}
		for name, tc := range map[string]struct {
			id     string
			body   any
			status int
			code   string
		}{
			"resolved already": {id1, map[string]any{"decision": "decline"}, 422, "transaction_not_in_review"},
			"never flagged":    {accepted["id"].(string), map[string]any{"decision": "accept"}, 422, "transaction_not_in_review"},
			"bad decision":     {id1, map[string]any{"decision": "maybe"}, 400, "bad_request"},
			"unknown field":    {id1, map[string]any{"decision": "accept", "why": "x"}, 400, "bad_request"},
			"unknown tx":       {"00000000-0000-4000-8000-000000000000", map[string]any{"decision": "accept"}, 404, "not_found"},
		} {
			code, raw := core.do(t, http.MethodPost, "/transactions/"+tc.id+"/anti-fraud-review", tc.body)
			if code != tc.status || apiError(t, raw).Code != tc.code {
				t.Errorf("%s: %d %s", name, code, raw)
			}
		}
	})

	t.Run("the v10.2 toggle, one service only", func(t *testing.T) {
		core.ok(t, http.StatusOK, http.MethodPut, "/payment-services/"+svcA["id"].(string),
			map[string]any{"settings": map[string]any{"api_version": "v10.2", "fail_open": true}})
		tx := run(t, screened(pm, 1000, "sess-ok-2"), want{"authorization_succeeded", "accept", "", []string{"transaction-created", "anti-fraud-accepted", "authorization-succeeded"}})
		req := lastAntiFraudRequest(t, s, keyA)
		var body mockantifraud.Request102
		if err := json.Unmarshal(req.Body, &body); err != nil || req.Version != "v10.2" || req.Path != "/v10.2/assessments" {
			t.Fatalf("request %+v: %v", req, err)
		}
		if body.Transaction.Reference != tx["id"] || body.Device.Fingerprint != "sess-ok-2" || body.PaymentMethod.BIN != "41111111" ||
			body.PaymentMethod.Network != "VISA" || body.Purchaser.Name.Given != "Jane" || body.Purchaser.Address.PostalCode != "10115" ||
			len(body.Cart.Lines) != 1 || body.Cart.Lines[0].ProductID != "p-1" || body.Transaction.Amount.MinorUnits != 1000 {
			t.Errorf("v10.2 body %+v", body)
		}
		if strings.Contains(string(req.Body), "session_id") || strings.Contains(string(lastAntiFraudRequest(t, s, keyA).Body), "order_id") {
			t.Errorf("v10.2 sent a v2.1 shape: %s", req.Body)
		}
		run(t, screened(pm, 1000, "sess-reject"), want{"authorization_declined", "reject", "anti_fraud_rejected", []string{"transaction-created", "anti-fraud-rejected"}})
		run(t, screened(pm, 1000, "sess-review"), want{"authorization_succeeded", "review", "", []string{"transaction-created", "anti-fraud-review", "authorization-succeeded"}})
		// fail-open now: the provider's error lets the payment through.
		run(t, screened(pm, 1000, "sess-error"), want{"authorization_succeeded", "error", "", []string{"transaction-created", "anti-fraud-error", "authorization-succeeded"}})

		// The other account's service still speaks v2.1.
		b := screened(otherPM, 1000, "sess-other")
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, b, "x-service-merchant-account-id", "acct-af")
		if code != http.StatusCreated || !strings.Contains(string(raw), `"anti_fraud_decision":"accept"`) {
			t.Fatalf("other account: %d %s", code, raw)
		}
		if req := lastAntiFraudRequest(t, s, keyB); req.Version != "v2.1" {
			t.Errorf("the other account's service sent %s", req.Version)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for name, tc := range map[string]struct {
			body    map[string]any
			pointer string
		}{
			"empty fingerprint": {screened(pm, 1000, ""), "/anti_fraud_fingerprint"},
			"long fingerprint":  {screened(pm, 1000, strings.Repeat("x", 201)), "/anti_fraud_fingerprint"},
		} {
			code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, tc.body)
			if e := apiError(t, raw); code != 400 || len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer {
				t.Errorf("%s: %d %s", name, code, raw)
			}
		}
		code, raw := core.do(t, http.MethodPost, "/payment-services", antiFraudService("k", map[string]any{"api_version": "v3"}))
		if e := apiError(t, raw); code != 400 || len(e.Details) == 0 || e.Details[0].Pointer != "/settings/api_version" {
			t.Errorf("bad api_version: %d %s", code, raw)
		}
	})

	var sent strings.Builder
	for _, r := range s.MockAntiFraud.Requests.All() {
		sent.Write(r.Body)
	}
	logging.AssertNoPANIn(t, "the anti-fraud requests", sent.String(), pan, "5555555555554444")
	logging.AssertNoPANIn(t, "the core database", s.Dump(t, "core"), pan, "5555555555554444")
	s.Logs.AssertNoPAN(t, pan, "5555555555554444")
}

// vaultCardIn vaults pan in merchant account m and returns its token.
func vaultCardIn(t *testing.T, s *stack.Stack, tok, m, pan string) string {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/payment-methods", tok,
		map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()}, "x-service-merchant-account-id", m)
	var pm map[string]any
	if err := json.Unmarshal(raw, &pm); err != nil || code != http.StatusCreated {
		t.Fatalf("vault card in %s: %d %s", m, code, raw)
	}
	return pm["id"].(string)
}
