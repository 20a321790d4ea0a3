// Package postgrestest opens the core database for tests, on the real
// PostgreSQL, and stores the records tests start from.
package postgrestest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/testsupport"
)

// New opens the core database of fresh test databases.
func New(tb testing.TB) *postgres.DB {
	tb.Helper()
	return Open(tb, testsupport.NewTestDatabases(tb).CoreDSN)
}

// Open opens a pool on dsn, as one core-api instance does, closed when
// the test ends.
func Open(tb testing.TB, dsn string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
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
