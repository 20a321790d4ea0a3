package postgres_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/shared/testsupport"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/postgres"
)

// Concurrent records are group-committed: every one is written, visible
// once Record returns, with its own tokens and detail, and Close returns
// only after the queue is written.
func TestRecordGroupCommitsEveryEvent(t *testing.T) {
	ctx := context.Background()
	dbs := testsupport.NewTestDatabases(t)
	db, err := postgres.Open(ctx, dbs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	tok := uuid.New()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := vaultproxy.AuditEvent{Actor: "a", MerchantAccountID: "m", Action: "forward", Outcome: "success",
				RequestID: strconv.Itoa(i), Detail: map[string]any{"i": i}}
			if i%2 == 0 {
				e.Tokens = []uuid.UUID{tok, uuid.New()}
			}
			if err := db.Record(ctx, e); err != nil {
				t.Error(err)
				return
			}
			var detail, rid string
			var tokens []uuid.UUID
			if err := db.Pool.QueryRow(ctx, `SELECT detail->>'i', request_id, tokens FROM audit_events WHERE request_id = $1`,
				strconv.Itoa(i)).Scan(&detail, &rid, &tokens); err != nil {
				t.Errorf("event %d not visible after Record: %v", i, err)
				return
			}
			if detail != strconv.Itoa(i) || len(tokens) != len(e.Tokens) || (len(tokens) > 0 && tokens[0] != tok) {
				t.Errorf("event %d: detail %s tokens %v", i, detail, tokens)
			}
		}()
	}
	wg.Wait()
	db.Close()

	db2, err := postgres.Open(ctx, dbs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var count int
	if err := db2.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&count); err != nil || count != n {
		t.Fatalf("%d events, want %d (%v)", count, n, err)
	}
}
