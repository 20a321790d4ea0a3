package pgsetup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/shared/pgsetup"
	"github.com/payorch/shared/testsupport"
)

func TestZonesCannotReachEachOthersDatabase(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cases := []struct {
		name    string
		role    string
		db      string
		allowed bool
	}{
		{"vault role reaches vault database", dbs.Vault.Role, dbs.Vault.Name, true},
		{"core role reaches core database", dbs.Core.Role, dbs.Core.Name, true},
		{"core role is refused by vault database", dbs.Core.Role, dbs.Vault.Name, false},
		{"vault role is refused by core database", dbs.Vault.Role, dbs.Core.Name, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dsn, err := pgsetup.DSN(dbs.AdminDSN, pgsetup.Database{Name: tc.db, Role: tc.role})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if tc.allowed {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				defer conn.Close(ctx)
				if _, err := conn.Exec(ctx, `CREATE TABLE probe (x int)`); err != nil {
					t.Fatalf("owner cannot create a table: %v", err)
				}
				return
			}
			if err == nil {
				conn.Close(ctx)
				t.Fatal("connection allowed; want permission denied")
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Fatalf("got %v; want insufficient_privilege (42501)", err)
			}
		})
	}
}

// Provisioning again (every `make run` does) keeps what the databases hold:
// a row written before is there after.
func TestProvisionIsIdempotent(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	exec := func(dsn, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(dbs.VaultDSN, `CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)`)
	if err := pgsetup.Provision(ctx, dbs.AdminDSN, dbs.Vault, dbs.Core); err != nil {
		t.Fatalf("second provision: %v", err)
	}
	conn, err := pgx.Connect(ctx, dbs.VaultDSN)
	if err != nil {
		t.Fatalf("the vault database after a second provision: %v", err)
	}
	defer conn.Close(ctx)
	var x int
	if err := conn.QueryRow(ctx, `SELECT x FROM kept`).Scan(&x); err != nil || x != 42 {
		t.Fatalf("the row written before the second provision: %d, %v", x, err)
	}
}

func TestRejectsUnsafeNames(t *testing.T) {
	for _, d := range []pgsetup.Database{
		{Name: "x; DROP DATABASE postgres", Role: "r"},
		{Name: "ok", Role: `r" SUPERUSER`},
		{Name: "", Role: "r"},
		{Name: "UPPER", Role: "r"},
	} {
		if err := pgsetup.Provision(context.Background(), testsupport.AdminDSN(), d); err == nil {
			t.Errorf("Provision(%+v) accepted an unsafe name", d)
		}
	}
}

func TestDSN(t *testing.T) {
	got, err := pgsetup.DSN("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", pgsetup.Database{Name: "core", Role: "payorch_core"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://payorch_core@127.0.0.1:5432/core?sslmode=disable"; got != want {
		t.Fatalf("DSN = %q, want %q", got, want)
	}
	if _, err := pgsetup.DSN("mysql://x", pgsetup.Database{Name: "a", Role: "b"}); err == nil {
		t.Fatal("accepted a non-postgres URL")
	}
}
