package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// Each attempt, through the API: the request as sent (the official
// library verifies it as shown), the answer bounded, Basic credentials
// (sent, and echoed back by the endpoint) and the answer's cookies in no
// answer of the API nor any row of the core database; an endpoint that
// never answers has a null response.
func TestWebhookAttemptsShowTheExchange(t *testing.T) {
	const (
		password = "basic-pa55-never-shown"
		cookie   = "session=cookie-never-shown"
		answer   = "thanks from the e2e receiver"
	)
	s := stack.Start(t, withWebhooks())
	c := newCore(s, s.Token(t, webhookScopes...), "default")
	got := make(chan hookRequest, 4)
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- hookRequest{Header: r.Header.Clone(), Body: body, ID: r.Header.Get("webhook-id")}
		w.Header().Set("Set-Cookie", cookie)
		w.Header().Set("X-Receipt", "r-42")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, answer+" "+r.Header.Get("Authorization")) // an echo, as some endpoints do
	}))
	t.Cleanup(h.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // connection refused

	sub := c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": h.URL + "/hooks",
		"event_names": []string{"buyer.created"}, "basic_auth": map[string]any{"username": "merchant", "password": password}})
	deadSub := c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": dead.URL,
		"event_names": []string{"buyer.created"}})
	c.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"display_name": "Ana"})
	r := <-got

	// Both deliveries recorded (the dead one pending its retry).
	var items []any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		items = c.ok(t, http.StatusOK, http.MethodGet, "/events/"+r.ID+"/deliveries", nil)["items"].([]any)
		recorded := 0
		for _, it := range items {
			recorded += len(it.(map[string]any)["attempts"].([]any))
		}
		if recorded == 2 || time.Now().After(deadline) {
			break
		}
	}
	attemptOf := func(subID string) map[string]any {
		for _, it := range items {
			if d := it.(map[string]any); d["subscription_id"] == subID && len(d["attempts"].([]any)) > 0 {
				return d["attempts"].([]any)[0].(map[string]any)
			}
		}
		t.Fatalf("no attempt of subscription %s in %v", subID, items)
		return nil
	}

	a := attemptOf(sub["id"].(string))
	req, res := a["request"].(map[string]any), a["response"].(map[string]any)
	shown := hookRequest{Header: http.Header{}, Body: []byte(req["body"].(string))}
	for k, v := range req["headers"].(map[string]any) {
		shown.Header.Set(k, v.(string))
	}
	if err := verify(t, sub["secret"].(string), shown); err != nil {
		t.Errorf("the request shown does not verify: %v", err)
	}
	if !bytes.Equal(shown.Body, r.Body) || shown.Header.Get("webhook-signature") != r.Header.Get("webhook-signature") ||
		req["url"] != h.URL+"/hooks" {
		t.Errorf("request shown %v, the receiver got %s %v", req, r.Body, r.Header)
	}
	if shown.Header.Get("authorization") != "[redacted]" || !strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") {
		t.Errorf("authorization shown %q, sent %q", shown.Header.Get("authorization"), r.Header.Get("Authorization"))
	}
	hdrs := res["headers"].(map[string]any)
	if res["status_code"] != 200.0 || res["body"] != answer+" Basic [redacted]" || res["body_truncated"] != false ||
		hdrs["x-receipt"] != "r-42" || hdrs["set-cookie"] != "[redacted]" {
		t.Errorf("response %v", res)
	}
	if d := attemptOf(deadSub["id"].(string)); d["response"] != nil || d["error"] != "connection refused" || d["request"] == nil {
		t.Errorf("attempt to a dead endpoint %v", d)
	}

	// The subscription's listing: the answer, not the payload.
	code, raw := c.do(t, http.MethodGet, "/webhook-subscriptions/"+sub["id"].(string)+"/deliveries", nil)
	if code != http.StatusOK || !strings.Contains(string(raw), `"body":null`) || !strings.Contains(string(raw), answer) {
		t.Errorf("subscription deliveries %d %s", code, raw)
	}

	// No credential anywhere: the API's answers, then every row of every
	// table of the core database.
	_, event := c.do(t, http.MethodGet, "/events/"+r.ID+"/deliveries", nil)
	secrets := []string{password, base64.StdEncoding.EncodeToString([]byte("merchant:" + password)), cookie}
	for _, sec := range secrets {
		if bytes.Contains(raw, []byte(sec)) || bytes.Contains(event, []byte(sec)) {
			t.Errorf("an API answer holds %q", sec)
		}
	}
	dump := dumpRows(t, s.DBs.CoreOwnerDSN)
	if !strings.Contains(dump, "r-42") {
		t.Fatal("the dump misses the attempts")
	}
	for _, sec := range secrets {
		if strings.Contains(dump, sec) {
			t.Errorf("the core database holds %q", sec)
		}
	}
}

// dumpRows is every row of every table of a database, as JSON text.
func dumpRows(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("tables %v, %v", tables, err)
	}
	var out strings.Builder
	for _, tbl := range tables {
		var s string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(to_jsonb(t)::text, E'\n'), '') FROM `+tbl+` t`).Scan(&s); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		out.WriteString(s)
	}
	return out.String()
}
