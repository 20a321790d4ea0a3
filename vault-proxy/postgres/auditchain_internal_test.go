package postgres

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/pgmigrate"
	"github.com/payorch/shared/testsupport"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
)

// The chain starts at migration 013: the records stored before it are
// outside it, and the chain of the records stored since verifies.
func TestAuditChainStartsAtItsMigration(t *testing.T) {
	ctx := context.Background()
	dbs := testsupport.NewTestDatabases(t)
	before := fstest.MapFS{}
	files, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name() < "013" {
			raw, err := fs.ReadFile(migrations, "migrations/"+f.Name())
			if err != nil {
				t.Fatal(err)
			}
			before[f.Name()] = &fstest.MapFile{Data: raw}
		}
	}
	if err := pgmigrate.UpDSN(ctx, dbs.VaultOwnerDSN, before, schema.VersionTable); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO audit_events (actor, merchant_account_id, action, outcome)
		SELECT 'a', 'm', 'forward', 'success' FROM generate_series(1, 3)`); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, dbs.VaultOwnerDSN); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, dbs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := auditspool.EncodeBatch(0,
		vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m", Action: "forward", Outcome: "success"},
		vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ShipAudit(ctx, uuid.New(), b); err != nil {
		t.Fatal(err)
	}
	c, err := db.VerifyAuditChain(ctx)
	if err != nil || c.StartedAfter != 3 || c.Records != 2 || c.Head.ID != 5 {
		t.Fatalf("verified %+v, %v; want the chain to start after record 3 and hold records 4 and 5", c, err)
	}
}
