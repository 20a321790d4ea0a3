package mockredirect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
	"github.com/payorch/shared/simulator/simulatortest"
)

const key = "mr_test_simulator_key"

type received struct {
	mu   sync.Mutex
	got  []mockredirect.Notification
	hdrs []http.Header
}

func start(t *testing.T) (*mockredirect.Main, *received, string) {
	t.Helper()
	rec := &received{}
	inbound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n mockredirect.Notification
		_ = json.Unmarshal(body, &n)
		if r.Header.Get(mockredirect.HeaderSignature) != mockredirect.Sign(mockredirect.SandboxWebhookSecret, r.Header.Get(mockredirect.HeaderTimestamp), body) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		rec.mu.Lock()
		rec.got, rec.hdrs = append(rec.got, n), append(rec.hdrs, r.Header)
		rec.mu.Unlock()
	}))
	t.Cleanup(inbound.Close)
	m, err := mockredirect.New(mockredirect.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0", RetryDelay: 10 * time.Millisecond}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, rec, inbound.URL
}

func call(t *testing.T, method, u, apiKey string, body any) (int, map[string]any) {
	t.Helper()
	return simulatortest.Call(t, method, u, apiKey, body)
}

func payment(notify, ref string, expires time.Time) map[string]any {
	return map[string]any{"reference": ref, "method": "gcash", "type": "sale", "amount": 1500, "currency": "PHP",
		"redirect_url": "https://shop.example/back", "notification_url": notify, "expires_at": expires.UTC().Format(time.RFC3339)}
}

// The API's refusals, each with its code.
func TestCreateRefusals(t *testing.T) {
	m, _, notify := start(t)
	future := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name   string
		key    string
		mutate func(map[string]any)
		status int
		code   string
	}{
		{"no key", "", nil, 401, "invalid_api_key"},
		{"not a test key", "sk_live_abcdefghij", nil, 401, "invalid_api_key"},
		{"no reference", key, func(p map[string]any) { p["reference"] = "" }, 400, "invalid_reference"},
		{"another method", key, func(p map[string]any) { p["method"] = "card" }, 400, "unsupported_method"},
		{"no redirect_url", key, func(p map[string]any) { delete(p, "redirect_url") }, 400, "invalid_redirect_url"},
		{"expired already", key, func(p map[string]any) { p["expires_at"] = time.Now().Add(-time.Minute).Format(time.RFC3339) }, 400, "invalid_expires_at"},
		{"beyond 30 days", key, func(p map[string]any) { p["expires_at"] = time.Now().Add(31 * 24 * time.Hour).Format(time.RFC3339) }, 400, "invalid_expires_at"},
		{"not pesos", key, func(p map[string]any) { p["currency"] = "USD" }, 422, "unsupported_currency"},
		{"an unknown field", key, func(p map[string]any) { p["extra"] = 1 }, 400, "invalid_json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := payment(notify, "ref-"+tc.name, future)
			if tc.mutate != nil {
				tc.mutate(p)
			}
			if status, out := call(t, http.MethodPost, m.URL()+"/v1/payments", tc.key, p); status != tc.status || out["error"] != tc.code {
				t.Fatalf("%d %v, want %d %s", status, out, tc.status, tc.code)
			}
		})
	}
}

// A payment: the same reference is the same payment, found by reference
// under its own key only; the buyer decides on the page and is sent back
// with the reference; the signed notification follows; a decided payment
// cannot be decided otherwise, nor cancelled.
func TestPaymentLife(t *testing.T) {
	m, rec, notify := start(t)
	status, p := call(t, http.MethodPost, m.URL()+"/v1/payments", key, payment(notify, "ref-1", time.Now().Add(time.Hour)))
	if status != http.StatusCreated || p["status"] != "pending" || !strings.HasPrefix(p["approval_url"].(string), m.URL()+"/pay/mrp_") {
		t.Fatalf("create: %d %v", status, p)
	}
	if status, again := call(t, http.MethodPost, m.URL()+"/v1/payments", key, payment(notify, "ref-1", time.Now().Add(time.Hour))); status != http.StatusOK || again["id"] != p["id"] {
		t.Fatalf("again: %d %v", status, again)
	}
	if status, found := call(t, http.MethodGet, m.URL()+"/v1/payments?reference=ref-1", key, nil); status != http.StatusOK || found["id"] != p["id"] {
		t.Fatalf("by reference: %d %v", status, found)
	}
	if status, _ := call(t, http.MethodGet, m.URL()+"/v1/payments?reference=ref-1", "mr_test_another_key", nil); status != http.StatusNotFound {
		t.Fatalf("another key's: %d", status)
	}
	page, err := http.Get(p["approval_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !bytes.Contains(html, []byte(`value="approve"`)) || !bytes.Contains(html, []byte("ref-1")) || bytes.Contains(html, []byte("<script")) {
		t.Fatalf("page: %s", html)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(p["approval_url"].(string), url.Values{"decision": {"decline"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "https://shop.example/back?status=declined&transaction_id=ref-1" {
		t.Fatalf("back: %d %s", resp.StatusCode, loc)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec.mu.Lock()
		n := len(rec.got)
		rec.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := rec.got[0]; n.Type != "payment.declined" || n.Data.Reference != "ref-1" || n.ID != mockredirect.NotificationID(p["id"].(string), "declined") ||
		rec.hdrs[0].Get(mockredirect.HeaderNotificationID) != n.ID {
		t.Fatalf("notification %+v", n)
	}
	if status, out := call(t, http.MethodPost, m.URL()+"/sandbox/payments/"+p["id"].(string)+"/approve", "", nil); status != http.StatusConflict || out["error"] != "payment_declined" {
		t.Fatalf("approve after the decline: %d %v", status, out)
	}
	if status, out := call(t, http.MethodPost, m.URL()+"/v1/payments/"+p["id"].(string)+"/cancel", key, nil); status != http.StatusOK || out["status"] != "declined" {
		t.Fatalf("cancel after the decline: %d %v", status, out)
	}
}

// A pending payment cancelled (or past its expiry) is expired and can no
// longer be approved.
func TestCancelAndExpiry(t *testing.T) {
	m, _, notify := start(t)
	_, p := call(t, http.MethodPost, m.URL()+"/v1/payments", key, payment(notify, "ref-c", time.Now().Add(time.Hour)))
	if status, out := call(t, http.MethodPost, m.URL()+"/v1/payments/"+p["id"].(string)+"/cancel", key, nil); status != http.StatusOK || out["status"] != "expired" {
		t.Fatalf("cancel: %d %v", status, out)
	}
	if status, out := call(t, http.MethodPost, m.URL()+"/sandbox/payments/"+p["id"].(string)+"/approve", "", nil); status != http.StatusConflict || out["error"] != "payment_expired" {
		t.Fatalf("approve a cancelled payment: %d %v", status, out)
	}
	m.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	_, q := call(t, http.MethodPost, m.URL()+"/v1/payments", key, payment(notify, "ref-e", time.Now().Add(3*time.Hour)))
	m.Now = func() time.Time { return time.Now().Add(4 * time.Hour) }
	if status, out := call(t, http.MethodGet, m.URL()+"/v1/payments/"+q["id"].(string), key, nil); status != http.StatusOK || out["status"] != "expired" {
		t.Fatalf("past its expiry: %d %v", status, out)
	}
}
