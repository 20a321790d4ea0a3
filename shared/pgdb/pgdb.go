// Package pgdb opens a service's own database: it applies the service's
// embedded migrations first, so nothing is ever served against an old
// schema, then returns a pool.
package pgdb

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payorch/shared/pgmigrate"
)

// DB is a migrated database.
type DB struct {
	Pool *pgxpool.Pool
}

// Open migrates the database behind dsn with the .sql files in dir of
// migrations (recorded in versionTable), then connects. name labels errors.
func Open(ctx context.Context, name, dsn string, migrations fs.FS, dir, versionTable string) (DB, error) {
	sub, err := fs.Sub(migrations, dir)
	if err != nil {
		return DB{}, err
	}
	pool, err := pgmigrate.OpenPool(ctx, dsn, sub, versionTable)
	if err != nil {
		return DB{}, fmt.Errorf("%s: %w", name, err)
	}
	return DB{Pool: pool}, nil
}

// Ping checks the database answers; used by /readyz.
func (db DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }

// Close releases the pool.
func (db DB) Close() { db.Pool.Close() }
