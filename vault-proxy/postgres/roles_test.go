package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// The runtime role vault-proxy serves as appends to the audit trail and
// reads it; PostgreSQL refuses it anything that changes or removes a
// record, so a compromised vault-proxy cannot rewrite what it did.
func TestRuntimeRoleCannotRewriteAuditEvents(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	if err := db.ShipAudit(ctx, uuid.New(), batch(t, 0, event(1, "kept-1"), event(2, "kept-2"))); err != nil {
		t.Fatalf("the runtime role appends: %v", err)
	}
	for _, tc := range []struct{ name, sql string }{
		{"update", `UPDATE audit_events SET outcome = 'rewritten'`},
		{"delete", `DELETE FROM audit_events WHERE request_id = 'kept-1'`},
		{"truncate", `TRUNCATE audit_events`},
		{"drop", `DROP TABLE audit_events`},
		{"alter", `ALTER TABLE audit_events DROP COLUMN detail`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Pool.Exec(ctx, tc.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Fatalf("%s as the runtime role: %v; want insufficient_privilege (42501)", tc.sql, err)
			}
		})
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE outcome = 'success'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the runtime role reads %d records, want the 2 it stored unchanged: %v", n, err)
	}
}

// Everything the migrations made belongs to the owner role, which ran
// them; the runtime role owns nothing it could alter or drop.
func TestMigrationsRunAsTheOwner(t *testing.T) {
	db, dbs := postgrestest.Open(t)
	rows, err := db.Pool.Query(context.Background(), `
		SELECT c.relname || ' (' || pg_get_userbyid(c.relowner) || ')' FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relowner <> $1::regrole ORDER BY 1`, dbs.Vault.Owner)
	if err != nil {
		t.Fatal(err)
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(others) > 0 {
		t.Fatalf("objects not owned by %s: %v, %v", dbs.Vault.Owner, others, err)
	}
}
