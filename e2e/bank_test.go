package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/e2e/stack"
)

// bankScopes are what the bank tests' merchant does.
var bankScopes = []string{"payment-methods.write", "payment-methods.read", "buyers.write", "transactions.write", "transactions.read"}

// Bank accounts as vault-proxy takes them (POST /payment-methods).
var (
	sepaAccount = map[string]any{"method": "bank", "scheme": "sepa", "iban": "DE89 3704 0044 0532 0130 00", "bic": "COBADEFFXXX",
		"account_holder_name": "Erika Mustermann"}
	achMandate = map[string]any{"method": "bank", "scheme": "ach", "account_number": "000123456789", "routing_number": "011000015",
		"account_type": "checking", "account_holder_name": "Jane Doe", "mandate": map[string]any{"recurring": true}}
	bacsMandate = map[string]any{"method": "bank", "scheme": "bacs", "account_number": "31926819", "sort_code": "60-16-13",
		"account_holder_name": "John Smith", "mandate": map[string]any{"recurring": true}}
)

// bankPayment is a POST /transactions body debiting stored account pm.
func bankPayment(pm, currency string, amount int64, merchantInitiated bool) map[string]any {
	b := map[string]any{"amount": amount, "currency": currency, "payment_method": map[string]any{"method": "id", "id": pm}}
	if merchantInitiated {
		b["merchant_initiated"], b["payment_source"] = true, "recurring"
	}
	return b
}

// bankSim talks to mock-bank as a tester and as the built-in sandbox key.
type bankSim struct{ s *stack.Stack }

// post plays the bank or the buyer at a sandbox endpoint.
func (b bankSim) post(t *testing.T, path string, body any) map[string]any {
	t.Helper()
	code, raw := b.s.Do(t, http.DefaultClient, http.MethodPost, b.s.MockBank.URL()+path, "", body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, code, raw)
	}
	return out
}

// get reads mock-bank's API with the built-in sandbox key.
func (b bankSim) get(t *testing.T, path string) map[string]any {
	t.Helper()
	code, raw := b.s.Do(t, http.DefaultClient, http.MethodGet, b.s.MockBank.URL()+path, connector.MockBankSandboxAPIKey, nil)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, raw)
	}
	return out
}

// debits counts the debits that reached mock-bank under a mandate.
func (b bankSim) debits(t *testing.T, mandate string) int {
	t.Helper()
	return len(b.get(t, "/v1/debits?mandate_id="+mandate)["items"].([]any))
}

// delivered checks that every notification a sandbox endpoint sent got
// a 200 from core-api.
func delivered(t *testing.T, out map[string]any, n int) {
	t.Helper()
	ds := out["deliveries"].([]any)
	if len(ds) != n {
		t.Fatalf("%d deliveries, want %d: %v", len(ds), n, out)
	}
	for _, d := range ds {
		if d.(map[string]any)["status_code"] != 200.0 {
			t.Fatalf("delivery %v", d)
		}
	}
}

// waitStatus polls transaction id until it stands in status.
func waitStatus(t *testing.T, core coreClient, id, status string) map[string]any {
	t.Helper()
	var tx map[string]any
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if tx = core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil); tx["status"] == status {
			return tx
		}
	}
	t.Fatalf("transaction %s never reached %s: %v", id, status, tx)
	return nil
}

func listItems(t *testing.T, core coreClient, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, it := range core.ok(t, http.StatusOK, http.MethodGet, path, nil)["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// signedBankNotification sends a signed mock-bank notification of typ
// about data to core-api for merchant.
func signedBankNotification(t *testing.T, s *stack.Stack, merchant, secret, typ string, data any) (int, []byte) {
	t.Helper()
	id := "mbn_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
	body, _ := json.Marshal(mockbank.Notification{ID: id, Type: typ, CreatedAt: time.Now(), Data: data})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/webhooks/mock-bank/"+merchant, "", body,
		mockbank.HeaderNotificationID, id, mockbank.HeaderTimestamp, ts, mockbank.HeaderSignature, mockbank.Sign(secret, ts, body))
}

// One-off bank debits end to end over real HTTP: core-api sends the
// debit to mock-bank and answers capture_pending; mock-bank settles it a
// moment later (in the stack at once, so its notification races the
// create answer and is answered 409 until the answer is recorded) and
// notifies the result, which captures the payment or fails it, recorded
// as an event with the raw notification. A notification sent again
// changes nothing; one that matches nothing is 200 and counted; a bad
// signature is 401 and recorded nowhere. Bank details never reach
// core-api with a payment.
func TestBankDebits(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	sim := bankSim{s}
	account := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", sepaAccount)
	pm := account["id"].(string)

	var paidID string
	t.Run("a debit is capture_pending, then captured by the bank's notification", func(t *testing.T) {
		key := uuid.NewString()
		code, tx := pay(t, s, tok, bankPayment(pm, "EUR", 1500, false), "Idempotency-Key", key)
		if code != http.StatusCreated || tx["status"] != "capture_pending" && tx["status"] != "capture_succeeded" || tx["intent"] != "capture" {
			t.Fatalf("bank payment: %d %v", code, tx)
		}
		if p := tx["payment_method"].(map[string]any); p["method"] != "bank" || p["id"] != pm || p["scheme"] != "sepa" {
			t.Fatalf("payment_method %v", p)
		}
		debit, _ := tx["payment_service_transaction_id"].(string)
		if !strings.HasPrefix(debit, "mbd_") {
			t.Fatalf("payment_service_transaction_id %v", tx["payment_service_transaction_id"])
		}
		paidID = tx["id"].(string)
		done := waitStatus(t, core, paidID, "capture_succeeded")
		if done["captured_amount"] != 1500.0 || done["capture_pending_amount"] != 0.0 {
			t.Fatalf("captured: %v", done)
		}
		ev := listItems(t, core, "/transactions/"+paidID+"/events")[0]
		n, _ := ev["notification"].(map[string]any)
		if ev["name"] != "capture-succeeded" || n == nil || n["connector"] != "mock-bank" || !strings.Contains(n["raw_body"].(string), `"debit.succeeded"`) {
			t.Fatalf("event %v", ev)
		}
		if h := n["raw_headers"].(map[string]any); h["Mock-Bank-Signature"] == nil {
			t.Fatalf("raw_headers %v", h)
		}
		// The same Idempotency-Key is the same payment and one debit.
		if code, again := pay(t, s, tok, bankPayment(pm, "EUR", 1500, false), "Idempotency-Key", key); code != http.StatusCreated || again["id"] != paidID {
			t.Fatalf("retry: %d %v", code, again)
		}
		if n := len(sim.get(t, "/v1/debits?reference="+paidID)["items"].([]any)); n != 1 {
			t.Fatalf("%d debits at mock-bank", n)
		}
	})
	if paidID == "" {
		t.FailNow()
	}

	t.Run("the same notification again is recorded once", func(t *testing.T) {
		before := len(listItems(t, core, "/transactions/"+paidID+"/events?limit=100"))
		debit := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+paidID, nil)["payment_service_transaction_id"].(string)
		out := sim.post(t, "/sandbox/debits/"+debit+"/notify", nil)
		if d := out["delivery"].(map[string]any); d["status_code"] != 200.0 {
			t.Fatalf("resend: %v", out)
		}
		if after := len(listItems(t, core, "/transactions/"+paidID+"/events?limit=100")); after != before {
			t.Fatalf("%d events, %d before", after, before)
		}
	})

	t.Run("a debit the bank returns fails the payment", func(t *testing.T) {
		code, tx := pay(t, s, tok, bankPayment(pm, "EUR", 1051, false))
		if code != http.StatusCreated {
			t.Fatalf("bank payment: %d %v", code, tx)
		}
		failed := waitStatus(t, core, tx["id"].(string), "authorization_failed")
		if failed["error_code"] != "insufficient_funds" || failed["authorized_amount"] != 0.0 || failed["captured_amount"] != 0.0 || failed["capture_pending_amount"] != 0.0 {
			t.Fatalf("failed: %v", failed)
		}
		if ev := listItems(t, core, "/transactions/"+tx["id"].(string)+"/events")[0]; ev["name"] != "sale-failed" || ev["notification"] == nil {
			t.Fatalf("event %v", ev)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			via     coreClient
			body    map[string]any
			code    int
			pointer string
		}{
			{"another currency than the account's", publicCore(s, tok, ""), bankPayment(pm, "USD", 100, false), 400, "/currency"},
			{"a payment service it does not have", publicCore(s, tok, ""), func() map[string]any {
				b := bankPayment(pm, "EUR", 100, false)
				b["payment_service_id"] = uuid.NewString()
				return b
			}(), 422, "/payment_service_id"},
			// The first debits set up the account's mandate, pending.
			{"a pending mandate for a merchant-initiated charge", publicCore(s, tok, ""), bankPayment(pm, "EUR", 100, true), 422, "/payment_method/id"},
			{"an account given in full, to core-api", core, map[string]any{"amount": 100, "currency": "EUR",
				"payment_method": map[string]any{"method": "bank", "id": pm}}, 400, "/payment_method/method"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := tc.via.do(t, http.MethodPost, "/transactions", tc.body)
				e := apiError(t, raw)
				if code != tc.code || len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer {
					t.Fatalf("%d %s", code, raw)
				}
				if tc.pointer == "/payment_method/id" && e.Code != "mandate_not_ready" {
					t.Fatalf("code %s", e.Code)
				}
			})
		}
		if strings.Contains(s.Dump(t, "core-api"), "370400440532013000") {
			t.Fatal("the core database holds the IBAN")
		}
	})

	t.Run("unmatched: 200, counted, recorded nowhere; bad signature: 401, not counted", func(t *testing.T) {
		before := unmatchedCount(t, s)
		data := map[string]any{"id": "mbd_unknown", "reference": uuid.NewString(), "status": "succeeded"}
		code, raw := signedBankNotification(t, s, "default", connector.MockBankSandboxWebhookSecret, "debit.succeeded", data)
		if code != http.StatusOK || !strings.Contains(string(raw), `"unmatched"`) || unmatchedCount(t, s) != before+1 {
			t.Fatalf("unmatched: %d %s", code, raw)
		}
		events := len(listItems(t, core, "/transactions/"+paidID+"/events?limit=100"))
		data["reference"] = paidID
		code, raw = signedBankNotification(t, s, "default", "whsec_not_the_secret", "debit.failed", data)
		if code != http.StatusUnauthorized || apiError(t, raw).Code != "unauthorized" || unmatchedCount(t, s) != before+1 {
			t.Fatalf("bad signature: %d %s", code, raw)
		}
		if n := len(listItems(t, core, "/transactions/"+paidID+"/events?limit=100")); n != events {
			t.Fatalf("%d events, %d before", n, events)
		}
	})
}

// A recurring mandate's life end to end: created pending with the
// account, activated and given its recurring token by the bank's
// notifications (each a mandate event with the raw notification),
// revoked by the bank. Merchant-initiated charges are refused with a
// clear code, nothing stored or sent to mock-bank, until the token
// arrives and once the mandate is revoked; in between they are debited
// and settled by the recurring charge's notification.
func TestBankMandates(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	sim := bankSim{s}
	account := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", achMandate)
	pm := account["id"].(string)
	mandate := account["mandate"].(map[string]any)
	mid := mandate["id"].(string)
	if mandate["status"] != "pending" || mandate["recurring_token_at"] != nil {
		t.Fatalf("mandate %v", mandate)
	}
	mandateEvents := func(t *testing.T) []map[string]any { return listItems(t, core, "/mandates/"+mid+"/events?limit=100") }
	refused := func(t *testing.T, want string) {
		t.Helper()
		before := len(listItems(t, core, "/transactions?payment_method_id="+pm+"&limit=100"))
		code, raw := publicCore(s, tok, "").do(t, http.MethodPost, "/transactions", bankPayment(pm, "USD", 700, true))
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != want {
			t.Fatalf("merchant-initiated charge: %d %s, want %s", code, raw, want)
		}
		if n := len(listItems(t, core, "/transactions?payment_method_id="+pm+"&limit=100")); n != before {
			t.Fatalf("a refused charge was stored: %d transactions, %d before", n, before)
		}
	}
	if evs := mandateEvents(t); len(evs) != 1 || evs[0]["name"] != "mandate-created" || evs[0]["status_after"] != "pending" || evs[0]["payment_method_id"] != pm {
		t.Fatalf("mandate events %v", evs)
	}

	t.Run("before activation: refused, nothing at mock-bank", func(t *testing.T) {
		refused(t, "mandate_not_ready")
		if n := sim.debits(t, mid); n != 0 {
			t.Fatalf("%d debits reached mock-bank", n)
		}
	})

	t.Run("activated without its recurring token: still refused", func(t *testing.T) {
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/activate", map[string]any{"recurring_token": false}), 1)
		m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any)
		if m["status"] != "active" || m["recurring_token_at"] != nil {
			t.Fatalf("mandate %v", m)
		}
		ev := mandateEvents(t)[0]
		n, _ := ev["notification"].(map[string]any)
		if ev["name"] != "mandate-activated" || ev["status_before"] != "pending" || ev["status_after"] != "active" || n == nil ||
			!strings.Contains(n["raw_body"].(string), `"mandate.activated"`) {
			t.Fatalf("event %v", ev)
		}
		refused(t, "mandate_not_ready")
		if n := sim.debits(t, mid); n != 0 {
			t.Fatalf("%d debits reached mock-bank", n)
		}
	})

	t.Run("recurring.token.created: a merchant-initiated charge is debited and settled", func(t *testing.T) {
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/recurring-token", nil), 1)
		m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any)
		if m["recurring_token_at"] == nil || mandateEvents(t)[0]["name"] != "recurring-token-created" {
			t.Fatalf("mandate %v", m)
		}
		code, tx := pay(t, s, tok, bankPayment(pm, "USD", 700, true))
		if code != http.StatusCreated || tx["merchant_initiated"] != true {
			t.Fatalf("merchant-initiated charge: %d %v", code, tx)
		}
		done := waitStatus(t, core, tx["id"].(string), "capture_succeeded")
		if done["captured_amount"] != 700.0 {
			t.Fatalf("charge %v", done)
		}
		ev := listItems(t, core, "/transactions/"+tx["id"].(string)+"/events")[0]
		if n, _ := ev["notification"].(map[string]any); n == nil || !strings.Contains(n["raw_body"].(string), `"recurring_charge.succeeded"`) {
			t.Fatalf("event %v", ev)
		}
		if n := sim.debits(t, mid); n != 1 {
			t.Fatalf("%d debits at mock-bank", n)
		}
	})

	t.Run("the bank's notifications sent again are recorded once", func(t *testing.T) {
		before := len(mandateEvents(t))
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/activate", nil), 2) // mandate.activated and the token, again
		if n := len(mandateEvents(t)); n != before {
			t.Fatalf("%d mandate events, %d before", n, before)
		}
	})

	t.Run("revoked by the bank: refused, nothing more at mock-bank", func(t *testing.T) {
		delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/revoke", nil), 1)
		ev := mandateEvents(t)[0]
		if ev["name"] != "mandate-revoked" || ev["status_after"] != "revoked" || ev["notification"] == nil {
			t.Fatalf("event %v", ev)
		}
		m := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any)
		if m["status"] != "revoked" || m["revoked_at"] == nil {
			t.Fatalf("mandate %v", m)
		}
		refused(t, "mandate_revoked")
		if n := sim.debits(t, mid); n != 1 {
			t.Fatalf("%d debits at mock-bank", n)
		}
	})

	t.Run("a mandate notification that matches nothing is 200 and counted", func(t *testing.T) {
		before := unmatchedCount(t, s)
		code, raw := signedBankNotification(t, s, "default", connector.MockBankSandboxWebhookSecret, "mandate.revoked",
			map[string]any{"id": "mbm_unknown", "reference": uuid.NewString(), "status": "revoked"})
		if code != http.StatusOK || !strings.Contains(string(raw), `"unmatched"`) || unmatchedCount(t, s) != before+1 {
			t.Fatalf("unmatched: %d %s", code, raw)
		}
	})
}

// Deleting a bank account revokes its mandate at mock-bank first; the
// revocation is a mandate event, still readable once the payment method
// is gone.
func TestBankMandateRevokedByDelete(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	sim := bankSim{s}
	account := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", bacsMandate)
	pm, mid := account["id"].(string), account["mandate"].(map[string]any)["id"].(string)
	delivered(t, sim.post(t, "/sandbox/mandates/"+mid+"/activate", nil), 2)
	if code, raw := core.do(t, http.MethodDelete, "/payment-methods/"+pm, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", code, raw)
	}
	if m := sim.get(t, "/v1/mandates/"+mid); m["status"] != "revoked" {
		t.Fatalf("mandate at mock-bank %v", m)
	}
	evs := listItems(t, core, "/mandates/"+mid+"/events?limit=100")
	if len(evs) != 4 || evs[0]["name"] != "mandate-revoked" || evs[0]["status_before"] != "active" || evs[0]["notification"] != nil {
		t.Fatalf("mandate events %v", evs)
	}
	if code, _ := core.do(t, http.MethodGet, "/payment-methods/"+pm, nil); code != http.StatusNotFound {
		t.Fatalf("GET the deleted payment method = %d", code)
	}
	if code, raw := core.do(t, http.MethodGet, "/mandates/mbm_unknown/events", nil); code != http.StatusNotFound || apiError(t, raw).Code != "not_found" {
		t.Fatalf("unknown mandate: %d %s", code, raw)
	}
}
