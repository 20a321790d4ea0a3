package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/e2e/stack"
)

// rawBankPayment is a POST /transactions body debiting a bank account
// given in full, which only vault-proxy takes.
func rawBankPayment(account map[string]any, currency string, amount int64) map[string]any {
	return map[string]any{"amount": amount, "currency": currency, "payment_method": account}
}

// A merchant debits a bank account given in full with the payment,
// through vault-proxy's POST /transactions: the account is vaulted as
// POST /payment-methods vaults one and the payment goes on to core-api by
// token, capture_pending until the bank's notification. Without store
// the account serves this payment only and gets no mandate; with store:
// true it is stored and its first debit sets up its mandate, pending
// until the bank activates it, after which the merchant charges it on
// its own initiative. The same Idempotency-Key is one account and one
// debit. A mandate the bank declines refuses the payment and leaves
// nothing. No account number or IBAN is in an answer, a log line or the
// core database.
func TestBankAccountGivenInFull(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	sim := bankSim{s}
	const achNumber, iban = "000777123456", "DE44500105175407324931"
	ach := map[string]any{"method": "bank", "scheme": "ach", "account_number": achNumber, "routing_number": "011000015",
		"account_type": "checking", "account_holder_name": "Jane Doe", "external_identifier": "acct-1"}
	sepa := map[string]any{"method": "bank", "scheme": "sepa", "iban": iban, "account_holder_name": "Erika Mustermann"}
	var seen responses
	payRaw := func(t *testing.T, body any, header ...string) (int, map[string]any) {
		t.Helper()
		status, tx := pay(t, s, tok, body, header...)
		seen.addMap(tx)
		return status, tx
	}
	pmOf := func(tx map[string]any) string { return tx["payment_method"].(map[string]any)["id"].(string) }

	t.Run("not stored: debited and settled, no mandate, one payment only", func(t *testing.T) {
		before := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
		status, tx := payRaw(t, rawBankPayment(ach, "USD", 700))
		if status != http.StatusCreated || tx["status"] != "capture_pending" && tx["status"] != "capture_succeeded" || tx["intent"] != "capture" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		pm := pmOf(tx)
		if p := tx["payment_method"].(map[string]any); p["method"] != "bank" || p["scheme"] != "ach" || p["label"] != "3456" {
			t.Fatalf("payment method %v", p)
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != before+1 {
			t.Fatalf("%d accounts vaulted, want 1", n-before)
		}
		waitStatus(t, core, tx["id"].(string), "capture_succeeded")
		got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)
		if got["mandate"] != nil || got["stored"] != false || got["external_identifier"] != "acct-1" || got["usage_count"] != 1.0 {
			t.Fatalf("payment method after the payment: %v", got)
		}
		d := sim.get(t, "/v1/debits?reference="+tx["id"].(string))["items"].([]any)
		if len(d) != 1 || d[0].(map[string]any)["account"] != pm || d[0].(map[string]any)["mandate_id"] != nil {
			t.Fatalf("mock-bank's debits: %v", d)
		}
		status, again := payRaw(t, bankPayment(pm, "USD", 500, false))
		if e := apiError(t, mustJSON(t, again)); status != http.StatusBadRequest || len(e.Details) != 1 ||
			e.Details[0].Pointer != "/payment_method/id" || e.Details[0].Type != "value_error.payment_method.not_stored" {
			t.Fatalf("a second payment with an account not stored: %d %v", status, again)
		}
	})

	t.Run("store: true: the first debit sets up the mandate, which then serves merchant-initiated charges", func(t *testing.T) {
		body := rawBankPayment(sepa, "EUR", 2500)
		body["store"] = true
		key := uuid.NewString()
		before := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
		status, tx := payRaw(t, body, "Idempotency-Key", key)
		if status != http.StatusCreated || tx["status"] != "capture_pending" && tx["status"] != "capture_succeeded" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		pm := pmOf(tx)
		// The same key: the same account and the same debit.
		if status, again := payRaw(t, body, "Idempotency-Key", key); status != http.StatusCreated || again["id"] != tx["id"] {
			t.Fatalf("retry: %d %v", status, again)
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != before+1 {
			t.Fatalf("%d accounts vaulted, want 1", n-before)
		}
		if n := len(sim.get(t, "/v1/debits?reference="+tx["id"].(string))["items"].([]any)); n != 1 {
			t.Fatalf("%d debits at mock-bank", n)
		}
		waitStatus(t, core, tx["id"].(string), "capture_succeeded")
		got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)
		m, _ := got["mandate"].(map[string]any)
		if got["stored"] != true || m == nil || m["status"] != "pending" {
			t.Fatalf("stored payment method: %v", got)
		}
		mid := m["id"].(string)
		if bm := sim.get(t, "/v1/mandates/"+mid); bm["reference"] != pm || bm["scheme"] != "sepa" || bm["status"] != "pending" {
			t.Fatalf("mock-bank's mandate: %v", bm)
		}
		evs := listItems(t, core, "/mandates/"+mid+"/events?limit=100")
		if len(evs) != 1 || evs[0]["name"] != "mandate-created" || evs[0]["payment_method_id"] != pm {
			t.Fatalf("mandate events %v", evs)
		}
		listed := false
		for _, it := range listItems(t, core, "/payment-methods?limit=100") {
			listed = listed || it["id"] == pm
		}
		if !listed {
			t.Fatal("the stored account is not listed")
		}

		code, raw := publicCore(s, tok, "").do(t, http.MethodPost, "/transactions", bankPayment(pm, "EUR", 900, true))
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "mandate_not_ready" {
			t.Fatalf("merchant-initiated charge before activation: %d %s", code, raw)
		}
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/activate", map[string]any{}), 2)
		status, mit := payRaw(t, bankPayment(pm, "EUR", 900, true))
		if status != http.StatusCreated || mit["status"] != "capture_pending" && mit["status"] != "capture_succeeded" {
			t.Fatalf("merchant-initiated charge: %d %v", status, mit)
		}
		if n := sim.debits(t, mid); n != 1 {
			t.Fatalf("%d debits under the mandate", n)
		}
		// A later customer-initiated debit goes under no new mandate.
		if status, cit := payRaw(t, bankPayment(pm, "EUR", 300, false)); status != http.StatusCreated || cit["status"] == "authorization_declined" {
			t.Fatalf("a later debit: %d %v", status, cit)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil); got["mandate"].(map[string]any)["id"] != mid {
			t.Fatalf("the account's mandate changed: %v", got["mandate"])
		}
	})

	t.Run("a mandate the bank declines refuses the payment and leaves nothing", func(t *testing.T) {
		declined := map[string]any{"method": "bank", "scheme": "bacs", "account_number": "31926819", "sort_code": "60-16-13",
			"account_holder_name": "Mandate Declined"}
		body := rawBankPayment(declined, "GBP", 1000)
		body["store"] = true
		vaulted, pms, txs := countRows(t, s.DBs.VaultDSN, "vaulted_cards"), countRows(t, s.DBs.CoreDSN, "payment_methods"), countRows(t, s.DBs.CoreDSN, "transactions")
		status, out := payRaw(t, body)
		if e := apiError(t, mustJSON(t, out)); status != http.StatusUnprocessableEntity || e.Code != "mandate_declined" ||
			len(e.Details) != 1 || e.Details[0].Pointer != "/payment_method/id" {
			t.Fatalf("payment: %d %v", status, out)
		}
		if countRows(t, s.DBs.VaultDSN, "vaulted_cards") != vaulted || countRows(t, s.DBs.CoreDSN, "payment_methods") != pms ||
			countRows(t, s.DBs.CoreDSN, "transactions") != txs {
			t.Fatal("a refused payment left an account, a payment method or a transaction")
		}
	})

	t.Run("bad input: a pointer under /payment_method, nothing vaulted", func(t *testing.T) {
		before := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
		for _, tc := range []struct {
			name, pointer string
			pm            map[string]any
		}{
			{"an IBAN that fails its check", "/payment_method/iban", map[string]any{"method": "bank", "scheme": "sepa", "iban": "DE00500105175407324931", "account_holder_name": "E"}},
			{"no holder", "/payment_method/account_holder_name", map[string]any{"method": "bank", "scheme": "sepa", "iban": iban}},
			{"a mandate (set up by the debit)", "/payment_method/mandate", map[string]any{"method": "bank", "scheme": "sepa", "iban": iban, "account_holder_name": "E",
				"mandate": map[string]any{"recurring": true}}},
			{"a buyer (the transaction's)", "/payment_method/buyer_id", map[string]any{"method": "bank", "scheme": "sepa", "iban": iban, "account_holder_name": "E",
				"buyer_id": uuid.NewString()}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := publicCore(s, tok, "").do(t, http.MethodPost, "/transactions", rawBankPayment(tc.pm, "EUR", 100))
				seen.add(raw)
				e := apiError(t, raw)
				if code != http.StatusBadRequest || len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer {
					t.Fatalf("%d %s", code, raw)
				}
			})
		}
		if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != before {
			t.Fatalf("%d accounts vaulted by refused payments", n-before)
		}
	})

	t.Run("a token without payment-methods.write", func(t *testing.T) {
		narrow := s.Token(t, "transactions.write")
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", narrow, rawBankPayment(sepa, "EUR", 100))
		if code != http.StatusForbidden {
			t.Fatalf("%d %s", code, raw)
		}
	})

	for _, secret := range []string{achNumber, iban, "5407324931", "31926819"} {
		for what, text := range map[string]string{"an answer": strings.Join(seen, "\n"), "the core database": s.Dump(t, "core"), "the logs": s.Logs.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the account number %s", what, secret)
			}
		}
	}
}

// Bank debits through payment services (mock-bank, method bank), routed
// as pix payments are: the payment service named, else the merchant
// account's default for bank, else the built-in connector. A first debit
// sets the account's mandate up through the debit's payment service,
// under its API key; the mandate's notifications are verified with that
// payment service's webhook_secret (mock-bank signs for a key without a
// secret of its own with the sandbox one: a payment service holding
// another does not verify them), its
// merchant-initiated charges go through it, and deleting the account
// revokes it there.
func TestBankDebitsThroughPaymentServices(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	sim := bankSim{s}
	psCore := newCore(s, s.Token(t, "payment-services.write"), "")
	newPS := func(secret string, def bool) (id, key string) {
		key = "mb_test_merchant_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
		return psCore.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
			"connector": "mock-bank", "method": "bank", "default": def,
			"credentials": map[string]any{"api_key": key, "webhook_secret": secret}})["id"].(string), key
	}
	named, namedKey := newPS(mockbank.SandboxWebhookSecret, false)
	other, _ := newPS(mockbank.SandboxWebhookSecret, false)
	store := func(t *testing.T) string {
		t.Helper()
		return publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", sepaAccount)["id"].(string)
	}
	// atBank reads a mandate at mock-bank under an API key.
	atBank := func(t *testing.T, key, mandate string) int {
		t.Helper()
		code, _ := s.Do(t, http.DefaultClient, http.MethodGet, s.MockBank.URL()+"/v1/mandates/"+mandate, key, nil)
		return code
	}

	pm := store(t)
	var mid string
	t.Run("named: the debit and the mandate it sets up go through the payment service", func(t *testing.T) {
		body := bankPayment(pm, "EUR", 1500, false)
		body["payment_service_id"] = named
		status, tx := pay(t, s, tok, body)
		if status != http.StatusCreated || tx["payment_service_id"] != named || tx["status"] != "capture_pending" && tx["status"] != "capture_succeeded" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		// Settled by mock-bank's notification, verified with the payment
		// service's secret.
		waitStatus(t, core, tx["id"].(string), "capture_succeeded")
		m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any)
		if m["payment_service_id"] != named || m["status"] != "pending" {
			t.Fatalf("mandate %v", m)
		}
		mid = m["id"].(string)
		if atBank(t, namedKey, mid) != http.StatusOK || atBank(t, connector.MockBankSandboxAPIKey, mid) != http.StatusNotFound {
			t.Fatal("the mandate was not set up under the payment service's API key")
		}
	})
	if mid == "" {
		t.FailNow()
	}

	t.Run("merchant-initiated: through the mandate's payment service, another refused", func(t *testing.T) {
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/activate", map[string]any{}), 2)
		if m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any); m["status"] != "active" || m["recurring_token_at"] == nil {
			t.Fatalf("mandate after its notifications: %v", m)
		}
		body := bankPayment(pm, "EUR", 900, true)
		body["payment_service_id"] = other
		code, raw := publicCore(s, tok, "").do(t, http.MethodPost, "/transactions", body)
		if e := apiError(t, raw); code != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Pointer != "/payment_service_id" {
			t.Fatalf("another payment service: %d %s", code, raw)
		}
		status, tx := pay(t, s, tok, bankPayment(pm, "EUR", 900, true))
		if status != http.StatusCreated || tx["payment_service_id"] != named {
			t.Fatalf("merchant-initiated charge: %d %v", status, tx)
		}
		waitStatus(t, core, tx["id"].(string), "capture_succeeded")
	})

	t.Run("the default for bank, whose secret is not mock-bank's: its notifications are refused", func(t *testing.T) {
		def, _ := newPS("whsec_not_what_mock_bank_signs_with", true)
		acct := store(t)
		status, tx := pay(t, s, tok, bankPayment(acct, "EUR", 700, false))
		if status != http.StatusCreated || tx["payment_service_id"] != def || tx["status"] != "capture_pending" {
			t.Fatalf("payment: %d %v", status, tx)
		}
		m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+acct, nil)["mandate"].(map[string]any)
		if m["payment_service_id"] != def {
			t.Fatalf("mandate %v", m)
		}
		out := sim.post(t, "/sandbox/mandates/"+m["id"].(string)+"/activate", map[string]any{"recurring_token": false})
		if d := out["deliveries"].([]any); len(d) != 1 || d[0].(map[string]any)["status_code"] != 401.0 {
			t.Fatalf("a mandate notification signed with another secret: %v", out)
		}
		if m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+acct, nil)["mandate"].(map[string]any); m["status"] != "pending" {
			t.Fatalf("mandate after a refused notification: %v", m)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil); got["status"] != "capture_pending" {
			t.Fatalf("debit after a refused notification: %v", got)
		}

		// Only its webhook_secret replaced, the api_key not sent and kept:
		// the notifications sent again are accepted, and a
		// merchant-initiated debit goes through the mandate mock-bank set
		// up under the kept key, settled by a notification the new secret
		// verifies.
		for _, c := range []struct {
			credentials map[string]any
			pointer     string
		}{
			{map[string]any{"webhook_secret": mockbank.SandboxWebhookSecret, "api_secret": "whsec_not_a_credential"}, "/credentials/api_secret"},
			{map[string]any{"api_key": nil}, "/credentials/api_key"},
		} {
			code, raw := psCore.do(t, http.MethodPut, "/payment-services/"+def, map[string]any{"credentials": c.credentials})
			if e := apiError(t, raw); code != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Pointer != c.pointer {
				t.Fatalf("PUT credentials %v: %d %s; want 400 at %s", c.credentials, code, raw, c.pointer)
			}
		}
		got := psCore.ok(t, http.StatusOK, http.MethodPut, "/payment-services/"+def, map[string]any{
			"credentials": map[string]any{"webhook_secret": mockbank.SandboxWebhookSecret}})
		if set, _ := got["credentials_set"].([]any); len(set) != 2 || set[0] != "api_key" || set[1] != "webhook_secret" {
			t.Fatalf("after replacing the webhook_secret alone: %v", got)
		}
		delivered(t, sim.post(t, "/sandbox/mandates/"+m["id"].(string)+"/activate", map[string]any{}), 2)
		if m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+acct, nil)["mandate"].(map[string]any); m["status"] != "active" {
			t.Fatalf("mandate after its notifications verified with the replaced secret: %v", m)
		}
		status, tx = pay(t, s, tok, bankPayment(acct, "EUR", 800, true))
		if status != http.StatusCreated || tx["payment_service_id"] != def {
			t.Fatalf("merchant-initiated debit with the kept api_key: %d %v", status, tx)
		}
		waitStatus(t, core, tx["id"].(string), "capture_succeeded")
	})

	t.Run("deleting the account revokes the mandate through its payment service", func(t *testing.T) {
		if code, raw := core.do(t, http.MethodDelete, "/payment-methods/"+pm, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d %s", code, raw)
		}
		code, raw := s.Do(t, http.DefaultClient, http.MethodGet, s.MockBank.URL()+"/v1/mandates/"+mid, namedKey, nil)
		if code != http.StatusOK || !strings.Contains(string(raw), `"revoked"`) {
			t.Fatalf("mock-bank's mandate: %d %s", code, raw)
		}
		evs := listItems(t, core, "/mandates/"+mid+"/events?limit=100")
		if evs[0]["name"] != "mandate-revoked" {
			t.Fatalf("events %v", evs)
		}
	})
}
