// Package pgmigrate applies a service's embedded, versioned SQL migrations at
// start-up. Files are named NNN_description.sql and applied in order, each in
// its own transaction, under an advisory lock so that two instances starting
// at once do not race (tern takes the lock).
package pgmigrate

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

// Up migrates the database behind conn to the newest version in migrations.
// versionTable names the table that records the applied version, so two
// services could share a database without sharing history.
func Up(ctx context.Context, conn *pgx.Conn, migrations fs.FS, versionTable string) error {
	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return fmt.Errorf("pgmigrate: %w", err)
	}
	if err := m.LoadMigrations(migrations); err != nil {
		return fmt.Errorf("pgmigrate: load: %w", err)
	}
	if len(m.Migrations) == 0 {
		return fmt.Errorf("pgmigrate: no migrations found")
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("pgmigrate: apply: %w", err)
	}
	return nil
}

// UpDSN connects with dsn, migrates and disconnects.
func UpDSN(ctx context.Context, dsn string, migrations fs.FS, versionTable string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("pgmigrate: connect: %w", err)
	}
	defer conn.Close(ctx)
	return Up(ctx, conn, migrations, versionTable)
}

// OpenPool migrates the database behind dsn and then opens a pool on it, so
// a service never serves against an old schema. migrations is rooted at the
// folder holding the .sql files.
func OpenPool(ctx context.Context, dsn string, migrations fs.FS, versionTable string) (*pgxpool.Pool, error) {
	if err := UpDSN(ctx, dsn, migrations, versionTable); err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: open pool: %w", err)
	}
	return pool, nil
}
