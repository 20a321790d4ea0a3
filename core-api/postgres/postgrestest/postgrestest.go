// Package postgrestest opens the core database for tests: a fresh pair of
// test databases on the real PostgreSQL, migrated as the owner role and
// opened as the runtime role, as a deployment does; closed when the test
// ends.
package postgrestest

import (
	"context"
	"testing"

	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/testsupport"
)

// Migrated returns fresh test databases whose core database is migrated.
func Migrated(tb testing.TB) *testsupport.Databases {
	tb.Helper()
	dbs := testsupport.NewTestDatabases(tb)
	if err := postgres.Migrate(context.Background(), dbs.CoreOwnerDSN); err != nil {
		tb.Fatalf("migrate the core database: %v", err)
	}
	return dbs
}

// OpenDSN opens the migrated core database behind dsn, as one core-api
// instance does, closed when the test ends.
func OpenDSN(tb testing.TB, dsn string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("core database: %v", err)
	}
	tb.Cleanup(db.Close)
	return db
}

// Open returns the migrated core database of fresh test databases, and
// the databases (for their DSNs).
func Open(tb testing.TB) (*postgres.DB, *testsupport.Databases) {
	tb.Helper()
	dbs := Migrated(tb)
	return OpenDSN(tb, dbs.CoreDSN), dbs
}
