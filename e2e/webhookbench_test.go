package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
	"github.com/payorch/core-api/webhookhttp"
	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/testsupport"
)

// TestWebhookThroughput (BENCH_WEBHOOKS=1 only; make bench) measures
// webhook delivery against the real PostgreSQL and Vault, to receivers on
// loopback, through the product's dispatcher and HTTP sender:
//
//   - clean: 8 healthy endpoints, WEBHOOK_BENCH_PER_ENDPOINT (default
//     3000) pending deliveries each; the rate is deliveries the
//     receivers answered per second until all are.
//   - mixed: the same 8 healthy endpoints plus a dead one (connection
//     refused) and a slow one (answers after the 5 s delivery timeout),
//     each with as many pending deliveries; the rate is the healthy
//     endpoints' deliveries per second until all of theirs are settled.
//
// WEBHOOK_BENCH_PAIRS (default 5) pairs, alternating which run goes
// first; each pair's ratio mixed/clean is the healthy endpoints' rate
// kept with the bad ones present. Goals: at least 2,000 deliveries per second clean, and a ratio
// of at least 0.9.
func TestWebhookThroughput(t *testing.T) {
	if os.Getenv("BENCH_WEBHOOKS") == "" {
		t.Skip("a benchmark: BENCH_WEBHOOKS=1 (make bench)")
	}
	perEndpoint := envInt("WEBHOOK_BENCH_PER_ENDPOINT", 3000)
	pairs := envInt("WEBHOOK_BENCH_PAIRS", 5)

	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	if err := postgres.Migrate(ctx, dbs.CoreOwnerDSN); err != nil {
		t.Fatal(err)
	}
	db := openCoreDB(t, dbs.CoreDSN)
	crypter := vaulttransittest.New(t).Client
	svc := &webhooks.Service{Store: db, Crypter: crypter}

	var delivered atomic.Int64
	healthy := make([]string, 8)
	for i := range healthy {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			delivered.Add(1)
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		healthy[i] = srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there: connection refused
	slowDone := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(webhooks.DefaultTimeout + time.Second):
		case <-slowDone:
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { close(slowDone); slow.Close() })

	payload := benchPayload()
	run := func(mixed bool) float64 {
		if _, err := db.Pool.Exec(ctx, `DELETE FROM webhook_subscriptions`); err != nil {
			t.Fatal(err)
		}
		urls := slices.Clone(healthy)
		if mixed {
			urls = append(urls, dead, slow.URL)
		}
		for _, u := range urls {
			if _, err := svc.Create(ctx, "default", coreapi.WebhookSubscriptionFields{URL: coreapi.Some(u)}); err != nil {
				t.Fatal(err)
			}
		}
		// The outbox as the changes leave it: one event per delivery,
		// pending for every subscription.
		if _, err := db.Pool.Exec(ctx, `WITH e AS (
				INSERT INTO webhook_events (id, merchant_account_id, name, payload, created_at)
				SELECT gen_random_uuid(), 'default', 'transaction.authorized', $1, now() FROM generate_series(1, $2)
				RETURNING id, created_at)
			INSERT INTO webhook_deliveries (event_id, subscription_id, merchant_account_id, status, next_attempt_at, created_at, updated_at)
			SELECT e.id, s.id, 'default', 'pending', e.created_at, e.created_at, e.created_at
			FROM e CROSS JOIN webhook_subscriptions s`, payload, perEndpoint); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `ANALYZE webhook_deliveries`); err != nil {
			t.Fatal(err)
		}
		delivered.Store(0)
		want := int64(perEndpoint * len(healthy))
		d := &webhooks.Dispatcher{Store: db, Crypter: crypter, Sender: webhookhttp.New(true, webhooks.DefaultTimeout),
			Log: slog.New(slog.DiscardHandler)}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		start := time.Now()
		go func() { d.Run(rctx); close(done) }()
		for delivered.Load() < want {
			if time.Since(start) > 5*time.Minute {
				t.Fatalf("%d of %d delivered after 5 minutes", delivered.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		elapsed := time.Since(start)
		cancel()
		// The slow endpoint's batch takes its timeouts to end: it winds
		// down beside the next run, claiming nothing more.
		t.Cleanup(func() { <-done })
		return float64(want) / elapsed.Seconds()
	}

	var ratios []float64
	var cleanRates []float64
	for i := 1; i <= pairs; i++ {
		// Alternate which goes first, so that a drift of the machine's
		// load does not always favour one.
		var clean, mixed float64
		if i%2 == 1 {
			clean, mixed = run(false), run(true)
		} else {
			mixed, clean = run(true), run(false)
		}
		ratios = append(ratios, mixed/clean)
		cleanRates = append(cleanRates, clean)
		fmt.Printf("WEBHOOK_BENCH_PAIR pair=%d clean_per_s=%.0f mixed_healthy_per_s=%.0f ratio=%.2f\n", i, clean, mixed, mixed/clean)
	}
	slices.Sort(ratios)
	slices.Sort(cleanRates)
	rate, ratio := cleanRates[len(cleanRates)/2], ratios[len(ratios)/2]
	result := "met"
	if rate < 2000 || ratio < 0.9 {
		result = "not_met"
	}
	fmt.Printf("WEBHOOK_BENCH endpoints=10 healthy=8 per_endpoint=%d pairs=%d rate_per_s=%.0f ratio=%.2f goal_rate=2000 goal_ratio=0.9 result=%s\n",
		perEndpoint, pairs, rate, ratio, result)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchPayload is an event of about a kilobyte, a transaction's size.
func benchPayload() string {
	return `{"type":"event","id":"00000000-0000-4000-8000-000000000000","name":"transaction.authorized",` +
		`"created_at":"2026-01-01T00:00:00.000000Z","merchant_account_id":"default","environment":"sandbox","target":{` +
		`"type":"transaction","id":"00000000-0000-4000-8000-000000000001","status":"authorization_succeeded",` +
		`"metadata":{"note":"` + strings.Repeat("x", 700) + `"}}}`
}

// openCoreDB opens the core database beside a stack's core-api, as a
// baseline or a benchmark's own store: with the outbound event renderer
// core-api injects, so that its writes are the same statements.
func openCoreDB(tb testing.TB, dsn string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	db.Events = httpapi.EventRenderer{Environment: "sandbox"}
	return db
}
