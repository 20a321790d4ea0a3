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
	// cardBatch gathers concurrent vaultings into shared transactions
	// (InsertCardAudited).
	cardBatch cardBatcher
}

var schema = pgdb.Schema{Name: "vault database", FS: migrations, Dir: "migrations", VersionTable: "vault_schema_version"}

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
	return &DB{DB: d}, nil
}
