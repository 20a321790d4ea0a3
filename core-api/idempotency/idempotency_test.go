package idempotency_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
)

func scope(key string) idempotency.Scope {
	return idempotency.Scope{MerchantAccountID: "default", Endpoint: "charges.create", Key: key}
}

// keys returns the keys left in the table.
func keys(t *testing.T, db *postgres.DB) map[string]bool {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT key FROM idempotency_keys`)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		left[k] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return left
}

// The purge removes the keys past their time and nothing else: not a
// fresh key, not an expired one whose claim still runs. Several instances
// purging at once share the work.
func TestPurgeRemovesOnlyExpiredKeys(t *testing.T) {
	ctx := context.Background()
	dsn := postgrestest.Migrated(t).CoreDSN
	db := postgrestest.Open(t, dsn)
	svc := &idempotency.Service{Store: db}
	fp := idempotency.FingerprintOf("POST", "/charges", []byte(`{}`))
	claim := func(key string) string {
		t.Helper()
		c, err := svc.Begin(ctx, scope(key), fp)
		if err != nil || c.Owner == "" {
			t.Fatalf("Begin(%s) = %+v, %v", key, c, err)
		}
		return c.Owner
	}
	for _, k := range []string{"fresh", "expired", "expired-running"} {
		owner := claim(k)
		if k != "expired-running" {
			if err := svc.Complete(ctx, scope(k), owner, idempotency.Response{Status: 201, Body: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 250 {
		claim(fmt.Sprintf("old-%d", i))
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
		WHERE key <> 'fresh'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET locked_until = NULL, response_status = 201
		WHERE key LIKE 'old-%'`); err != nil {
		t.Fatal(err)
	}

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	for range 3 { // three instances
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &idempotency.Purger{Store: postgrestest.Open(t, dsn), Batch: 20}
			n, err := p.Run(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 251 {
		t.Errorf("purged %d, want 251", total)
	}
	if left := keys(t, db); len(left) != 2 || !left["fresh"] || !left["expired-running"] {
		t.Fatalf("left %v, want fresh and expired-running", left)
	}
}

// A key found expired but not yet purged is a new key: claimed afresh,
// whatever it held.
func TestExpiredKeyIsClaimedAfresh(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	svc := &idempotency.Service{Store: db}
	c, err := svc.Begin(ctx, scope("k"), idempotency.FingerprintOf("POST", "/a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Complete(ctx, scope("k"), c.Owner, idempotency.Response{Status: 201}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now()`); err != nil {
		t.Fatal(err)
	}
	again, err := svc.Begin(ctx, scope("k"), idempotency.FingerprintOf("POST", "/b", nil))
	if err != nil || again.Owner == "" || again.Replay != nil || again.TakenOver {
		t.Fatalf("Begin after expiry = %+v, %v, want a new claim", again, err)
	}
}

// The purge job stops with its context.
func TestPurgerEveryStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		(&idempotency.Purger{Store: postgrestest.New(t)}).Every(ctx, time.Millisecond)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not stop")
	}
}

// A key past its 24 hours whose claim still runs (its lease has not run
// out) stays that claim's: a retry is refused rather than run beside it.
func TestExpiredKeyUnderARunningClaimIsInFlight(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	svc := &idempotency.Service{Store: db}
	fp := idempotency.FingerprintOf("POST", "/a", nil)
	if _, err := svc.Begin(ctx, scope("k"), fp); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now()`); err != nil {
		t.Fatal(err)
	}
	if c, err := svc.Begin(ctx, scope("k"), fp); err != idempotency.ErrInFlight {
		t.Fatalf("Begin = %+v, %v, want ErrInFlight", c, err)
	}
}
