package pgsetup_test

import (
	"context"
	"errors"
	"fmt"
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
		{"vault owner reaches vault database", dbs.Vault.Owner, dbs.Vault.Name, true},
		{"core role reaches core database", dbs.Core.Role, dbs.Core.Name, true},
		{"core owner reaches core database", dbs.Core.Owner, dbs.Core.Name, true},
		{"core role is refused by vault database", dbs.Core.Role, dbs.Vault.Name, false},
		{"core owner is refused by vault database", dbs.Core.Owner, dbs.Vault.Name, false},
		{"vault role is refused by core database", dbs.Vault.Role, dbs.Core.Name, false},
		{"vault owner is refused by core database", dbs.Vault.Owner, dbs.Core.Name, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dsn, err := pgsetup.DSN(dbs.AdminDSN, tc.db, tc.role)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if tc.allowed {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				conn.Close(ctx)
				return
			}
			if err == nil {
				conn.Close(ctx)
				t.Fatal("connection allowed; want permission denied")
			}
			wantDenied(t, err)
		})
	}
}

// Only the owner role creates objects in its database: the runtime role
// can neither create a table nor a temporary one.
func TestOnlyTheOwnerChangesTheSchema(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	for _, d := range []pgsetup.Database{dbs.Vault, dbs.Core} {
		t.Run(d.Name, func(t *testing.T) {
			if err := exec(t, dbs.AdminDSN, d.Name, d.Owner, `CREATE TABLE probe (x int)`); err != nil {
				t.Fatalf("the owner cannot create a table: %v", err)
			}
			for _, sql := range []string{`CREATE TABLE probe2 (x int)`, `CREATE TEMPORARY TABLE probe3 (x int)`, `DROP TABLE probe`} {
				wantDenied(t, exec(t, dbs.AdminDSN, d.Name, d.Role, sql))
			}
		})
	}
}

// connect connects to database db as role (the admin when empty) for the
// rest of the test.
func connect(t *testing.T, adminDSN, db, role string) *pgx.Conn {
	t.Helper()
	dsn, err := pgsetup.DSN(adminDSN, db, role)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// exec runs sql in database db as role.
func exec(t *testing.T, adminDSN, db, role, sql string) error {
	t.Helper()
	_, err := connect(t, adminDSN, db, role).Exec(context.Background(), sql)
	return err
}

func wantDenied(t *testing.T, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("got %v; want insufficient_privilege (42501)", err)
	}
}

// Provisioning again (every `make run` does) keeps what the databases hold:
// a row written before is there after.
func TestProvisionIsIdempotent(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	if err := exec(t, dbs.AdminDSN, dbs.Vault.Name, dbs.Vault.Owner, `CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	if err := pgsetup.Provision(ctx, dbs.AdminDSN, dbs.Vault, dbs.Core); err != nil {
		t.Fatalf("second provision: %v", err)
	}
	conn := connect(t, dbs.AdminDSN, dbs.Vault.Name, dbs.Vault.Owner)
	var x int
	if err := conn.QueryRow(ctx, `SELECT x FROM kept`).Scan(&x); err != nil || x != 42 {
		t.Fatalf("the row written before the second provision: %d, %v", x, err)
	}
}

// A database provisioned before the roles were split belongs, with its
// tables, to the runtime role. Provisioning it again hands both to the
// owner role, keeps the rows, and leaves the runtime role without the
// owner's rights (until a migration grants it some).
func TestProvisionTakesTheRuntimeRolesTablesBack(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	old := pgsetup.Vault(dbs.Vault.Name + "_old")
	t.Cleanup(func() { _ = pgsetup.Drop(context.Background(), dbs.AdminDSN, old.Name) })
	if err := exec(t, dbs.AdminDSN, "postgres", "", fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, old.Name, old.Role)); err != nil {
		t.Fatal(err)
	}
	if err := exec(t, dbs.AdminDSN, old.Name, old.Role, `CREATE TABLE kept (id bigint GENERATED ALWAYS AS IDENTITY, x int); INSERT INTO kept (x) VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	if err := pgsetup.Provision(ctx, dbs.AdminDSN, old); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbs.AdminDSN, old.Name, old.Owner)
	var db, table, seq string
	var x int
	if err := conn.QueryRow(ctx, `SELECT pg_get_userbyid(d.datdba), pg_get_userbyid(c.relowner), pg_get_userbyid(s.relowner), k.x
		FROM pg_database d, pg_class c, pg_class s, kept k
		WHERE d.datname = current_database() AND c.relname = 'kept' AND s.relname = 'kept_id_seq'`).Scan(&db, &table, &seq, &x); err != nil {
		t.Fatal(err)
	}
	if db != old.Owner || table != old.Owner || seq != old.Owner || x != 42 {
		t.Fatalf("database, table and sequence owned by %s, %s, %s, row %d; want %s and the row kept", db, table, seq, x, old.Owner)
	}
	wantDenied(t, exec(t, dbs.AdminDSN, old.Name, old.Role, `DROP TABLE kept`))
}

// Test packages provision at the same time against one cluster, with the
// same roles: provisioning races with itself, creating the roles included,
// and every run succeeds.
func TestProvisionRacesItself(t *testing.T) {
	ctx := context.Background()
	admin := testsupport.AdminDSN()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	d := pgsetup.Database{Owner: "t_race_owner_" + suffix, Role: "t_race_role_" + suffix}
	names := make([]string, 4)
	for i := range names {
		names[i] = fmt.Sprintf("t_race_%s_%d", suffix, i)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = pgsetup.Drop(ctx, admin, names...)
		for _, r := range []string{d.Owner, d.Role} {
			_ = exec(t, admin, "postgres", "", "DROP ROLE IF EXISTS "+r)
		}
	})
	errs := make(chan error, len(names))
	for _, n := range names {
		go func() {
			d := d
			d.Name = n
			errs <- pgsetup.Provision(ctx, admin, d)
		}()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Errorf("a concurrent provision: %v", err)
		}
	}
}

func TestRejectsUnsafeNames(t *testing.T) {
	for _, d := range []pgsetup.Database{
		{Name: "x; DROP DATABASE postgres", Owner: "o", Role: "r"},
		{Name: "ok", Owner: "o", Role: `r" SUPERUSER`},
		{Name: "ok", Owner: `o" SUPERUSER`, Role: "r"},
		{Name: "", Owner: "o", Role: "r"},
		{Name: "UPPER", Owner: "o", Role: "r"},
		{Name: "ok", Owner: "r", Role: "r"}, // one role for both: nothing separated
	} {
		if err := pgsetup.Provision(context.Background(), testsupport.AdminDSN(), d); err == nil {
			t.Errorf("Provision(%+v) accepted an unsafe name", d)
		}
	}
}

func TestDSN(t *testing.T) {
	admin := "postgres://postgres:pw@127.0.0.1:5432/postgres?sslmode=disable"
	for _, tc := range []struct{ role, want string }{
		{"payorch_core", "postgres://payorch_core@127.0.0.1:5432/core?sslmode=disable"},
		{"", "postgres://postgres:pw@127.0.0.1:5432/core?sslmode=disable"},
		{"postgres", "postgres://postgres:pw@127.0.0.1:5432/core?sslmode=disable"},
	} {
		got, err := pgsetup.DSN(admin, "core", tc.role)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("DSN(%q) = %q, want %q", tc.role, got, tc.want)
		}
	}
	if _, err := pgsetup.DSN("mysql://x", "a", "b"); err == nil {
		t.Fatal("accepted a non-postgres URL")
	}
}
