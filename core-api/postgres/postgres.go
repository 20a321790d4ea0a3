// Package postgres is core-api's store: the core database, which refers to
// cards only by token.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payorch/shared/pgmigrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is the core database.
type DB struct {
	Pool *pgxpool.Pool
}

// Open applies pending migrations, then connects.
func Open(ctx context.Context, dsn string) (*DB, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	pool, err := pgmigrate.OpenPool(ctx, dsn, sub, "core_schema_version")
	if err != nil {
		return nil, fmt.Errorf("core database: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// Ping checks the database answers; used by /readyz.
func (db *DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }

// Close releases the pool.
func (db *DB) Close() { db.Pool.Close() }

// MerchantAccountExists reports whether id names a merchant account.
func (db *DB) MerchantAccountExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM merchant_accounts WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}
