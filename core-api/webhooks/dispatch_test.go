package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
	"github.com/payorch/core-api/webhookhttp"
	"github.com/payorch/core-api/webhooks"
)

// receiver is a merchant's endpoint on loopback: it answers each request
// with the next status of its script (the last one once the script is
// spent), and keeps what it received.
type receiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	script []int
	got    []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, script ...int) *receiver {
	r := &receiver{script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body})
		code := r.script[0]
		if len(r.script) > 1 {
			r.script = r.script[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// clock is the dispatcher's injected time: the tests move it instead of
// sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

type fixture struct {
	db    *postgres.DB
	svc   *webhooks.Service
	disp  *webhooks.Dispatcher
	clock *clock
}

func newFixture(t *testing.T) *fixture {
	db := postgrestest.New(t)
	crypter := vaulttransittest.New(t).Client
	c := &clock{now: time.Now()}
	return &fixture{db: db, clock: c,
		svc: &webhooks.Service{Store: db, Crypter: crypter, Now: c.Now},
		disp: &webhooks.Dispatcher{Store: db, Crypter: crypter, Sender: webhookhttp.New(true, 2*time.Second),
			Log: slog.New(slog.DiscardHandler), Now: c.Now}}
}

func (f *fixture) subscribe(t *testing.T, url string, events ...string) *coreapi.WebhookSubscription {
	t.Helper()
	fields := coreapi.WebhookSubscriptionFields{URL: coreapi.Some(url)}
	if events != nil {
		fields.EventNames = coreapi.Some(events)
	}
	s, err := f.svc.Create(context.Background(), "default", fields)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) newBuyer(t *testing.T) *coreapi.Buyer {
	t.Helper()
	b, err := f.db.CreateBuyer(context.Background(), "default", coreapi.BuyerFields{DisplayName: coreapi.Some("Ana")})
	if err != nil {
		t.Fatal(err)
	}
	f.catchUp()
	return b
}

// catchUp moves the clock to the wall clock's now when that is later:
// the events just written are due at the database's time.
func (f *fixture) catchUp() {
	if now := time.Now(); now.After(f.clock.Now()) {
		f.clock.Set(now)
	}
}

func (f *fixture) runOnce(t *testing.T) int {
	t.Helper()
	n, err := f.disp.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) deliveries(t *testing.T, sub string) []coreapi.WebhookDelivery {
	t.Helper()
	ds, err := f.svc.SubscriptionDeliveries(context.Background(), "default", sub)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// A failed attempt is retried with back-off, with the same webhook-id,
// and not before it is due; a 2xx settles the delivery.
func TestRetryUntilSuccessOnTheInjectedClock(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, 500, 503, 200)
	sub := f.subscribe(t, r.srv.URL+"/hooks")
	b := f.newBuyer(t)

	if n := f.runOnce(t); n != 1 {
		t.Fatalf("first round attempted %d deliveries, want 1", n)
	}
	d := f.deliveries(t, sub.ID)[0]
	if d.Status != coreapi.DeliveryPending || d.NextAttemptAt == nil || len(d.Attempts) != 1 || *d.Attempts[0].ResponseCode != 500 {
		t.Fatalf("after a 500: %+v", d)
	}
	wait := d.NextAttemptAt.Sub(f.clock.Now())
	if wait < 2500*time.Millisecond || wait > 5*time.Second {
		t.Fatalf("first retry in %s, want 2.5s to 5s (5s with jitter)", wait)
	}
	if n := f.runOnce(t); n != 0 {
		t.Fatalf("a delivery not yet due was attempted (%d)", n)
	}
	f.clock.Set(*d.NextAttemptAt)
	f.runOnce(t)
	d = f.deliveries(t, sub.ID)[0]
	wait = d.NextAttemptAt.Sub(f.clock.Now())
	if wait < 5*time.Second || wait > 10*time.Second {
		t.Fatalf("second retry in %s, want 5s to 10s", wait)
	}
	f.clock.Set(*d.NextAttemptAt)
	f.runOnce(t)
	d = f.deliveries(t, sub.ID)[0]
	if d.Status != coreapi.DeliverySucceeded || len(d.Attempts) != 3 || d.NextAttemptAt != nil {
		t.Fatalf("after a 200: %+v", d)
	}

	got := r.received()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	for _, g := range got {
		if id := g.header.Get("webhook-id"); id != got[0].header.Get("webhook-id") || id == "" {
			t.Fatalf("webhook-id %q changed across retries (first %q)", id, got[0].header.Get("webhook-id"))
		}
		if string(g.body) != string(got[0].body) {
			t.Fatal("the payload changed across retries")
		}
	}
	var p struct {
		Type, ID, Name, MerchantAccountID, Environment string
		Target                                         map[string]any
	}
	if err := json.Unmarshal(got[0].body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "buyer.created" || p.ID != got[0].header.Get("webhook-id") || p.Target["id"] != b.ID || p.Target["type"] != "buyer" {
		t.Fatalf("payload %s", got[0].body)
	}
}

// A delivery that never succeeds is retried until the 7-day window from
// its event ends, then failed.
func TestGiveUpAfterSevenDays(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, 500)
	sub := f.subscribe(t, r.srv.URL)
	f.newBuyer(t)
	start := f.clock.Now()
	var d coreapi.WebhookDelivery
	for i := 0; i < 100; i++ {
		f.runOnce(t)
		d = f.deliveries(t, sub.ID)[0]
		if d.Status != coreapi.DeliveryPending {
			break
		}
		if d.NextAttemptAt.After(d.CreatedAt.Add(webhooks.RetryWindow)) {
			t.Fatalf("next attempt %s past the window's end", d.NextAttemptAt)
		}
		f.clock.Set(*d.NextAttemptAt)
	}
	if d.Status != coreapi.DeliveryFailed {
		t.Fatalf("still %s after 100 rounds", d.Status)
	}
	span := f.clock.Now().Sub(start)
	if span < webhooks.RetryWindow-time.Minute || span > webhooks.RetryWindow+time.Minute {
		t.Fatalf("gave up after %s, want 7 days", span)
	}
	if n := len(d.Attempts); n < 20 || n > 60 || n != len(r.received()) {
		t.Fatalf("%d attempts recorded, %d received; want some 35, equal", n, len(r.received()))
	}
	h, err := f.svc.Health(context.Background(), "default", sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if h.FailedCount != 1 || h.QueueDepth != 0 {
		t.Fatalf("health %+v", h)
	}
	// A replay of the failed deliveries since the event delivers it again.
	n, err := f.svc.ReplayFailed(context.Background(), "default", sub.ID, start.Add(-time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("ReplayFailed = %d, %v", n, err)
	}
	if f.runOnce(t) != 1 {
		t.Fatal("the replayed delivery was not attempted")
	}
}

// 410 Gone disables the subscription: nothing more is delivered to it.
func TestGoneDisablesTheSubscription(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, http.StatusGone)
	sub := f.subscribe(t, r.srv.URL)
	f.newBuyer(t)
	f.runOnce(t)
	s, err := f.svc.Get(context.Background(), "default", sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Active || s.DisabledReason == nil || *s.DisabledReason != "gone" {
		t.Fatalf("after 410: %+v", s)
	}
	if d := f.deliveries(t, sub.ID)[0]; d.Status != coreapi.DeliveryFailed {
		t.Fatalf("delivery %s after 410", d.Status)
	}
	f.newBuyer(t)
	f.clock.Set(f.clock.Now().Add(time.Hour))
	if n := f.runOnce(t); n != 0 {
		t.Fatalf("%d deliveries to a disabled subscription", n)
	}
}

// Deliveries reach only the subscriptions whose filter takes the event;
// one endpoint's failures leave another's deliveries alone.
func TestFilterAndSeparateQueues(t *testing.T) {
	f := newFixture(t)
	ok, bad := newReceiver(t, 200), newReceiver(t, 500)
	all := f.subscribe(t, ok.srv.URL)
	failing := f.subscribe(t, bad.srv.URL)
	f.subscribe(t, ok.srv.URL+"/refunds", "refund.succeeded")
	for range 3 {
		f.newBuyer(t)
	}
	f.runOnce(t)
	if len(ok.received()) != 3 || len(bad.received()) != 3 {
		t.Fatalf("received %d and %d, want 3 each (the refunds-only subscription nothing)", len(ok.received()), len(bad.received()))
	}
	for _, d := range f.deliveries(t, all.ID) {
		if d.Status != coreapi.DeliverySucceeded {
			t.Fatalf("healthy endpoint's delivery %s", d.Status)
		}
	}
	for _, d := range f.deliveries(t, failing.ID) {
		if d.Status != coreapi.DeliveryPending {
			t.Fatalf("failing endpoint's delivery %s", d.Status)
		}
	}
}

// The address rules apply at connect time: without the loopback
// allowance, a subscription to 127.0.0.1 is refused before any request.
func TestLoopbackRefusedWithoutTheAllowance(t *testing.T) {
	f := newFixture(t)
	f.disp.Sender = webhookhttp.New(false, time.Second)
	r := newReceiver(t, 200)
	sub := f.subscribe(t, r.srv.URL)
	f.newBuyer(t)
	f.runOnce(t)
	if len(r.received()) != 0 {
		t.Fatal("a delivery reached loopback")
	}
	d := f.deliveries(t, sub.ID)[0]
	if d.Attempts[0].Error == nil || *d.Attempts[0].Error != "destination refused: address_loopback" {
		t.Fatalf("attempt error %v", deref(d.Attempts[0].Error))
	}
}

// An event exists if and only if its change committed.
func TestOutboxCommitsWithTheChange(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := newReceiver(t, 200)
	sub := f.subscribe(t, r.srv.URL)
	tx := &coreapi.Transaction{MerchantAccountID: "default", TransactionState: coreapi.TransactionState{Amount: 100},
		Intent: coreapi.IntentAuthorize, Currency: "EUR", TransactionDetails: coreapi.TransactionDetails{PaymentSource: coreapi.PaymentSourceECommerce},
		PaymentMethod: coreapi.TransactionPaymentMethod{Method: "gcash"}}
	if err := f.db.CreateTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	step := func(op coreapi.TransactionOperation, abort bool) {
		errAbort := errors.New("abort")
		err := f.db.InTx(ctx, func(ptx *postgres.Tx) error {
			tr, now, err := ptx.LockTransaction(ctx, "default", tx.ID)
			if err != nil {
				return err
			}
			next, ev, err := tr.Advance(coreapi.Step{Operation: op}, now)
			if err != nil {
				return err
			}
			if err := ptx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev}); err != nil {
				return err
			}
			if abort {
				return errAbort
			}
			return nil
		})
		if err != nil && !errors.Is(err, errAbort) {
			t.Fatal(err)
		}
	}
	step(coreapi.OpAuthorizationDeclined, true) // rolled back: no event
	step(coreapi.OpAuthorizationSucceeded, false)
	f.catchUp()
	f.runOnce(t)
	var names []string
	for _, d := range f.deliveries(t, sub.ID) {
		names = append(names, d.EventName)
	}
	if len(names) != 2 || names[0] != "transaction.authorized" || names[1] != "transaction.created" {
		t.Fatalf("events %v, want transaction.authorized and transaction.created only", names)
	}
	var p struct{ Target map[string]any }
	for _, g := range r.received() {
		if err := json.Unmarshal(g.body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Target["id"] != tx.ID || p.Target["type"] != "transaction" {
			t.Fatalf("target %v", p.Target)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// An answer after the delivery timeout is a failed attempt, retried.
func TestAnswerAfterTheTimeoutFails(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	f.disp.Timeout = 200 * time.Millisecond
	sub := f.subscribe(t, slow.URL)
	f.newBuyer(t)
	f.runOnce(t)
	d := f.deliveries(t, sub.ID)[0]
	if d.Status != coreapi.DeliveryPending || deref(d.Attempts[0].Error) != "timeout" || d.Attempts[0].ResponseCode != nil || d.Attempts[0].Response != nil {
		t.Fatalf("delivery %+v, attempt error %s", d, deref(d.Attempts[0].Error))
	}
}
