// Package postgrestest opens the vault database for tests: a fresh pair of
// test databases on the real PostgreSQL, migrated as the owner role and
// opened as the runtime role, as a deployment does; closed when the test
// ends.
package postgrestest

import (
	"context"
	"testing"

	"github.com/payorch/shared/testsupport"
	"github.com/payorch/vault-proxy/postgres"
)

// Migrated returns fresh test databases whose vault database is migrated.
func Migrated(tb testing.TB) *testsupport.Databases {
	tb.Helper()
	dbs := testsupport.NewTestDatabases(tb)
	if err := postgres.Migrate(context.Background(), dbs.VaultOwnerDSN); err != nil {
		tb.Fatalf("migrate the vault database: %v", err)
	}
	return dbs
}

// Open returns the migrated vault database of fresh test databases, and
// the databases (for their DSNs).
func Open(tb testing.TB) (*postgres.DB, *testsupport.Databases) {
	tb.Helper()
	dbs := Migrated(tb)
	db, err := postgres.Open(context.Background(), dbs.VaultDSN)
	if err != nil {
		tb.Fatalf("vault database: %v", err)
	}
	tb.Cleanup(db.Close)
	return db, dbs
}
