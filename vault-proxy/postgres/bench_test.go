package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payorch/shared/pgdb"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// BenchmarkShipAudit is what storing one /vault-forward audit record costs
// the database: batches of 500 records shaped like a forward's, shipped as
// the spool ships them, on one connection whose PostgreSQL backend's CPU
// time (from /proc, the database is local in tests) is reported per record
// as pgCPUus/op. On a 2-core machine that runs PostgreSQL beside the
// proxy, this is CPU the forward path shares (BENCHMARKS.md, "Audit spool
// and shipper").
func BenchmarkShipAudit(b *testing.B) {
	ctx := context.Background()
	dbs := postgrestest.Migrated(b)
	cfg, err := pgxpool.ParseConfig(dbs.VaultDSN)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1 // one backend, whose CPU is the figure
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	db := &postgres.DB{DB: pgdb.DB{Pool: pool}}
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}

	const batch = 500
	events := forwardEvents(batch)
	spool := uuid.New()
	var prev uint64
	ship := func() {
		bt, err := auditspool.EncodeBatch(prev, events...)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.ShipAudit(ctx, spool, bt); err != nil {
			b.Fatal(err)
		}
		prev = bt.Last
	}
	for range 20 { // a table of some size, warm caches
		ship()
	}
	cpu0, ok := backendCPU(pid)
	b.ResetTimer()
	n := 0
	for n < b.N {
		ship()
		n += batch
	}
	b.StopTimer()
	if cpu1, ok1 := backendCPU(pid); ok && ok1 {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(n), "pgCPUus/op")
	}
}

// BenchmarkAppendCopyRows is the shipper's share of ShipAudit: a batch of
// 500 forward records written as COPY rows (ns/op per record).
func BenchmarkAppendCopyRows(b *testing.B) {
	bt, err := auditspool.EncodeBatch(0, forwardEvents(500)...)
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var n int
		if buf, n, err = postgres.AppendCopyRows(buf[:0], bt.Records); err != nil || n != 500 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/record")
}

// BenchmarkLinkCopyRows is the shipper's share of the audit chain: a
// batch of 500 forward records chained (ns/op per record), which it does
// holding the chain's lock.
func BenchmarkLinkCopyRows(b *testing.B) {
	bt, err := auditspool.EncodeBatch(0, forwardEvents(500)...)
	if err != nil {
		b.Fatal(err)
	}
	rows, _, err := postgres.AppendCopyRows(nil, bt.Records)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		postgres.LinkCopyRows(rows, [32]byte{})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/record")
}

// forwardEvents are n audit events shaped like a forward's.
func forwardEvents(n int) []vaultproxy.AuditEvent {
	tokens := []uuid.UUID{uuid.New(), uuid.New()}
	events := make([]vaultproxy.AuditEvent, n)
	for i := range events {
		events[i] = vaultproxy.AuditEvent{
			OccurredAt: time.Now(), Actor: "api_key:" + uuid.NewString(), MerchantAccountID: "default", Action: "forward",
			Tokens: tokens, Purpose: "vault-forward", Outcome: "success", RequestID: uuid.NewString(),
			Detail: map[string]any{
				"placeholders": []string{"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_1", "CARD_NUMBER_2", "CARD_EXPIRATION_DATE_YYYY_2"},
				"host":         "127.0.0.1:45678", "method": "POST", "duration_ms": 0, "status": 200,
			},
		}
	}
	return events
}

// backendCPU is the user+system CPU time of process pid (Linux).
func backendCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(raw)
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0, false
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, true
}
