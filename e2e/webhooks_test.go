package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/e2e/stack"
)

var webhookScopes = []string{"webhook-subscriptions.write", "buyers.write", "payment-methods.write", "transactions.write"}

// withWebhooks lets the in-process core-api deliver to loopback
// receivers, polling often.
func withWebhooks() stack.Option {
	return stack.WithCoreAPI(func(c *coreapp.Config) {
		c.Webhooks.AllowLoopback = true
		c.Webhooks.Poll = 20 * time.Millisecond
	})
}

// hookReceiver is a merchant's webhook endpoint on loopback. Each
// request is kept; respond decides the answer (200 when nil).
type hookReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []hookRequest
	arrived chan struct{}
	respond func(hookRequest) int
}

type hookRequest struct {
	Header http.Header
	Body   []byte
	ID     string // webhook-id
	Name   string // the payload's name
}

func newHookReceiver(t testing.TB) *hookReceiver {
	h := &hookReceiver{arrived: make(chan struct{}, 1)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct{ Name string }
		_ = json.Unmarshal(body, &p)
		req := hookRequest{Header: r.Header.Clone(), Body: body, ID: r.Header.Get("webhook-id"), Name: p.Name}
		h.mu.Lock()
		respond := h.respond
		h.mu.Unlock()
		code := http.StatusOK
		if respond != nil {
			code = respond(req)
		}
		h.mu.Lock()
		if code/100 == 2 {
			h.got = append(h.got, req)
		}
		h.mu.Unlock()
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) setRespond(f func(hookRequest) int) {
	h.mu.Lock()
	h.respond = f
	h.mu.Unlock()
}

func (h *hookReceiver) received() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// await waits until a received request satisfies match.
func (h *hookReceiver) await(t testing.TB, what string, match func(hookRequest) bool) hookRequest {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		for _, r := range h.received() {
			if match(r) {
				return r
			}
		}
		select {
		case <-h.arrived:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no webhook %s within 30s", what)
		}
	}
}

func targetOf(t testing.TB, r hookRequest) map[string]any {
	t.Helper()
	var p struct {
		Type, ID, Name, Environment string
		MerchantAccountID           string `json:"merchant_account_id"`
		Target                      map[string]any
	}
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != "event" || p.ID != r.ID || p.MerchantAccountID != "default" || p.Environment != "sandbox" {
		t.Fatalf("payload envelope %s", r.Body)
	}
	return p.Target
}

// verify checks a delivery's signature with the official Standard
// Webhooks library, not the project's own code.
func verify(t testing.TB, secret string, r hookRequest) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.Verify(r.Body, r.Header)
}

// The whole flow through the API: a subscription (secret shown once),
// the events of a buyer and of a card payment delivered with their
// target exactly as the API returns it and no card data, signatures the
// official library verifies, rotation with two signatures, the delivery
// history and a replay with the same webhook-id.
func TestWebhooksEndToEnd(t *testing.T) {
	s := stack.Start(t, withWebhooks())
	tok := s.Token(t, webhookScopes...)
	c := newCore(s, tok, "default")
	h := newHookReceiver(t)

	sub := c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": h.srv.URL + "/hooks"})
	secret, _ := sub["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("subscription answer without its secret: %v", sub)
	}
	subID := sub["id"].(string)
	got := c.ok(t, http.StatusOK, http.MethodGet, "/webhook-subscriptions/"+subID, nil)
	if _, shown := got["secret"]; shown {
		t.Fatal("a later read shows the secret")
	}
	if got["health"] == nil {
		t.Fatalf("no health in %v", got)
	}

	// A buyer's creation.
	buyer := c.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"display_name": "Ana"})
	r := h.await(t, "buyer.created", func(r hookRequest) bool { return r.Name == "buyer.created" })
	if err := verify(t, secret, r); err != nil {
		t.Fatalf("the official library refuses the signature: %v", err)
	}
	if want := c.ok(t, http.StatusOK, http.MethodGet, "/buyers/"+buyer["id"].(string), nil); !reflect.DeepEqual(targetOf(t, r), want) {
		t.Fatalf("target %v\nwant (GET) %v", targetOf(t, r), want)
	}

	// A card payment: the transaction as GET returns it, no card number
	// in any payload.
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "")["id"].(string)
	code, tx := pay(t, s, tok, payment(pm, 1200))
	if code != http.StatusCreated || tx["status"] != "authorization_succeeded" {
		t.Fatalf("payment: %d %v", code, tx)
	}
	r = h.await(t, "transaction.authorized", func(r hookRequest) bool { return r.Name == "transaction.authorized" })
	if want := c.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil); !reflect.DeepEqual(targetOf(t, r), want) {
		t.Fatalf("target %v\nwant (GET) %v", targetOf(t, r), want)
	}
	h.await(t, "payment-method.created", func(r hookRequest) bool { return r.Name == "payment-method.created" })
	for _, r := range h.received() {
		if bytes.Contains(r.Body, []byte(pan)) || bytes.Contains(r.Body, []byte(pan[6:])) {
			t.Fatalf("a webhook carries card data: %s", r.Body)
		}
	}

	// A deletion announces the resource as it stood.
	c.ok(t, http.StatusNoContent, http.MethodDelete, "/payment-methods/"+pm, nil)
	r = h.await(t, "payment-method.deleted", func(r hookRequest) bool { return r.Name == "payment-method.deleted" })
	if target := targetOf(t, r); target["id"] != pm || target["type"] != "payment-method" {
		t.Fatalf("payment-method.deleted target %v", target)
	}

	// Rotation: both secrets sign during the grace period.
	rot := c.ok(t, http.StatusOK, http.MethodPost, "/webhook-subscriptions/"+subID+"/rotate-secret", map[string]any{"grace_period_seconds": 3600})
	newSecret, _ := rot["secret"].(string)
	if newSecret == "" || newSecret == secret || rot["secret_rotation_ends_at"] == nil {
		t.Fatalf("rotation answer %v", rot)
	}
	c.ok(t, http.StatusOK, http.MethodPut, "/buyers/"+buyer["id"].(string), map[string]any{"display_name": "Ana B"})
	r = h.await(t, "buyer.updated", func(r hookRequest) bool { return r.Name == "buyer.updated" })
	if sigs := strings.Fields(r.Header.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("webhook-signature %q during the grace period, want two", r.Header.Get("webhook-signature"))
	}
	for _, sec := range []string{secret, newSecret} {
		if err := verify(t, sec, r); err != nil {
			t.Fatalf("during the grace period a secret does not verify: %v", err)
		}
	}

	// History and replay.
	evID := r.ID
	// The receiver answered before the attempt was recorded.
	var ds []any
	var d map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ds = c.ok(t, http.StatusOK, http.MethodGet, "/events/"+evID+"/deliveries", nil)["items"].([]any)
		if d = ds[0].(map[string]any); d["status"] != "pending" || time.Now().After(deadline) {
			break
		}
	}
	attempts := d["attempts"].([]any)
	if d["status"] != "succeeded" || len(attempts) != 1 || attempts[0].(map[string]any)["response_code"] != float64(200) {
		t.Fatalf("deliveries %v", ds)
	}
	before := len(h.received())
	if rep := c.ok(t, http.StatusAccepted, http.MethodPost, "/events/"+evID+"/replay", nil); rep["replayed"] != float64(1) {
		t.Fatalf("replay %v", rep)
	}
	h.await(t, "replayed", func(r hookRequest) bool {
		return len(h.received()) > before && r.ID == evID && r.Name == "buyer.updated"
	})
	n := 0
	for _, r := range h.received() {
		if r.ID == evID {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("event %s received %d times after a replay, want 2", evID, n)
	}
}

// Bad input gets the documented error shape.
func TestWebhookSubscriptionErrors(t *testing.T) {
	s := stack.Start(t)
	c := newCore(s, s.Token(t, webhookScopes...), "default")
	for _, tc := range []struct {
		name    string
		body    any
		pointer string
	}{
		{"no url", map[string]any{}, "/url"},
		{"relative url", map[string]any{"url": "/hooks"}, "/url"},
		{"unknown event", map[string]any{"url": "https://hooks.example.com/", "event_names": []string{"nope"}}, "/event_names"},
		{"bad credentials", map[string]any{"url": "https://hooks.example.com/", "basic_auth": map[string]any{"username": "a:b", "password": "x"}}, "/basic_auth/username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := c.do(t, http.MethodPost, "/webhook-subscriptions", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(string(raw), `"pointer":"`+tc.pointer+`"`) {
				t.Fatalf("%d %s, want 400 at %s", code, raw, tc.pointer)
			}
		})
	}
	if code, _ := c.do(t, http.MethodGet, "/webhook-subscriptions/00000000-0000-4000-8000-000000000000", nil); code != http.StatusNotFound {
		t.Fatalf("unknown subscription: %d", code)
	}
	if code, _ := c.do(t, http.MethodGet, "/webhook-subscriptions/nope", nil); code != http.StatusBadRequest {
		t.Fatalf("malformed id: %d", code)
	}
	sub := c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{
		"url": "https://hooks.example.com/", "basic_auth": map[string]any{"username": "merchant", "password": "s3cret"}})
	if !reflect.DeepEqual(sub["basic_auth"], map[string]any{"username": "merchant"}) {
		t.Fatalf("basic_auth %v", sub["basic_auth"])
	}
	id := sub["id"].(string)
	code, raw := c.do(t, http.MethodPost, "/webhook-subscriptions/"+id+"/rotate-secret", map[string]any{"grace_period_seconds": 0})
	if code != http.StatusBadRequest {
		t.Fatalf("grace 0: %d %s", code, raw)
	}

	// Update, list, delete.
	up := c.ok(t, http.StatusOK, http.MethodPut, "/webhook-subscriptions/"+id, map[string]any{
		"active": false, "event_names": []string{"refund.succeeded"}, "basic_auth": nil})
	if up["active"] != false || up["basic_auth"] != nil || !reflect.DeepEqual(up["event_names"], []any{"refund.succeeded"}) {
		t.Fatalf("after PUT: %v", up)
	}
	if code, raw := c.do(t, http.MethodPut, "/webhook-subscriptions/"+id, map[string]any{"url": "ftp://x.example.com/"}); code != http.StatusBadRequest {
		t.Fatalf("PUT of a bad url: %d %s", code, raw)
	}
	page := c.ok(t, http.StatusOK, http.MethodGet, "/webhook-subscriptions?limit=10", nil)
	items := page["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != id || items[0].(map[string]any)["secret"] != nil {
		t.Fatalf("list %v", page)
	}
	c.ok(t, http.StatusNoContent, http.MethodDelete, "/webhook-subscriptions/"+id, nil)
	if code, _ := c.do(t, http.MethodGet, "/webhook-subscriptions/"+id, nil); code != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d", code)
	}
	if strings.Contains(s.Logs.String(), "s3cret") {
		t.Fatal("a Basic authentication password reached the logs")
	}
}
