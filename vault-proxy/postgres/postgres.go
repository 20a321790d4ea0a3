// Package postgres is vault-proxy's store: the vault database, which holds
// only ciphertext, wrapped keys, token metadata and the audit log.
package postgres

import (
	"context"
	"embed"

	"github.com/payorch/shared/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is the vault database.
type DB struct {
	pgdb.DB
	audit *auditWriter
}

// Open applies pending migrations, then connects.
func Open(ctx context.Context, dsn string) (*DB, error) {
	d, err := pgdb.Open(ctx, "vault database", dsn, migrations, "migrations", "vault_schema_version")
	if err != nil {
		return nil, err
	}
	db := &DB{DB: d}
	db.audit = newAuditWriter(db)
	return db, nil
}

// Close waits for the audit records being written, then closes the pool.
func (db *DB) Close() {
	if db.audit != nil {
		db.audit.close()
	}
	db.DB.Close()
}
