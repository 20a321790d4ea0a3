package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
)

// cardPayment is a POST /transactions body paying amount with a card given
// in full, which only vault-proxy takes.
func cardPayment(pan, code string, amount int64) map[string]any {
	card := map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()}
	if code != "" {
		card["security_code"] = code
	}
	return map[string]any{"amount": amount, "currency": "EUR", "country": "DE", "payment_method": card}
}

// mockCardAuthorization is mock-card's record of the authorization sent
// with reference (a transaction's id), as the processor keeps it.
func mockCardAuthorization(t *testing.T, s *stack.Stack, pm, reference string) map[string]any {
	t.Helper()
	code, raw, out, _ := mockCardCall(t, s, pm, http.MethodGet, "/v1/authorizations?idempotency_key="+url.QueryEscape(connector.MockCardKey(reference)), "", "", 10000)
	var a map[string]any
	if code != http.StatusOK || out.Status != http.StatusOK || json.Unmarshal(out.Body, &a) != nil {
		t.Fatalf("mock-card lookup of %s: %d %s", reference, code, raw)
	}
	return a
}

// assertNoSecurityCode fails when text holds code as a value: quoted (JSON),
// after = (a log line's key=value) or between tabs (a database dump's
// column). A bare search would find three digits anywhere.
func assertNoSecurityCode(t *testing.T, what, text, code string) {
	t.Helper()
	for _, form := range []string{`"` + code + `"`, "=" + code + " ", "=" + code + "\n", "\t" + code + "\t", "\t" + code + "\n"} {
		if strings.Contains(text, form) {
			t.Errorf("%s holds the security code (as %q)", what, form)
		}
	}
}

// A merchant pays with a card given in full, through vault-proxy's
// POST /transactions: the card is vaulted as POST /payment-methods vaults
// one, its payment method created in core-api, and the payment goes on
// with the token. The security code reaches the processor for this one
// authorization and is gone after it. store:true keeps the card with its
// scheme transaction id, which a later merchant-initiated payment sends
// without a security code; without store the card serves its one payment.
// Approved authorizations count on the payment method. The same
// Idempotency-Key is the same payment and one card. No card number or
// security code is in an answer, a log line or the core database.
func TestCardGivenInFull(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "payment-methods.read", "transactions.write", "transactions.read", "buyers.write")
	core := newCore(s, tok, "")
	const pan, code = "4111111111111111", "837"
	var seen responses
	payRaw := func(t *testing.T, body any, header ...string) (int, map[string]any) {
		t.Helper()
		status, tx := pay(t, s, tok, body, header...)
		seen.addMap(tx)
		return status, tx
	}
	pmOf := func(tx map[string]any) string { return tx["payment_method"].(map[string]any)["id"].(string) }

	t.Run("approved, the security code sent once, the card not stored", func(t *testing.T) {
		cardsBefore := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
		status, tx := payRaw(t, cardPayment(pan, code, 1299))
		if status != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["cvv_response_code"] != "M" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		pm := pmOf(tx)
		if got := tx["payment_method"].(map[string]any); got["method"] != "card" || got["label"] != "1111" || got["scheme"] != "visa" {
			t.Fatalf("payment method: %v", got)
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cardsBefore+1 {
			t.Fatalf("%d cards vaulted, want 1", n-cardsBefore)
		}
		if a := mockCardAuthorization(t, s, pm, tx["id"].(string)); a["cvv_result"] != "M" || a["previous_scheme_transaction_id"] != nil {
			t.Fatalf("mock-card's record: %v", a)
		}
		if s.VaultProxy.Cards.SecurityCodeHeld(uuid.MustParse(pm)) {
			t.Fatal("the security code is still held after the payment")
		}
		got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)
		if got["usage_count"] != 1.0 || got["cit_usage_count"] != 1.0 || got["last_used_at"] == nil || got["scheme_transaction_id"] != nil {
			t.Fatalf("payment method after the payment: %v", got)
		}
		for _, list := range []string{"/payment-methods"} {
			for _, item := range core.ok(t, http.StatusOK, http.MethodGet, list, nil)["items"].([]any) {
				if item.(map[string]any)["id"] == pm {
					t.Fatalf("%s lists a card that was not stored", list)
				}
			}
		}
		status, again := payRaw(t, payment(pm, 500))
		if e := apiError(t, mustJSON(t, again)); status != http.StatusBadRequest || len(e.Details) != 1 ||
			e.Details[0].Pointer != "/payment_method/id" || e.Details[0].Type != "value_error.payment_method.not_stored" {
			t.Fatalf("a second payment with a card not stored: %d %v", status, again)
		}
		captured := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+tx["id"].(string)+"/capture", map[string]any{})
		if captured["status"] != "capture_succeeded" || captured["captured_amount"] != 1299.0 {
			t.Fatalf("capture of the payment: %v", captured)
		}
	})

	var stored, sti string
	t.Run("store: true keeps the card with the buyer and its scheme transaction id", func(t *testing.T) {
		buyer := core.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"external_identifier": "buyer-raw"})
		body := cardPayment("5555555555554444", code, 2500)
		body["store"], body["buyer_id"], body["payment_source"] = true, buyer["id"], "recurring"
		status, tx := payRaw(t, body)
		if status != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["scheme_transaction_id"] == nil {
			t.Fatalf("payment: %d %v", status, tx)
		}
		stored, sti = pmOf(tx), tx["scheme_transaction_id"].(string)
		got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+stored, nil)
		if got["scheme_transaction_id"] != sti || got["scheme_transaction_id_scheme"] != "mastercard" || got["usage_count"] != 1.0 ||
			got["buyer"].(map[string]any)["id"] != buyer["id"] {
			t.Fatalf("stored payment method: %v", got)
		}
		items := core.ok(t, http.StatusOK, http.MethodGet, "/buyers/payment-methods?buyer_id="+buyer["id"].(string), nil)["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["id"] != stored {
			t.Fatalf("the buyer's payment methods: %v", items)
		}
	})

	t.Run("a later customer-initiated payment with the stored card sends no security code", func(t *testing.T) {
		status, tx := payRaw(t, payment(stored, 700))
		if status != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["cvv_response_code"] != nil {
			t.Fatalf("payment: %d %v", status, tx)
		}
		if a := mockCardAuthorization(t, s, stored, tx["id"].(string)); a["cvv_result"] != nil {
			t.Fatalf("mock-card's record: %v", a)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+stored, nil); got["usage_count"] != 2.0 || got["cit_usage_count"] != 2.0 {
			t.Fatalf("usage: %v", got)
		}
	})

	recurring := func(pm string, amount int64) map[string]any {
		b := payment(pm, amount)
		b["payment_source"], b["merchant_initiated"], b["is_subsequent_payment"] = "recurring", true, true
		return b
	}
	t.Run("merchant-initiated: the stored scheme transaction id, no security code", func(t *testing.T) {
		citBefore := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+stored, nil)["cit_last_used_at"]
		status, tx := payRaw(t, recurring(stored, 990))
		if status != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["merchant_initiated"] != true {
			t.Fatalf("payment: %d %v", status, tx)
		}
		if a := mockCardAuthorization(t, s, stored, tx["id"].(string)); a["previous_scheme_transaction_id"] != sti || a["cvv_result"] != nil ||
			a["merchant_initiated"] != true || a["payment_source"] != "recurring" {
			t.Fatalf("mock-card's record: %v", a)
		}
		got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+stored, nil)
		if got["usage_count"] != 3.0 || got["cit_usage_count"] != 2.0 || got["cit_last_used_at"] != citBefore || got["scheme_transaction_id"] != sti {
			t.Fatalf("usage after a merchant-initiated payment: %v", got)
		}
		body := recurring(stored, 991)
		body["previous_scheme_transaction_id"] = "MCCABC2340101"
		_, tx = payRaw(t, body)
		if a := mockCardAuthorization(t, s, stored, tx["id"].(string)); tx["status"] != "authorization_succeeded" || a["previous_scheme_transaction_id"] != "MCCABC2340101" {
			t.Fatalf("the request's previous scheme transaction id: %v %v", tx, a)
		}
	})

	t.Run("merchant-initiated without a scheme transaction id is declined", func(t *testing.T) {
		pm := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
		status, tx := payRaw(t, recurring(pm, 990))
		if status != http.StatusCreated || tx["status"] != "authorization_declined" || tx["error_code"] != "previous_scheme_transaction_id_required" ||
			tx["raw_response_code"] != "12" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil); got["usage_count"] != 0.0 || got["last_used_at"] != nil {
			t.Fatalf("a declined payment counted: %v", got)
		}
	})

	t.Run("a client's security code header on core-api is not believed", func(t *testing.T) {
		pm := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
		code, raw := core.do(t, http.MethodPost, "/transactions", payment(pm, 1000), zone.SecurityCodeHeldHeader, pm)
		var tx map[string]any
		if err := json.Unmarshal(raw, &tx); err != nil || code != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["cvv_response_code"] != nil {
			t.Fatalf("payment: %d %s", code, raw)
		}
	})

	t.Run("a client's security code header never crosses vault-proxy", func(t *testing.T) {
		// Vaulted with a code, which vault-proxy holds: had the header
		// crossed, core-api would have had it confirmed and sent.
		pm := vaultCard(t, s, tok, "4111111111111111", code)["id"].(string)
		status, tx := payRaw(t, payment(pm, 1000), zone.SecurityCodeHeldHeader, pm)
		if status != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["cvv_response_code"] != nil {
			t.Fatalf("payment: %d %v", status, tx)
		}
	})

	t.Run("the same Idempotency-Key: one card, one transaction, one charge", func(t *testing.T) {
		cardsBefore := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
		body := cardPayment(pan, code, 4321)
		status, first := payRaw(t, body, "Idempotency-Key", "raw-1")
		again, second := payRaw(t, body, "Idempotency-Key", "raw-1")
		if status != http.StatusCreated || again != http.StatusCreated || first["id"] != second["id"] || pmOf(first) != pmOf(second) {
			t.Fatalf("replay: %d %v, then %d %v", status, first, again, second)
		}
		if st := mockCardStats(t, s, first["id"].(string)); st.Charges != 1 || st.Requests != 1 {
			t.Fatalf("mock-card stats: %+v", st)
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cardsBefore+1 {
			t.Fatalf("%d cards vaulted, want 1", n-cardsBefore)
		}
		if s.VaultProxy.Cards.SecurityCodeHeld(uuid.MustParse(pmOf(first))) {
			t.Fatal("the retry's security code is still held")
		}
		// Another card under the key: refused as the key's reuse, and its
		// card withdrawn again.
		other := cardPayment("4000056655665556", code, 4321)
		status, refused := payRaw(t, other, "Idempotency-Key", "raw-1")
		if status != http.StatusUnprocessableEntity || refused["code"] != "idempotency_key_reused" {
			t.Fatalf("another card under the key: %d %v", status, refused)
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cardsBefore+1 {
			t.Fatalf("%d cards vaulted, want 1", n-cardsBefore)
		}
	})

	t.Run("refusals vault nothing, or withdraw what was vaulted", func(t *testing.T) {
		cardsBefore := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
		pmsBefore := countRows(t, s.DBs.CoreDSN, "payment_methods")
		unknownField := cardPayment(pan, code, 100)
		unknownField["payment_method"].(map[string]any)["colour"] = "red"
		badCurrency := cardPayment(pan, code, 100)
		badCurrency["currency"] = "EURO"
		cardElsewhere := cardPayment(pan, code, 100)
		cardElsewhere["metadata"] = map[string]any{"k": "5555555555554444"}
		cases := []struct {
			name    string
			body    any
			token   string
			status  int
			pointer string
		}{
			{"a bad number", cardPayment("4111111111111112", code, 100), tok, 400, "/payment_method/number"},
			{"a bad security code", cardPayment(pan, "12", 100), tok, 400, "/payment_method/security_code"},
			{"an unknown field of the card", unknownField, tok, 400, "/payment_method/colour"},
			{"a card number elsewhere", cardElsewhere, tok, 400, "/metadata/k"},
			{"payment_method twice", `{"amount":1,"currency":"EUR","payment_method":{"method":"card","number":"` + pan +
				`","expiration_date":"` + futureExpiry() + `"},"payment_method":{"method":"id","id":"x"}}`, tok, 400, "/payment_method"},
			{"without payment-methods.write", cardPayment(pan, code, 100), s.Token(t, "transactions.write"), 403, ""},
			{"a stored card with a security code", map[string]any{"amount": 100, "currency": "EUR",
				"payment_method": map[string]any{"method": "id", "id": stored, "security_code": code}}, tok, 400, "/payment_method/security_code"},
			{"a gift card given in full", map[string]any{"amount": 100, "currency": "EUR",
				"payment_method": map[string]any{"method": "gift-card", "number": "6000000000001234", "pin": "4321"}}, tok, 400, "/payment_method/number"},
			{"refused by core-api: withdrawn", badCurrency, tok, 400, "/currency"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				status, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tc.token, tc.body)
				seen.add(raw)
				e := apiError(t, raw)
				if status != tc.status || tc.pointer != "" && (len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer) {
					t.Fatalf("%d %s", status, raw)
				}
			})
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cardsBefore {
			t.Fatalf("%d cards left vaulted", n-cardsBefore)
		}
		if n := countRows(t, s.DBs.CoreDSN, "payment_methods"); n != pmsBefore {
			t.Fatalf("%d payment methods left", n-pmsBefore)
		}
	})

	t.Run("core-api refuses a card given in full without echoing it", func(t *testing.T) {
		status, raw := core.do(t, http.MethodPost, "/transactions", cardPayment(pan, code, 100))
		seen.add(raw)
		if status != http.StatusBadRequest || apiError(t, raw).Code != "bad_request" {
			t.Fatalf("%d %s", status, raw)
		}
		logging.AssertNoPANIn(t, "core-api's refusal", string(raw), pan)
		assertNoSecurityCode(t, "core-api's refusal", string(raw), code)
	})

	seen.assertNoPAN(t, pan, "5555555555554444", "4000056655665556")
	for i, body := range seen {
		assertNoSecurityCode(t, fmt.Sprintf("answer %d", i), body, code)
	}
	coreDump := s.Dump(t, "core")
	logging.AssertNoPANIn(t, "the core database", coreDump, pan, "5555555555554444", "4000056655665556")
	assertNoSecurityCode(t, "the core database", coreDump, code)
	vaultDump := s.Dump(t, "vault")
	logging.AssertNoPANIn(t, "the vault database", vaultDump, pan, "5555555555554444", "4000056655665556")
	assertNoSecurityCode(t, "the vault database", vaultDump, code)
	assertNoCardDataLogged(t, s, pan, "5555555555554444", "4000056655665556")
	assertNoSecurityCode(t, "the logs", s.Logs.String(), code)
}

// A payment with a card given in full whose answer from core-api is lost
// (the transaction was made) or whose request never reached core-api: the
// card is kept, the 502 names its payment method, and the retry under the
// same Idempotency-Key finds the same card and answers the transaction
// (made the first time, or now), with one charge and one card.
func TestCardGivenInFullWhoseAnswerIsLost(t *testing.T) {
	link := lossyLink{path: "/transactions"}
	s := stack.Start(t, link.option(t))
	tok := s.Token(t, "payment-methods.write", "transactions.write")
	for _, lose := range []string{"answer", "request"} {
		t.Run(lose, func(t *testing.T) {
			cardsBefore := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
			key := "lost-" + lose
			body := cardPayment("4111111111111111", "837", 1500)
			link.lose.Store(lose)
			code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body, "Idempotency-Key", key)
			if e := apiError(t, raw); code != http.StatusBadGateway || !strings.Contains(e.Message, "GET /transactions?payment_method_id=") {
				t.Fatalf("lost: %d %s", code, raw)
			}
			if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cardsBefore+1 {
				t.Fatalf("%d cards kept, want 1", n-cardsBefore)
			}
			status, tx := pay(t, s, tok, body, "Idempotency-Key", key)
			if status != http.StatusCreated || tx["status"] != "authorization_succeeded" {
				t.Fatalf("retry: %d %v", status, tx)
			}
			if st := mockCardStats(t, s, tx["id"].(string)); st.Charges != 1 {
				t.Fatalf("mock-card stats: %+v", st)
			}
			if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cardsBefore+1 {
				t.Fatalf("%d cards after the retry, want 1", n-cardsBefore)
			}
		})
	}
}

// Concurrent payments with a card given in full under one Idempotency-Key:
// one runs at a time, the others are 409 concurrent_request or answered the
// same transaction; one card is vaulted and one charge made.
func TestCardGivenInFullConcurrentRetries(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "transactions.write")
	cardsBefore := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
	body := cardPayment("4111111111111111", "837", 2222)
	id := payConcurrently(t, s, tok, body, "raw-concurrent", 20)
	if id == nil {
		status, tx := pay(t, s, tok, body, "Idempotency-Key", "raw-concurrent")
		if status != http.StatusCreated {
			t.Fatalf("after the race: %d %v", status, tx)
		}
		id = tx["id"]
	}
	if st := mockCardStats(t, s, id.(string)); st.Charges != 1 {
		t.Fatalf("mock-card stats: %+v", st)
	}
	if got := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); got != cardsBefore+1 {
		t.Fatalf("%d cards vaulted, want 1", got-cardsBefore)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
