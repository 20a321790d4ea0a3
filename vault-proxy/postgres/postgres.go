// Package postgres is vault-proxy's store: the vault database, which holds
// only ciphertext, wrapped keys, token metadata and the audit log.
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

// DB is the vault database.
type DB struct {
	Pool *pgxpool.Pool
}

// Open applies pending migrations, then connects.
func Open(ctx context.Context, dsn string) (*DB, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	pool, err := pgmigrate.OpenPool(ctx, dsn, sub, "vault_schema_version")
	if err != nil {
		return nil, fmt.Errorf("vault database: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// Ping checks the database answers; used by /readyz.
func (db *DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }

// Close releases the pool.
func (db *DB) Close() { db.Pool.Close() }
