package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/e2e/stack"
)

// pixPayment is a POST /transactions body paying amount by QR code.
func pixPayment(amount int64) map[string]any {
	return map[string]any{"amount": amount, "currency": "BRL", "country": "BR", "payment_method": map[string]any{"method": "pix"}}
}

// payQR plays the buyer at mock-bank: the charge is paid and its
// notification sent over HTTP to core-api. It returns mock-bank's status
// and answer.
func payQR(t *testing.T, s *stack.Stack, chargeID string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(s.MockBank.URL()+"/sandbox/qr/"+chargeID+"/pay", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// notify sends a mock-bank notification for reference to core-api,
// signed with secret ("" : unsigned).
func notify(t *testing.T, s *stack.Stack, merchant, secret, id, reference string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(mockbank.Notification{ID: id, Type: "qr_charge.paid", CreatedAt: time.Now(),
		Data: mockbank.Charge{ID: "mbq_" + id, Reference: reference, Amount: 100, Currency: "BRL", Status: "paid"}})
	h := []string{mockbank.HeaderNotificationID, id}
	if secret != "" {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		h = append(h, mockbank.HeaderTimestamp, ts, mockbank.HeaderSignature, mockbank.Sign(secret, ts, body))
	}
	return s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/webhooks/mock-bank/"+merchant, "", body, h...)
}

// unmatchedCount reads core-api's unmatched notification counter.
func unmatchedCount(t *testing.T, s *stack.Stack) int {
	t.Helper()
	resp, err := http.Get(s.CoreURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^core_api_unmatched_notifications_total (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// A pix payment end to end over real HTTP: core-api asks mock-bank for a
// QR code (the transaction capture_pending with it and its expiry), the
// buyer pays at mock-bank, whose signed notification captures it through
// core-api's inbound endpoint, recorded as an event with its raw headers
// and body. A notification sent again is recorded once; a bad or missing
// signature is 401 and recorded nowhere; one that matches nothing is 200,
// counted, and recorded nowhere. A QR code that expires unpaid fails the
// payment (the sweep), and mock-bank no longer takes it.
func TestPixPayment(t *testing.T) {
	s := stack.Start(t, stack.WithCoreAPI(func(c *coreapp.Config) {
		c.QRExpiry, c.TransactionSyncInterval = 3*time.Second, 300*time.Millisecond
	}))
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	events := func(t *testing.T, id string) []any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/events?limit=100", nil)["items"].([]any)
	}
	get := func(t *testing.T, id string) map[string]any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
	}

	var paid map[string]any
	t.Run("created capture_pending with its QR code, the same for the same Idempotency-Key", func(t *testing.T) {
		key := uuid.NewString()
		code, tx := pay(t, s, tok, pixPayment(1500), "Idempotency-Key", key)
		if code != http.StatusCreated || tx["status"] != "capture_pending" || tx["intent"] != "capture" ||
			tx["authorized_amount"] != 1500.0 || tx["capture_pending_amount"] != 1500.0 || tx["captured_amount"] != 0.0 {
			t.Fatalf("pix payment: %d %v", code, tx)
		}
		if qr, _ := tx["qr_code"].(string); !strings.HasPrefix(qr, "000201") {
			t.Fatalf("qr_code %v", tx["qr_code"])
		}
		exp, err := time.Parse(time.RFC3339Nano, tx["approval_expires_at"].(string))
		if err != nil || exp.Before(time.Now()) || exp.After(time.Now().Add(10*time.Second)) {
			t.Fatalf("approval_expires_at %v: %v", tx["approval_expires_at"], err)
		}
		if pm := tx["payment_method"].(map[string]any); pm["method"] != "pix" || pm["id"] != nil {
			t.Fatalf("payment_method %v", pm)
		}
		code, again := pay(t, s, tok, pixPayment(1500), "Idempotency-Key", key)
		if code != http.StatusCreated || again["id"] != tx["id"] || again["qr_code"] != tx["qr_code"] {
			t.Fatalf("retry: %d %v", code, again)
		}
		paid = tx
	})
	if paid == nil {
		t.FailNow()
	}
	id, charge := paid["id"].(string), paid["payment_service_transaction_id"].(string)
	merchant := paid["merchant_account_id"].(string)

	t.Run("the buyer pays: mock-bank's notification captures it", func(t *testing.T) {
		code, out := payQR(t, s, charge)
		if d := out["delivery"].(map[string]any); code != http.StatusOK || d["status_code"] != 200.0 || d["attempts"] != 1.0 {
			t.Fatalf("pay at mock-bank: %d %v", code, out)
		}
		tx := get(t, id)
		if tx["status"] != "capture_succeeded" || tx["captured_amount"] != 1500.0 || tx["capture_pending_amount"] != 0.0 {
			t.Fatalf("after the notification: %v", tx)
		}
		ev := events(t, id)[0].(map[string]any) // newest first
		n, _ := ev["notification"].(map[string]any)
		if ev["name"] != "capture-succeeded" || n == nil || n["connector"] != "mock-bank" || !strings.HasPrefix(n["id"].(string), "mbn_") {
			t.Fatalf("event: %v", ev)
		}
		h := n["raw_headers"].(map[string]any)
		if h["Mock-Bank-Signature"] == nil || h["Mock-Bank-Timestamp"] == nil || !strings.Contains(n["raw_body"].(string), `"reference":"`+id+`"`) {
			t.Fatalf("raw notification: %v", n)
		}
	})

	t.Run("the same notification again is recorded once", func(t *testing.T) {
		before := len(events(t, id))
		code, out := payQR(t, s, charge) // mock-bank sends the paid charge's notification again, same id
		if d := out["delivery"].(map[string]any); code != http.StatusOK || d["status_code"] != 200.0 {
			t.Fatalf("resend: %d %v", code, out)
		}
		if after := len(events(t, id)); after != before {
			t.Fatalf("events %d -> %d", before, after)
		}
		if tx := get(t, id); tx["captured_amount"] != 1500.0 {
			t.Fatalf("captured twice: %v", tx)
		}
	})

	t.Run("a bad or missing signature is 401, recorded nowhere", func(t *testing.T) {
		code, tx := pay(t, s, tok, pixPayment(700))
		if code != http.StatusCreated {
			t.Fatalf("pix payment: %d %v", code, tx)
		}
		before := len(events(t, tx["id"].(string)))
		refusesForged(t, s, "mbn_forged", func(secret, id string) (int, []byte) {
			return notify(t, s, merchant, secret, id, tx["id"].(string))
		})
		if got := get(t, tx["id"].(string)); got["status"] != "capture_pending" || len(events(t, tx["id"].(string))) != before {
			t.Fatalf("a forged notification changed the transaction: %v", got)
		}
	})

	t.Run("one that matches nothing is 200, counted, recorded nowhere", func(t *testing.T) {
		countsUnmatched(t, s, "mbn_orphan", func() (int, []byte) {
			return notify(t, s, merchant, connector.MockBankSandboxWebhookSecret, "mbn_orphan", uuid.NewString())
		})
	})

	t.Run("through a payment service, verified with its webhook_secret", func(t *testing.T) {
		psCore := newCore(s, s.Token(t, "payment-services.write"), "")
		newPS := func(secret string) string {
			return psCore.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
				"connector": "mock-bank", "method": "pix",
				"credentials": map[string]any{"api_key": "mb_test_merchant_" + uuid.NewString()[:8], "webhook_secret": secret}})["id"].(string)
		}
		// mock-bank signs for keys without a secret of their own with its
		// sandbox secret: a payment service that holds it verifies
		// mock-bank's notifications, another does not.
		right, wrong := newPS(mockbank.SandboxWebhookSecret), newPS("whsec_not_what_mock_bank_signs_with")
		body := pixPayment(1100)
		body["payment_service_id"] = right
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "capture_pending" || tx["payment_service_id"] != right {
			t.Fatalf("pix payment: %d %v", code, tx)
		}
		if code, out := payQR(t, s, tx["payment_service_transaction_id"].(string)); code != http.StatusOK || out["delivery"].(map[string]any)["status_code"] != 200.0 {
			t.Fatalf("pay at mock-bank: %d %v", code, out)
		}
		if got := get(t, tx["id"].(string)); got["status"] != "capture_succeeded" {
			t.Fatalf("after the notification: %v", got)
		}
		body["payment_service_id"] = wrong
		code, tx = pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "capture_pending" {
			t.Fatalf("pix payment: %d %v", code, tx)
		}
		if code, raw := notify(t, s, merchant, connector.MockBankSandboxWebhookSecret, "mbn_other_secret", tx["id"].(string)); code != http.StatusUnauthorized {
			t.Fatalf("signed with another secret than the payment service's: %d %s", code, raw)
		}
		if code, _ := notify(t, s, merchant, "whsec_not_what_mock_bank_signs_with", "mbn_its_secret", tx["id"].(string)); code != http.StatusOK {
			t.Fatalf("signed with the payment service's secret: %d", code)
		}
	})

	t.Run("expired unpaid: failed by the sweep, no longer payable", func(t *testing.T) {
		code, tx := pay(t, s, tok, pixPayment(900))
		if code != http.StatusCreated || tx["status"] != "capture_pending" {
			t.Fatalf("pix payment: %d %v", code, tx)
		}
		id := tx["id"].(string)
		deadline := time.Now().Add(20 * time.Second)
		for tx["status"] == "capture_pending" && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			tx = get(t, id)
		}
		if tx["status"] != "authorization_failed" || tx["error_code"] != "expired" || tx["authorized_amount"] != 0.0 ||
			tx["capture_pending_amount"] != 0.0 || tx["captured_amount"] != 0.0 {
			t.Fatalf("after expiry: %v", tx)
		}
		if ev := events(t, id)[0].(map[string]any); ev["name"] != "sale-expired" || ev["status_before"] != "capture_pending" {
			t.Fatalf("expiry event: %v", ev)
		}
		if code, out := payQR(t, s, tx["payment_service_transaction_id"].(string)); code != http.StatusConflict || out["error"] != "charge_expired" {
			t.Fatalf("paying an expired QR code: %d %v", code, out)
		}
	})
}

// The request rules of a pix payment, each a 400 in the error envelope at
// its pointer; a currency mock-bank does not settle is its decline.
func TestPixPaymentValidation(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "transactions.write", "transactions.read")
	for _, tc := range []struct {
		name    string
		body    map[string]any
		pointer string
	}{
		{"pix with a stored payment method id", map[string]any{"amount": 100, "currency": "BRL",
			"payment_method": map[string]any{"method": "pix", "id": uuid.NewString()}}, "/payment_method/id"},
		{"unknown method", map[string]any{"amount": 100, "currency": "BRL", "payment_method": map[string]any{"method": "boleto"}}, "/payment_method/method"},
		{"no amount", map[string]any{"currency": "BRL", "payment_method": map[string]any{"method": "pix"}}, "/amount"},
		{"amount out of range", map[string]any{"amount": -1, "currency": "BRL", "payment_method": map[string]any{"method": "pix"}}, "/amount"},
		{"bad currency", map[string]any{"amount": 100, "currency": "brl", "payment_method": map[string]any{"method": "pix"}}, "/currency"},
		{"store", map[string]any{"amount": 100, "currency": "BRL", "store": true, "payment_method": map[string]any{"method": "pix"}}, "/store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := pay(t, s, tok, tc.body)
			if code != http.StatusBadRequest || out["type"] != "error" || !hasPointer(out, tc.pointer) {
				t.Fatalf("%d %v; want 400 at %s", code, out, tc.pointer)
			}
		})
	}
	t.Run("a currency mock-bank does not settle is declined", func(t *testing.T) {
		body := pixPayment(100)
		body["currency"] = "EUR"
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "authorization_declined" || tx["error_code"] != "unsupported_currency" {
			t.Fatalf("%d %v", code, tx)
		}
	})
}

func hasPointer(errBody map[string]any, pointer string) bool {
	details, _ := errBody["details"].([]any)
	for _, d := range details {
		if d.(map[string]any)["pointer"] == pointer {
			return true
		}
	}
	return false
}
