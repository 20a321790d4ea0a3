package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/e2e/stack"
)

// gcashPayment is a POST /transactions body paying amount by a redirect
// to the buyer's GCash wallet.
func gcashPayment(amount int64, intent string) map[string]any {
	return map[string]any{"amount": amount, "currency": "PHP", "country": "PH", "intent": intent,
		"payment_method": map[string]any{"method": "gcash"}, "redirect_url": "https://shop.example/return?cart=42"}
}

// redirectNotify sends a mock-redirect notification about payment p to
// core-api, signed with secret ("" : unsigned).
func redirectNotify(t *testing.T, s *stack.Stack, merchant, secret, id string, p mockredirect.Payment) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(mockredirect.Notification{ID: id, Type: "payment." + p.Status, CreatedAt: time.Now(), Data: p})
	h := []string{mockredirect.HeaderNotificationID, id}
	if secret != "" {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		h = append(h, mockredirect.HeaderTimestamp, ts, mockredirect.HeaderSignature, mockredirect.Sign(secret, ts, body))
	}
	return s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/webhooks/mock-redirect/"+merchant, "", body, h...)
}

// A redirect payment end to end over real HTTP: core-api asks
// mock-redirect for a push payment (201 buyer_approval_pending with the
// approval_url and approval_expires_at); the buyer approves or declines on
// the approval page and is sent back to redirect_url with the transaction
// id, while mock-redirect's signed notification, sent independently of the
// browser, settles the transaction through core-api's inbound endpoint.
// A reference that expires undecided is failed by the sweep. The expiry's
// rules, the missing redirect_url, and duplicate, unmatched, forged and
// early notifications are checked on the wire.
func TestRedirectPayment(t *testing.T) {
	s := stack.Start(t, stack.WithCoreAPI(func(c *coreapp.Config) { c.TransactionSyncInterval = 300 * time.Millisecond }))
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	get := func(t *testing.T, id string) map[string]any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
	}
	events := func(t *testing.T, id string) []any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/events?limit=100", nil)["items"].([]any)
	}
	// settled waits for the notification to move transaction id out of
	// buyer_approval_pending.
	settled := func(t *testing.T, id string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			tx := get(t, id)
			if tx["status"] != "buyer_approval_pending" || time.Now().After(deadline) {
				return tx
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	create := func(t *testing.T, body map[string]any, header ...string) map[string]any {
		t.Helper()
		code, tx := pay(t, s, tok, body, header...)
		if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" {
			t.Fatalf("redirect payment: %d %v", code, tx)
		}
		return tx
	}
	approvalURL := func(tx map[string]any) string {
		return tx["payment_method"].(map[string]any)["approval_url"].(string)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// decide plays the buyer on the approval page: the form's POST, the
	// redirect back never followed (the browser never returns).
	decide := func(t *testing.T, tx map[string]any, decision string) *url.URL {
		t.Helper()
		page, err := http.Get(approvalURL(tx))
		if err != nil {
			t.Fatal(err)
		}
		var html bytes.Buffer
		_, _ = html.ReadFrom(page.Body)
		page.Body.Close()
		if page.StatusCode != http.StatusOK || !strings.Contains(html.String(), `value="`+decision+`"`) {
			t.Fatalf("approval page: %d %s", page.StatusCode, html.String())
		}
		resp, err := noFollow.PostForm(approvalURL(tx), url.Values{"decision": {decision}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("decision: %d %v", resp.StatusCode, err)
		}
		return back
	}

	var approved map[string]any
	t.Run("approved on the page: the notification captures it, the buyer is sent back", func(t *testing.T) {
		key := uuid.NewString()
		tx := create(t, gcashPayment(1500, "capture"), "Idempotency-Key", key)
		exp, err := time.Parse(time.RFC3339Nano, tx["approval_expires_at"].(string))
		if d := time.Until(exp) - 7*24*time.Hour; err != nil || d > time.Minute || d < -time.Minute {
			t.Fatalf("approval_expires_at %v: the default window is 7 days", tx["approval_expires_at"])
		}
		if pm := tx["payment_method"].(map[string]any); pm["method"] != "gcash" || pm["id"] != nil || !strings.HasPrefix(approvalURL(tx), s.MockRedirect.URL()+"/pay/") {
			t.Fatalf("payment_method %v", pm)
		}
		code, again := pay(t, s, tok, gcashPayment(1500, "capture"), "Idempotency-Key", key)
		if code != http.StatusCreated || again["id"] != tx["id"] || approvalURL(again) != approvalURL(tx) {
			t.Fatalf("retry: %d %v", code, again)
		}
		back := decide(t, tx, "approve")
		if back.Host != "shop.example" || back.Query().Get("transaction_id") != tx["id"] || back.Query().Get("cart") != "42" || back.Query().Get("status") != "approved" {
			t.Fatalf("redirect back: %s", back)
		}
		got := settled(t, tx["id"].(string))
		if got["status"] != "capture_succeeded" || got["captured_amount"] != 1500.0 || got["authorized_amount"] != 1500.0 {
			t.Fatalf("after the approval: %v", got)
		}
		ev := events(t, tx["id"].(string))[0].(map[string]any)
		n, _ := ev["notification"].(map[string]any)
		if ev["name"] != "sale-succeeded" || n == nil || n["connector"] != "mock-redirect" || !strings.HasPrefix(n["id"].(string), "mrn_") {
			t.Fatalf("event: %v", ev)
		}
		if h := n["raw_headers"].(map[string]any); h["Mock-Redirect-Signature"] == nil || !strings.Contains(n["raw_body"].(string), tx["id"].(string)) {
			t.Fatalf("raw notification: %v", n)
		}
		approved = got
	})

	t.Run("declined on the page", func(t *testing.T) {
		tx := create(t, gcashPayment(800, "capture"))
		if back := decide(t, tx, "decline"); back.Query().Get("status") != "declined" {
			t.Fatalf("redirect back: %s", back)
		}
		got := settled(t, tx["id"].(string))
		if got["status"] != "authorization_declined" || got["error_code"] != "buyer_declined" || got["authorized_amount"] != 0.0 {
			t.Fatalf("after the decline: %v", got)
		}
	})

	t.Run("intent authorize, approved without a browser: authorization_succeeded", func(t *testing.T) {
		tx := create(t, gcashPayment(900, "authorize"))
		resp, err := http.Post(s.MockRedirect.URL()+"/sandbox/payments/"+tx["payment_service_transaction_id"].(string)+"/approve", "", nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("sandbox approve: %v %v", resp, err)
		}
		resp.Body.Close()
		if got := get(t, tx["id"].(string)); got["status"] != "authorization_succeeded" || got["authorized_amount"] != 900.0 || got["captured_amount"] != 0.0 {
			t.Fatalf("after the approval: %v", got)
		}
	})

	if approved == nil {
		t.FailNow()
	}
	id, merchant := approved["id"].(string), approved["merchant_account_id"].(string)
	payment := mockredirect.Payment{ID: approved["payment_service_transaction_id"].(string), Reference: id, Method: "gcash", Type: "sale",
		Amount: 1500, Currency: "PHP", Status: "approved"}

	t.Run("the same notification again is recorded once", func(t *testing.T) {
		before := len(events(t, id))
		code, raw := redirectNotify(t, s, merchant, connector.MockRedirectSandboxWebhookSecret, mockredirect.NotificationID(payment.ID, "approved"), payment)
		if code != http.StatusOK || !bytes.Contains(raw, []byte(`"outcome":"duplicate"`)) {
			t.Fatalf("duplicate: %d %s", code, raw)
		}
		if after := len(events(t, id)); after != before {
			t.Fatalf("events %d -> %d", before, after)
		}
		if got := get(t, id); got["captured_amount"] != 1500.0 {
			t.Fatalf("captured twice: %v", got)
		}
	})

	t.Run("a bad or missing signature is 401, recorded nowhere", func(t *testing.T) {
		tx := create(t, gcashPayment(700, "capture"))
		p := mockredirect.Payment{ID: tx["payment_service_transaction_id"].(string), Reference: tx["id"].(string), Status: "approved"}
		refusesForged(t, s, "mrn_forged", func(secret, id string) (int, []byte) {
			return redirectNotify(t, s, merchant, secret, id, p)
		})
		if got := get(t, tx["id"].(string)); got["status"] != "buyer_approval_pending" || len(events(t, tx["id"].(string))) != 2 {
			t.Fatalf("a forged notification changed the transaction: %v", got)
		}
	})

	t.Run("one that matches nothing is 200, counted, recorded nowhere", func(t *testing.T) {
		orphan := payment
		orphan.Reference = uuid.NewString()
		countsUnmatched(t, s, "mrn_orphan", func() (int, []byte) {
			return redirectNotify(t, s, merchant, connector.MockRedirectSandboxWebhookSecret, "mrn_orphan", orphan)
		})
	})

	t.Run("a notification before the create's answer is refused, then recorded once", func(t *testing.T) {
		// The sandbox amount the buyer approves at once: mock-redirect
		// notifies before it answers the create (core-api answers 409,
		// the transaction still processing), then sends it again.
		code, tx := pay(t, s, tok, gcashPayment(mockredirect.InstantApprovalAmount, "capture"))
		if code != http.StatusCreated || tx["status"] != "capture_succeeded" {
			t.Fatalf("instant approval: %d %v", code, tx)
		}
		deadline := time.Now().Add(10 * time.Second)
		for countRows(t, s.DBs.CoreDSN, "transaction_events WHERE transaction_id = '"+tx["id"].(string)+"' AND notification_id IS NOT NULL") == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the early notification was never recorded")
			}
			time.Sleep(50 * time.Millisecond)
		}
		ev := events(t, tx["id"].(string))[0].(map[string]any)
		if ev["name"] != "notification-received" || ev["status_after"] != "capture_succeeded" {
			t.Fatalf("latest event: %v", ev)
		}
		if got := get(t, tx["id"].(string)); got["captured_amount"] != float64(mockredirect.InstantApprovalAmount) {
			t.Fatalf("captured: %v", got)
		}
	})

	t.Run("expired undecided: failed by the sweep, no longer approvable", func(t *testing.T) {
		body := gcashPayment(600, "capture")
		body["approval_expires_at"] = time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
		tx := create(t, body)
		id := tx["id"].(string)
		deadline := time.Now().Add(15 * time.Second)
		for get(t, id)["status"] == "buyer_approval_pending" && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		got := get(t, id)
		if got["status"] != "authorization_failed" || got["error_code"] != "expired" || got["authorized_amount"] != 0.0 {
			t.Fatalf("after the expiry: %v", got)
		}
		if ev := events(t, id)[0].(map[string]any); ev["name"] != "authorization-failed" || ev["status_before"] != "buyer_approval_pending" {
			t.Fatalf("event: %v", ev)
		}
		resp, err := http.Post(s.MockRedirect.URL()+"/sandbox/payments/"+tx["payment_service_transaction_id"].(string)+"/approve", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("approving an expired payment: %d", resp.StatusCode)
		}
	})

	t.Run("approval_expires_at: in the future, within the window; the connection option wins", func(t *testing.T) {
		at := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
		option := func(d time.Duration) map[string]any {
			return map[string]any{"mock-redirect": map[string]any{"approval_expires_at": at(d)}}
		}
		for _, tc := range []struct {
			name      string
			requested string
			options   map[string]any
			status    int
			code      string
			pointer   string
			want      time.Duration
		}{
			{"in the past", at(-time.Minute), nil, 422, "approval_expires_at_in_past", "/approval_expires_at", 0},
			{"beyond the maximum window", at(31 * 24 * time.Hour), nil, 422, "approval_expires_at_beyond_window", "/approval_expires_at", 0},
			{"within it", at(3 * 24 * time.Hour), nil, 201, "", "", 3 * 24 * time.Hour},
			{"the override wins over the request", at(-time.Hour), option(5 * time.Hour), 201, "", "", 5 * time.Hour},
			{"the override wins over the default", "", option(2 * time.Hour), 201, "", "", 2 * time.Hour},
			{"an override beyond the window", at(time.Hour), option(40 * 24 * time.Hour), 422, "approval_expires_at_beyond_window",
				"/connection_options/mock-redirect/approval_expires_at", 0},
			{"not a date-time", "next week", nil, 400, "bad_request", "/approval_expires_at", 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := gcashPayment(500, "capture")
				if tc.requested != "" {
					body["approval_expires_at"] = tc.requested
				}
				if tc.options != nil {
					body["connection_options"] = tc.options
				}
				code, out := pay(t, s, tok, body)
				if code != tc.status {
					t.Fatalf("%d %v", code, out)
				}
				if tc.code != "" {
					d, _ := out["details"].([]any)
					if out["code"] != tc.code || len(d) != 1 || d[0].(map[string]any)["pointer"] != tc.pointer {
						t.Fatalf("refusal: %v", out)
					}
					return
				}
				exp, err := time.Parse(time.RFC3339Nano, out["approval_expires_at"].(string))
				if dd := time.Until(exp) - tc.want; err != nil || dd > 10*time.Second || dd < -10*time.Second {
					t.Fatalf("approval_expires_at %v, want now + %s", out["approval_expires_at"], tc.want)
				}
			})
		}
	})

	t.Run("without redirect_url: 400 missing_redirect_url", func(t *testing.T) {
		body := gcashPayment(500, "capture")
		delete(body, "redirect_url")
		code, out := pay(t, s, tok, body)
		d, _ := out["details"].([]any)
		if code != http.StatusBadRequest || out["code"] != "missing_redirect_url" || len(d) != 1 || d[0].(map[string]any)["pointer"] != "/redirect_url" {
			t.Fatalf("%d %v", code, out)
		}
	})
}

// Through a payment service of mock-redirect: its approval_window_hours
// is the default window, and its webhook_secret alone verifies the
// notifications about its payments. mock-redirect signs the
// notifications of an API key without a secret of its own with the
// default one: a payment service that holds it is notified; another
// refuses the notification (401, nothing recorded, mock-redirect retries)
// and its payment is settled by a sync, which looks the payment up by
// reference (TestRedirectWebhookSecretPerAPIKey gives a key its own).
func TestRedirectPaymentService(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	psCore := newCore(s, s.Token(t, "payment-services.write"), "")
	newPS := func(secret string) string {
		return psCore.ok(t, http.StatusCreated, http.MethodPost, "/payment-services", map[string]any{
			"connector": "mock-redirect", "method": "gcash", "settings": map[string]any{"approval_window_hours": 48},
			"credentials": map[string]any{"api_key": "mr_test_merchant_" + uuid.NewString()[:8], "webhook_secret": secret}})["id"].(string)
	}
	right, wrong := newPS(mockredirect.SandboxWebhookSecret), newPS("whsec_not_what_mock_redirect_signs_with")
	for _, tc := range []struct {
		name     string
		ps       string
		delivery float64 // the notification's last answer
	}{{"its secret", right, 200}, {"another secret", wrong, 401}} {
		t.Run(tc.name, func(t *testing.T) {
			body := gcashPayment(1100, "authorize")
			body["payment_service_id"] = tc.ps
			code, tx := pay(t, s, tok, body)
			if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" || tx["payment_service_id"] != tc.ps {
				t.Fatalf("redirect payment: %d %v", code, tx)
			}
			exp, _ := time.Parse(time.RFC3339Nano, tx["approval_expires_at"].(string))
			if d := time.Until(exp) - 48*time.Hour; d > time.Minute || d < -time.Minute {
				t.Fatalf("approval_expires_at %v: the payment service's window is 48 hours", tx["approval_expires_at"])
			}
			id := tx["id"].(string)
			if d := redirectDecides(t, s, tx, "approve"); d["status_code"] != tc.delivery {
				t.Fatalf("delivery: %v", d)
			}
			got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
			if tc.delivery != 200 {
				if got["status"] != "buyer_approval_pending" || countRows(t, s.DBs.CoreDSN, "transaction_events WHERE transaction_id = '"+id+"' AND notification_id IS NOT NULL") != 0 {
					t.Fatalf("a notification signed with another secret changed the transaction: %v", got)
				}
				got = core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/sync", nil)
			}
			if got["status"] != "authorization_succeeded" || got["authorized_amount"] != 1100.0 {
				t.Fatalf("after the approval: %v", got)
			}
		})
	}
}
