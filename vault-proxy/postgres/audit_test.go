package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/testsupport"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/postgres"
)

func entry(seq uint64, rid string, tokens ...uuid.UUID) auditspool.Entry {
	return auditspool.Entry{Seq: seq, Detail: json.RawMessage(`{"seq":` + jsonNum(seq) + `}`), Event: vaultproxy.AuditEvent{
		OccurredAt: time.Date(2026, 11, 23, 10, 0, int(seq), 0, time.UTC), Actor: "a", MerchantAccountID: "m",
		Action: "forward", Tokens: tokens, Purpose: "vault-forward", Outcome: "success", RequestID: rid,
	}}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// A batch and its checkpoint commit together: a batch shipped against a
// checkpoint that has moved stores nothing, so a record is never stored
// twice, and each spool has its own checkpoint.
func TestShipAuditMovesTheCheckpointWithTheBatch(t *testing.T) {
	ctx := context.Background()
	dbs := testsupport.NewTestDatabases(t)
	db, err := postgres.Open(ctx, dbs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	a, b := uuid.New(), uuid.New()
	tok := uuid.New()

	if cp, err := db.AuditCheckpoint(ctx, a); err != nil || cp != 0 {
		t.Fatalf("new spool checkpoint = %d, %v; want 0", cp, err)
	}
	if err := db.ShipAudit(ctx, a, 0, 2, []auditspool.Entry{entry(1, "r1", tok), entry(2, "r2")}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		spool      uuid.UUID
		prev, last uint64
		rid        string
		want       error
	}{
		{"the same batch again (a retry after a lost answer)", a, 0, 2, "r1-again", auditspool.ErrCheckpointMoved},
		{"a batch from a stale position", a, 1, 3, "r2-again", auditspool.ErrCheckpointMoved},
		{"a batch from the checkpoint", a, 2, 3, "r3", nil},
		{"another spool starts at 0", b, 0, 1, "b1", nil},
	}
	for _, st := range steps {
		err := db.ShipAudit(ctx, st.spool, st.prev, st.last, []auditspool.Entry{entry(st.last, st.rid)})
		if !errors.Is(err, st.want) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
	}
	if cp, _ := db.AuditCheckpoint(ctx, a); cp != 3 {
		t.Fatalf("checkpoint of a = %d, want 3", cp)
	}

	rows, err := db.Pool.Query(ctx, `SELECT request_id, occurred_at, tokens, detail::text FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var rid, detail string
		var at time.Time
		var tokens []uuid.UUID
		if err := rows.Scan(&rid, &at, &tokens, &detail); err != nil {
			t.Fatal(err)
		}
		got = append(got, rid)
		if rid == "r1" && (len(tokens) != 1 || tokens[0] != tok || detail != `{"seq": 1}` || !at.Equal(time.Date(2026, 11, 23, 10, 0, 1, 0, time.UTC))) {
			t.Fatalf("r1 stored as tokens %v detail %s at %v", tokens, detail, at)
		}
	}
	if want := []string{"r1", "r2", "r3", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v (in order, each once)", got, want)
	}
}
