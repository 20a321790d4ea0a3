// Package postgres is core-api's store: the core database, which refers to
// cards only by token.
package postgres

import (
	"context"
	"embed"

	"github.com/payorch/shared/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is the core database.
type DB struct {
	pgdb.DB
	turns keyedLocks // transactions held across a call, in this process, by record (CallTurn)
	// callSlots bounds the transactions holding a pooled connection across
	// a call to another service (CallTurn) to half the pool: a slow
	// vault-proxy then slows those, not every other request.
	callSlots chan struct{}
	// Events renders the outbound events every change writes with it
	// (outbox.go); required before any change.
	Events EventRenderer
}

var schema = pgdb.Schema{Name: "core database", FS: migrations, Dir: "migrations", VersionTable: "core_schema_version"}

// Migrate applies pending migrations as the database's owner role: the
// deploy step, before instances of a new build start.
func Migrate(ctx context.Context, ownerDSN string) error {
	return pgdb.Migrate(ctx, ownerDSN, schema)
}

// Open connects as the runtime role; the schema must be migrated (Migrate).
func Open(ctx context.Context, dsn string) (*DB, error) {
	d, err := pgdb.Open(ctx, dsn, schema)
	if err != nil {
		return nil, err
	}
	slots := max(1, int(d.Pool.Config().MaxConns)/2)
	return &DB{DB: d, callSlots: make(chan struct{}, slots)}, nil
}

// MerchantAccountExists reports whether id names a merchant account.
func (db *DB) MerchantAccountExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM merchant_accounts WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}
