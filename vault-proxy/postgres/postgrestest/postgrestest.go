// Package postgrestest opens the vault database for tests: a fresh pair of
// test databases on the real PostgreSQL, migrated, closed when the test
// ends.
package postgrestest

import (
	"context"
	"testing"

	"github.com/payorch/shared/testsupport"
	"github.com/payorch/vault-proxy/postgres"
)

// Open returns the migrated vault database of fresh test databases, and
// the databases (for their DSNs).
func Open(tb testing.TB) (*postgres.DB, *testsupport.Databases) {
	tb.Helper()
	dbs := testsupport.NewTestDatabases(tb)
	db, err := postgres.Open(context.Background(), dbs.VaultDSN)
	if err != nil {
		tb.Fatalf("vault database: %v", err)
	}
	tb.Cleanup(db.Close)
	return db, dbs
}
