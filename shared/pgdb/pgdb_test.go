package pgdb_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	"github.com/payorch/shared/pgdb"
	"github.com/payorch/shared/pgmigrate"
	"github.com/payorch/shared/pgsetup"
	"github.com/payorch/shared/testsupport"
)

// schema is a service's migrations, the first n of two.
func schema(n int) pgdb.Schema {
	files := fstest.MapFS{
		"m/001_first.sql": {Data: []byte(`CREATE TABLE first (x int); GRANT SELECT ON first_version TO payorch_core;`)},
	}
	if n > 1 {
		files["m/002_second.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE second (x int)`)}
	}
	return pgdb.Schema{Name: "test database", FS: files, Dir: "m", VersionTable: "first_version"}
}

// Migrations run as the database's owner and no one else: a superuser's
// or the runtime role's objects would fall outside the grants the
// migrations give.
func TestMigrateRunsAsTheOwnerOnly(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	for _, tc := range []struct{ name, dsn string }{
		{"the runtime role", dbs.CoreDSN},
		{"the admin", adminDSN(t, dbs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notOwner *pgmigrate.NotOwnerError
			if err := pgdb.Migrate(ctx, tc.dsn, schema(1)); !errors.As(err, &notOwner) {
				t.Fatalf("migrate as %s: %v, want a NotOwnerError", tc.name, err)
			}
		})
	}
	if err := pgdb.Migrate(ctx, dbs.CoreOwnerDSN, schema(1)); err != nil {
		t.Fatalf("migrate as the owner: %v", err)
	}
}

// The service opens its database as the runtime role, on a schema at
// least as new as its build's, and refuses anything else.
func TestOpenChecksTheRoleAndTheSchema(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	open := func(dsn string, s pgdb.Schema) error {
		db, err := pgdb.Open(ctx, dsn, s)
		if err == nil {
			db.Close()
		}
		return err
	}
	var behind *pgmigrate.BehindError
	if err := open(dbs.CoreDSN, schema(1)); !errors.As(err, &behind) || behind.Have != 0 || behind.Want != 1 {
		t.Fatalf("open before any migration: %v, want a BehindError from 0 to 1", err)
	}
	if err := pgdb.Migrate(ctx, dbs.CoreOwnerDSN, schema(1)); err != nil {
		t.Fatal(err)
	}
	if err := open(dbs.CoreDSN, schema(1)); err != nil {
		t.Fatalf("open the migrated database: %v", err)
	}
	if err := open(dbs.CoreDSN, schema(2)); !errors.As(err, &behind) || behind.Have != 1 || behind.Want != 2 {
		t.Fatalf("open with a newer build: %v, want a BehindError from 1 to 2", err)
	}
	if err := pgdb.Migrate(ctx, dbs.CoreOwnerDSN, schema(2)); err != nil {
		t.Fatal(err)
	}
	if err := open(dbs.CoreDSN, schema(1)); err != nil {
		t.Fatalf("an older build on a newer schema (a deployment rolling out): %v", err)
	}
	var privileged *pgdb.PrivilegedRoleError
	for name, dsn := range map[string]string{"the owner": dbs.CoreOwnerDSN, "the admin": adminDSN(t, dbs)} {
		if err := open(dsn, schema(1)); !errors.As(err, &privileged) {
			t.Errorf("open as %s: %v, want a PrivilegedRoleError", name, err)
		}
	}
}

// adminDSN is the admin's URL for the core test database.
func adminDSN(t *testing.T, dbs *testsupport.Databases) string {
	t.Helper()
	dsn, err := pgsetup.DSN(dbs.AdminDSN, dbs.Core.Name, "")
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
