// Package postgres is vault-proxy's store: the vault database, which holds
// only ciphertext, wrapped keys, token metadata and the audit log.
package postgres

import (
	"context"
	"embed"
	"sync"

	"github.com/payorch/shared/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is the vault database.
type DB struct {
	pgdb.DB
	// copyBufs holds the buffers audit batches are written into for COPY
	// (hundreds of KiB each, reused rather than collected).
	copyBufs sync.Pool
}

// Open applies pending migrations, then connects.
func Open(ctx context.Context, dsn string) (*DB, error) {
	d, err := pgdb.Open(ctx, "vault database", dsn, migrations, "migrations", "vault_schema_version")
	if err != nil {
		return nil, err
	}
	return &DB{DB: d}, nil
}
