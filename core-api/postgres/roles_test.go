package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
)

// core-api serves as a runtime role that owns nothing: the schema is the
// migrations' (run as the owner role), never the service's to change.
func TestRuntimeRoleCannotChangeTheSchema(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	for _, tc := range []struct{ name, sql string }{
		{"create table", `CREATE TABLE probe (x int)`},
		{"drop table", `DROP TABLE buyers`},
		{"alter table", `ALTER TABLE merchant_accounts ADD COLUMN probe int`},
		{"truncate", `TRUNCATE payment_methods CASCADE`},
		{"create function", `CREATE FUNCTION probe() RETURNS int LANGUAGE sql AS 'SELECT 1'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Pool.Exec(ctx, tc.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Fatalf("%s as the runtime role: %v; want insufficient_privilege (42501)", tc.sql, err)
			}
		})
	}
}

// The grant convention of migration 008: a table a migration creates can
// be read and appended to by the runtime role and no more, so a history
// table needs no line of its own; a table whose rows the service changes
// takes one GRANT UPDATE, DELETE.
func TestNewTablesAreAppendOnlyUnlessGranted(t *testing.T) {
	ctx := context.Background()
	dbs := postgrestest.Migrated(t)
	db := postgrestest.Open(t, dbs.CoreDSN)
	owner, err := pgx.Connect(ctx, dbs.CoreOwnerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	// As a later migration would write them.
	if _, err := owner.Exec(ctx, `
		CREATE TABLE probe_events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, what text NOT NULL);
		CREATE TABLE probe_state (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, what text NOT NULL);
		GRANT UPDATE, DELETE ON probe_state TO payorch_core;`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"probe_events", "probe_state"} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO `+table+` (what) VALUES ('created')`); err != nil {
			t.Fatalf("INSERT INTO %s: %v", table, err)
		}
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 1 {
			t.Fatalf("SELECT FROM %s: %d, %v", table, n, err)
		}
	}
	assertPrivileges(t, db, []privilege{
		{`UPDATE probe_events SET what = 'rewritten'`, false},
		{`DELETE FROM probe_events`, false},
		{`TRUNCATE probe_events`, false},
		{`SELECT FROM probe_events FOR UPDATE`, false},
		{`UPDATE probe_state SET what = 'changed'`, true},
		{`DELETE FROM probe_state`, true},
		{`TRUNCATE probe_state`, false},
	})
}

// privilege is a statement and whether the runtime role may run it.
type privilege struct {
	sql     string
	allowed bool
}

// assertPrivileges runs each statement as the runtime role (db): an
// allowed one must succeed, any other be refused with 42501.
func assertPrivileges(t *testing.T, db *postgres.DB, cases []privilege) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			_, err := db.Pool.Exec(context.Background(), tc.sql)
			if tc.allowed {
				if err != nil {
					t.Fatalf("as the runtime role: %v", err)
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Fatalf("as the runtime role: %v; want insufficient_privilege (42501)", err)
			}
		})
	}
}

// A transaction's events are its history: the runtime role appends and
// reads them and can neither change nor remove one, while the state
// tables beside them are settled in place.
func TestRuntimeRoleCannotRewriteTransactionEvents(t *testing.T) {
	assertPrivileges(t, postgrestest.New(t), []privilege{
		{`UPDATE transaction_events SET name = 'rewritten'`, false},
		{`DELETE FROM transaction_events`, false},
		{`TRUNCATE transaction_events CASCADE`, false},
		{`SELECT count(*) FROM transaction_events`, true},
		{`UPDATE transactions SET updated_at = updated_at`, true},
		{`UPDATE captures SET updated_at = updated_at`, true},
		{`UPDATE refunds SET updated_at = updated_at`, true},
		{`UPDATE given_up_tokens SET shredded_at = shredded_at`, true},
		{`DELETE FROM transactions`, false},
	})
}

// Idempotency keys are completed and removed in place (given back after a
// failure, purged once expired).
func TestRuntimeRoleManagesIdempotencyKeys(t *testing.T) {
	assertPrivileges(t, postgrestest.New(t), []privilege{
		{`UPDATE idempotency_keys SET locked_until = locked_until`, true},
		{`DELETE FROM idempotency_keys`, true},
		{`TRUNCATE idempotency_keys`, false},
	})
}
