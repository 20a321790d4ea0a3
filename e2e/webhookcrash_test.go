package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

// buyerEvents maps each buyer id to the webhook-ids of the buyer.created
// deliveries received for it.
func buyerEvents(t testing.TB, h *hookReceiver) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range h.received() {
		if r.Name != "buyer.created" {
			continue
		}
		var p struct{ Target struct{ ID string } }
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		out[p.Target.ID] = append(out[p.Target.ID], r.ID)
	}
	return out
}

// awaitBuyers waits until every buyer of ids has had its buyer.created
// delivered.
func awaitBuyers(t testing.TB, h *hookReceiver, ids []string) map[string][]string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := buyerEvents(t, h)
		missing := 0
		for _, id := range ids {
			if len(got[id]) == 0 {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events never delivered", missing, len(ids))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// core-api is killed (SIGKILL) while deliveries are in flight: the
// endpoint holds them. Restarted, it delivers every event once its
// claims' lease has run out: at least once, a duplicate carrying the same
// webhook-id.
func TestWebhookDeliveryCoreAPIKilledMidDelivery(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, webhookScopes...)
	h := newHookReceiver(t)
	release := make(chan struct{})
	var holding atomic.Bool
	var held atomic.Int32
	holding.Store(true)
	h.setRespond(func(hookRequest) int {
		if !holding.Load() {
			return http.StatusOK
		}
		held.Add(1)
		<-release
		return http.StatusServiceUnavailable // the killed process never reads it
	})
	env := []string{"WEBHOOK_ALLOW_LOOPBACK=true", "CORE_API_WEBHOOK_LEASE=2s", "CORE_API_WEBHOOK_POLL=20ms"}
	core := s.StartCoreProcess(t, env...)
	c := newCore(s, tok, "default")
	c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": h.srv.URL})
	var ids []string
	for i := range 20 {
		b := c.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"display_name": fmt.Sprintf("Buyer %d", i)})
		ids = append(ids, b["id"].(string))
	}
	for deadline := time.Now().Add(30 * time.Second); held.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no delivery reached the endpoint")
		}
	}
	core.Kill(t)
	holding.Store(false)
	close(release)
	if n := len(buyerEvents(t, h)); n != 0 {
		t.Fatalf("%d events counted delivered before the restart", n)
	}

	s.StartCoreProcess(t, env...)
	got := awaitBuyers(t, h, ids)
	for buyer, hooks := range got {
		for _, id := range hooks {
			if id != hooks[0] {
				t.Fatalf("buyer %s's event delivered with webhook-ids %v: a duplicate must carry the same", buyer, hooks)
			}
		}
	}
}

// Two core-api instances on one database deliver each event once per
// subscription.
func TestWebhookDeliveryTwoInstances(t *testing.T) {
	s := stack.Start(t, withWebhooks())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	second, err := coreapp.New(s.CoreAPI.Config, logging.New(s.Logs, slog.LevelDebug).With("service", "core-api-2"))
	if err != nil {
		t.Fatal(err)
	}
	second.Listener = ln
	if err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Close() })

	tok := s.Token(t, webhookScopes...)
	first := newCore(s, tok, "default")
	other := first
	other.base = "http://" + second.Addr()
	hooks := [2]*hookReceiver{newHookReceiver(t), newHookReceiver(t)}
	for _, h := range hooks {
		first.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": h.srv.URL})
	}
	const n = 200
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := first
			if w%2 == 1 {
				c = other
			}
			for i := w; i < n; i += 4 {
				code, raw := c.do(t, http.MethodPost, "/buyers", map[string]any{"display_name": fmt.Sprintf("Buyer %d", i)})
				var b struct{ ID string }
				if code != http.StatusCreated || json.Unmarshal(raw, &b) != nil {
					t.Errorf("create buyer: %d %s", code, raw)
					return
				}
				ids[i] = b.ID
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, h := range hooks {
		awaitBuyers(t, h, ids)
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would have arrived by now
	for i, h := range hooks {
		for buyer, got := range buyerEvents(t, h) {
			if len(got) != 1 {
				t.Errorf("subscription %d received buyer %s's event %d times", i, buyer, len(got))
			}
		}
	}
}
