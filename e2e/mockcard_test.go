package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// mockCardCall sends a request to mock-card as core-api's connector will:
// through vault-proxy's detokenized call, with placeholders for the card.
func mockCardCall(t *testing.T, s *stack.Stack, pm, method, path, key, body string, timeoutMS int) (int, []byte, zone.DetokenizeResponse, mockcard.Authorization) {
	t.Helper()
	req := zone.DetokenizeRequest{Destination: stack.MockCardDestination, Method: method, Path: path, Body: body,
		PaymentMethod: []string{pm}, Purpose: "authorization", TimeoutMillis: timeoutMS,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key,
			"authorization": "Bearer " + connector.MockCardSandboxAPIKey}}
	code, raw := detokenize(t, s, "default", req)
	var out zone.DetokenizeResponse
	var a mockcard.Authorization
	if code == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("detokenize answer: %v: %s", err, raw)
		}
		_ = json.Unmarshal(out.Body, &a)
	}
	return code, raw, out, a
}

// authorizationBody is a connector's authorization request for mock-card,
// with the card's security code when withCode (vault-proxy gives it once).
func authorizationBody(amount int64, withCode bool) string {
	code := ""
	if withCode {
		code = `,"security_code":"{{ CARD_SECURITY_CODE_1 }}"`
	}
	return fmt.Sprintf(`{"amount":%d,"currency":"EUR","capture":false,`+
		`"card":{"number":"{{ CARD_NUMBER_1 }}","expiry_month":"{{ CARD_EXPIRATION_DATE_MM_1 }}","expiry_year":"{{ CARD_EXPIRATION_DATE_YYYY_1 }}"%s},`+
		`"billing":{"postal_code":"10115"},"payment_source":"ecommerce","options":{"merchant_id":"m-1"}}`, amount, code)
}

// mockCardStats reads mock-card's counters for the idempotency key of
// reference (connector.MockCardKey: a transaction's id is sent as a key
// of its own) straight from it (core-api never needs them).
func mockCardStats(t *testing.T, s *stack.Stack, reference string) mockcard.KeyStats {
	t.Helper()
	resp, err := http.Get(s.MockCard.URL() + "/sandbox/stats?idempotency_key=" + url.QueryEscape(connector.MockCardKey(reference)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st mockcard.Stats
	if err := json.Unmarshal(raw, &st); err != nil || st.Key == nil {
		t.Fatalf("mock-card stats: %d %s", resp.StatusCode, raw)
	}
	return *st.Key
}

// The stack's mock-card is vault-proxy's destination "mock-card": a
// detokenized call carrying {{ CARD_NUMBER_1 }} reaches it and is
// approved, or declined by amount; a held answer times out at vault-proxy
// and the charge is found by its idempotency key; a capture goes the same
// way. Nothing core-api would receive, and no log line, holds a card
// number.
func TestMockCardThroughTheDetokenizedCall(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write")
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "123")["id"].(string)
	maskedBefore := s.VaultProxy.Detokenize.Masked()
	var answers []byte

	// Approved, with the security code the vault held.
	code, raw, out, a := mockCardCall(t, s, pm, "POST", "/v1/authorizations", "txn-1:authorize", authorizationBody(1299, true), 0)
	if code != http.StatusOK || out.Status != http.StatusCreated || a.Status != "authorized" || a.AuthorizedAmount != 1299 || a.ResponseCode != "00" ||
		a.Scheme == nil || *a.Scheme != "visa" || a.CVVResult == nil || *a.CVVResult != "M" {
		t.Fatalf("approval: %d %s", code, raw)
	}
	if a.SchemeTransactionID == nil || !regexp.MustCompile(`^[0-9]{15}$`).MatchString(*a.SchemeTransactionID) ||
		zone.HoldsCardNumber("scheme_transaction_id", *a.SchemeTransactionID) {
		t.Fatalf("scheme transaction id: %s", raw)
	}
	answers = append(answers, raw...)

	// Sent again after a lost answer (without the security code, which
	// the vault gave once): the same authorization, no second charge.
	code, raw, out, again := mockCardCall(t, s, pm, "POST", "/v1/authorizations", "txn-1:authorize", authorizationBody(1299, false), 0)
	if code != http.StatusOK || out.Status != http.StatusCreated || again.ID != a.ID || out.Headers["idempotent-replayed"] != "true" {
		t.Fatalf("resend: %d %s", code, raw)
	}
	if st := mockCardStats(t, s, "txn-1:authorize"); st.Charges != 1 || st.Requests != 2 {
		t.Fatalf("mock-card stats: %+v", st)
	}

	// Declined by amount.
	code, raw, out, d := mockCardCall(t, s, pm, "POST", "/v1/authorizations", "txn-2:authorize", authorizationBody(4051, false), 0)
	if code != http.StatusOK || out.Status != http.StatusCreated || d.Status != "declined" || d.ResponseCode != "51" ||
		d.DeclineCode == nil || *d.DeclineCode != "insufficient_funds" || d.SchemeTransactionID != nil || d.AuthorizedAmount != 0 {
		t.Fatalf("decline: %d %s", code, raw)
	}
	answers = append(answers, raw...)

	// Held past vault-proxy's timeout: 504 to core-api, but the charge is
	// made, and the lookup by idempotency key finds it.
	code, raw, _, _ = mockCardCall(t, s, pm, "POST", "/v1/authorizations", "txn-3:authorize", authorizationBody(mockcard.AmountHeld, false), 500)
	if e, err := apierror.Parse(raw); err != nil || code != http.StatusGatewayTimeout || e.Code != "forward_timeout" {
		t.Fatalf("held answer: %d %s, want 504 forward_timeout", code, raw)
	}
	code, raw, out, found := mockCardCall(t, s, pm, "GET", "/v1/authorizations?idempotency_key=txn-3:authorize", "lookup-1", "", 0)
	if code != http.StatusOK || out.Status != http.StatusOK || found.Status != "authorized" || found.AuthorizedAmount != mockcard.AmountHeld {
		t.Fatalf("lookup: %d %s", code, raw)
	}
	if st := mockCardStats(t, s, "txn-3:authorize"); st.Charges != 1 {
		t.Fatalf("mock-card stats: %+v", st)
	}
	answers = append(answers, raw...)

	// A capture: no card placeholder, the same wire.
	code, raw, out, c := mockCardCall(t, s, pm, "POST", "/v1/authorizations/"+a.ID+"/captures", "txn-1:capture-1", `{"amount":1299}`, 0)
	if code != http.StatusOK || out.Status != http.StatusOK || c.Status != "captured" || c.CapturedAmount != 1299 {
		t.Fatalf("capture: %d %s", code, raw)
	}
	answers = append(answers, raw...)

	logging.AssertNoPANIn(t, "the answers core-api gets", string(answers), testPANs...)
	if after := s.VaultProxy.Detokenize.Masked(); after != maskedBefore {
		t.Fatalf("vault-proxy masked card numbers in mock-card's answers: %+v -> %+v", maskedBefore, after)
	}
	assertNoCardDataLogged(t, s, testPANs...)
}
