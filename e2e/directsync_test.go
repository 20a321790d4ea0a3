package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/e2e/stack"
)

// walletLink stands between core-api and a simulator (mock-direct,
// mock-redirect) and passes
// everything on, except that, once armed, it loses the next POST whose
// path ends in suffix: its answer (the wallet did it; core-api hears
// nothing) or the request itself (the wallet never sees it).
type walletLink struct {
	target atomic.Pointer[url.URL]
	lose   atomic.Value // "answer", "request" or ""
	suffix atomic.Value // string
}

func (l *walletLink) arm(lose, suffix string) { l.suffix.Store(suffix); l.lose.Store(lose) }

// option puts the link in front of the simulator whose address set
// gives core-api, and makes the sweep quick.
func (l *walletLink) option(t *testing.T, set func(c *coreapp.Config, url string)) stack.Option {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := l.target.Load()
		lose, _ := l.lose.Load().(string)
		suffix, _ := l.suffix.Load().(string)
		if r.Method != http.MethodPost || lose == "" || !strings.HasSuffix(r.URL.Path, suffix) || !l.lose.CompareAndSwap(lose, "") {
			httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
			return
		}
		if lose == "answer" {
			out := r.Clone(context.Background())
			out.URL.Scheme, out.URL.Host, out.RequestURI = target.Scheme, target.Host, ""
			resp, err := http.DefaultTransport.RoundTrip(out)
			if err != nil {
				t.Errorf("wallet link: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // no answer at all
		}
	}))
	t.Cleanup(srv.Close)
	return stack.WithCoreAPI(func(c *coreapp.Config) {
		set(c, srv.URL)
		c.TransactionSyncInterval, c.TransactionSyncMinAge = 300*time.Millisecond, time.Second
	})
}

// A direct payment's capture, void or refund whose answer from the wallet
// is lost stays in flight, its amount reserved; a sync (POST .../sync, or
// the sweep) settles it by the wallet's order, which lists its captures
// and refunds by the request id each was sent with and shows its void.
// One the wallet never received is failed by the sweep once the minimum
// age has passed, its amount freed.
func TestDirectOperationsWhoseAnswerIsLost(t *testing.T) {
	var link walletLink
	s := stack.Start(t, link.option(t, func(c *coreapp.Config, u string) { c.MockDirectURL = u }))
	target, _ := url.Parse(s.MockDirect.URL())
	link.target.Store(target)
	tok := s.Token(t, "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	authorized := func(t *testing.T, amount int64, intent, want string) string {
		t.Helper()
		_, tx := pay(t, s, tok, directPayment(amount, intent))
		id := tx["id"].(string)
		session := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/session", map[string]any{"session_token": tx["session_token"]})
		buyerDecides(t, s, session["session_data"].(map[string]any)["order_id"].(string), "approve")
		if code, done := completion(t, s, session["default_completion_url"].(string)); code != http.StatusOK || done["status"] != want {
			t.Fatalf("completion: %d %v", code, done)
		}
		return id
	}
	get := func(t *testing.T, id string) map[string]any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
	}
	// until polls transaction id until ok or 10 s.
	until := func(t *testing.T, id string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			tx := get(t, id)
			if ok(tx) || time.Now().After(deadline) {
				return tx
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	t.Run("a capture's answer lost: synced, captured once", func(t *testing.T) {
		id := authorized(t, 1000, "authorize", "authorization_succeeded")
		captureAnswerLostThenSynced(t, core, &link, id)
	})

	t.Run("a void's answer lost: synced, voided", func(t *testing.T) {
		id := authorized(t, 500, "authorize", "authorization_succeeded")
		link.arm("answer", "/void")
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/void", nil, "Idempotency-Key", "lost-void-"+id)
		if code != http.StatusOK || !strings.Contains(string(raw), `"status":"authorization_void_pending"`) {
			t.Fatalf("void, answer lost: %d %s", code, raw)
		}
		if got := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/sync", nil); got["status"] != "authorization_voided" {
			t.Fatalf("synced: %v", got)
		}
	})

	t.Run("a refund's answer lost: the sweep settles it as refunded", func(t *testing.T) {
		id := authorized(t, 800, "capture", "capture_succeeded")
		link.arm("answer", "/refunds")
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/refunds", map[string]any{"amount": 300}, "Idempotency-Key", "lost-ref-"+id)
		if code != http.StatusCreated || !strings.Contains(string(raw), `"status":"processing"`) {
			t.Fatalf("refund, answer lost: %d %s", code, raw)
		}
		got := until(t, id, func(tx map[string]any) bool { return tx["refunded_amount"] == 300.0 })
		if got["refunded_amount"] != 300.0 || got["refund_pending_amount"] != 0.0 {
			t.Fatalf("after the sweep: %v", got)
		}
	})

	t.Run("a refund the wallet never received: failed by the sweep, its amount freed", func(t *testing.T) {
		id := authorized(t, 700, "capture", "capture_succeeded")
		link.arm("request", "/refunds")
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/refunds", map[string]any{"amount": 200}, "Idempotency-Key", "unsent-ref-"+id)
		if code != http.StatusCreated || !strings.Contains(string(raw), `"status":"processing"`) {
			t.Fatalf("refund, request lost: %d %s", code, raw)
		}
		got := until(t, id, func(tx map[string]any) bool { return tx["refund_pending_amount"] == 0.0 })
		if got["refunded_amount"] != 0.0 || got["refund_pending_amount"] != 0.0 {
			t.Fatalf("after the sweep: %v", got)
		}
		refunds := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/refunds", nil)["items"].([]any)
		if r := refunds[0].(map[string]any); r["status"] != "failed" || r["error_code"] != "not_received_by_processor" {
			t.Fatalf("refund: %v", r)
		}
	})
}
