// Package postgrestest opens the core database for tests: fresh test
// databases on the real PostgreSQL, migrated as the owner role and opened
// as the runtime role, as a deployment does; and it stores the records
// tests start from.
package postgrestest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/httpapi"
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

// New opens the migrated core database of fresh test databases, as the
// runtime role.
func New(tb testing.TB) *postgres.DB {
	tb.Helper()
	return Open(tb, Migrated(tb).CoreDSN)
}

// Open opens a pool on dsn (a migrated core database), as one core-api
// instance does, closed when the test ends.
func Open(tb testing.TB, dsn string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("core database: %v", err)
	}
	tb.Cleanup(db.Close)
	db.Events = httpapi.EventRenderer{Environment: "sandbox"}
	return db
}

// StorePaymentMethod stores pm as a succeeded payment method of the
// default merchant account, under a new id, and returns the id.
func StorePaymentMethod(tb testing.TB, db *postgres.DB, pm *coreapi.PaymentMethod) string {
	tb.Helper()
	pm.ID, pm.MerchantAccountID, pm.Status = uuid.NewString(), "default", coreapi.StatusSucceeded
	if err := db.CreatePaymentMethod(context.Background(), pm, nil); err != nil {
		tb.Fatal(err)
	}
	return pm.ID
}
