package mockbank

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
	"github.com/payorch/shared/simulator/simulatortest"
)

const key = "mb_test_simulator_tests"

func start(t *testing.T) (*Main, *httptest.Server) {
	t.Helper()
	m, err := New(Config{Config: simulator.Config{Environment: config.Sandbox, RetryDelay: time.Millisecond}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return m, srv
}

func call(t *testing.T, method, url, apiKey string, body any) (int, map[string]any) {
	t.Helper()
	return simulatortest.Call(t, method, url, apiKey, body)
}

func charge(ref, notifyURL string) map[string]any {
	return map[string]any{"reference": ref, "amount": 1500, "currency": "BRL", "notification_url": notifyURL, "expires_in_seconds": 60}
}

func TestNewRefusesProduction(t *testing.T) {
	if _, err := New(Config{Config: simulator.Config{Environment: config.Production}}, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("mock-bank started in production")
	}
}

// The create's refusals, each with its code.
func TestCreateRefusals(t *testing.T) {
	_, srv := start(t)
	with := func(k string, v any) map[string]any { c := charge("r", "http://x"); c[k] = v; return c }
	for _, tc := range []struct {
		name, key string
		body      any
		status    int
		code      string
	}{
		{"no key", "", charge("r", "http://x"), 401, "invalid_api_key"},
		{"key of another form", "sk_live_abcdefgh", charge("r", "http://x"), 401, "invalid_api_key"},
		{"unknown field", key, with("tip", 1), 400, "invalid_json"},
		{"no reference", key, with("reference", ""), 400, "invalid_reference"},
		{"zero amount", key, with("amount", 0), 400, "invalid_amount"},
		{"euro", key, with("currency", "EUR"), 400, "unsupported_currency"},
		{"relative notification url", key, with("notification_url", "/hook"), 400, "invalid_notification_url"},
		{"no expiry", key, with("expires_in_seconds", 0), 400, "invalid_expiry"},
		{"cart items not an array", key, with("cart_items", map[string]any{"name": "x"}), 400, "invalid_cart_items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, out := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", tc.key, tc.body); status != tc.status || out["error"] != tc.code {
				t.Fatalf("%d %v; want %d %s", status, out, tc.status, tc.code)
			}
		})
	}
}

// A charge is idempotent by reference; paying it sends a notification
// signed as documented, retried until a 2xx, and the same again (same id)
// when paid twice; cancel leaves a paid charge paid.
func TestPayNotifies(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	refuseFirst := true
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, b)
		if refuseFirst {
			refuseFirst = false
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer hook.Close()
	_, srv := start(t)
	status, c := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", key, charge("ref-1", hook.URL))
	if status != http.StatusCreated || c["status"] != StatusPending || c["qr_code"] == "" {
		t.Fatalf("create: %d %v", status, c)
	}
	if status, again := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", key, charge("ref-1", hook.URL)); status != http.StatusOK || again["id"] != c["id"] {
		t.Fatalf("same reference: %d %v", status, again)
	}
	id := c["id"].(string)
	for i := range 2 {
		status, out := call(t, http.MethodPost, srv.URL+"/sandbox/qr/"+id+"/pay", "", nil)
		d := out["delivery"].(map[string]any)
		if status != http.StatusOK || d["status_code"] != 200.0 {
			t.Fatalf("pay %d: %d %v", i, status, out)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d sends, want 3 (a retry, then the second pay)", len(got))
	}
	for i, r := range got {
		ts := r.Header.Get(HeaderTimestamp)
		if r.Header.Get(HeaderSignature) != Sign(SandboxWebhookSecret, ts, bodies[i]) || r.Header.Get(HeaderNotificationID) != got[0].Header.Get(HeaderNotificationID) {
			t.Fatalf("send %d: headers %v", i, r.Header)
		}
	}
	if status, out := call(t, http.MethodPost, srv.URL+"/v1/qr-charges/"+id+"/cancel", key, nil); status != http.StatusOK || out["status"] != StatusPaid {
		t.Fatalf("cancel of a paid charge: %d %v", status, out)
	}
	if status, _ := call(t, http.MethodGet, srv.URL+"/v1/qr-charges/"+id, "mb_test_another_merchant", nil); status != http.StatusNotFound {
		t.Fatalf("another key reads the charge: %d", status)
	}
}

// An expired charge (by its time, or ended by cancel) cannot be paid.
func TestExpiredChargeCannotBePaid(t *testing.T) {
	m, srv := start(t)
	_, a := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", key, charge("a", "http://127.0.0.1:1"))
	_, b := call(t, http.MethodPost, srv.URL+"/v1/qr-charges", key, charge("b", "http://127.0.0.1:1"))
	if status, out := call(t, http.MethodPost, srv.URL+"/v1/qr-charges/"+b["id"].(string)+"/cancel", key, nil); status != http.StatusOK || out["status"] != StatusExpired {
		t.Fatalf("cancel: %d %v", status, out)
	}
	m.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	for _, c := range []map[string]any{a, b} {
		if status, out := call(t, http.MethodPost, srv.URL+"/sandbox/qr/"+c["id"].(string)+"/pay", "", nil); status != http.StatusConflict || out["error"] != "charge_expired" {
			t.Fatalf("pay %s: %d %v", c["reference"], status, out)
		}
	}
}
