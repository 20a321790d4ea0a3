// Package pgdb opens a service's own database as its runtime role, after
// checking that the schema is migrated (nothing is ever served against an
// old schema) and that the role is not one that could change it. Migrate
// applies the service's embedded migrations as the owner role, which only
// the deploy step holds (pgsetup, pgmigrate).
package pgdb

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pgmigrate"
)

// DB is a migrated database.
type DB struct {
	Pool *pgxpool.Pool
}

// Schema is a service's embedded migrations: the .sql files in Dir of FS,
// recorded in VersionTable. Name labels errors.
type Schema struct {
	Name         string
	FS           fs.FS
	Dir          string
	VersionTable string
}

func (s Schema) files() (fs.FS, error) {
	return fs.Sub(s.FS, s.Dir)
}

// PrivilegedRoleError is a service connecting as a role that owns its
// database, or a superuser: one that could change the schema or rewrite a
// history table, which the runtime role cannot.
type PrivilegedRoleError struct {
	User string
}

func (e *PrivilegedRoleError) Error() string {
	return fmt.Sprintf("connected as %s, which owns the database or is a superuser: the service connects as its runtime role, and only the migrate command as the owner", e.User)
}

// Migrate applies the pending migrations of s to the database behind
// ownerDSN, which must connect as the database's owner.
func Migrate(ctx context.Context, ownerDSN string, s Schema) error {
	files, err := s.files()
	if err != nil {
		return err
	}
	if err := pgmigrate.UpDSN(ctx, ownerDSN, files, s.VersionTable); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// MigrateCommand is a service's `migrate` command: it reads the owner
// role's database URL from variable (or variable+"_FILE") in environ and
// migrates with it (the service's Migrate).
func MigrateCommand(ctx context.Context, environ []string, variable string, migrate func(ctx context.Context, ownerDSN string) error) error {
	l := config.NewLoader(config.EnvironLookup(environ))
	dsn := l.Secret(variable).Reveal()
	if err := l.Err(); err != nil {
		return err
	}
	return migrate(ctx, dsn)
}

// Open connects to the database behind dsn as the service's runtime role,
// and fails when the schema is older than s (a *pgmigrate.BehindError) or
// the role is privileged (a *PrivilegedRoleError).
func Open(ctx context.Context, dsn string, s Schema) (DB, error) {
	files, err := s.files()
	if err != nil {
		return DB{}, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return DB{}, fmt.Errorf("%s: open pool: %w", s.Name, err)
	}
	if err := check(ctx, pool, files, s.VersionTable); err != nil {
		pool.Close()
		return DB{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	return DB{Pool: pool}, nil
}

func check(ctx context.Context, pool *pgxpool.Pool, files fs.FS, versionTable string) error {
	var user string
	var privileged bool
	if err := pool.QueryRow(ctx, `
		SELECT current_user, r.rolsuper OR pg_has_role(current_user, d.datdba, 'MEMBER')
		FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()`).Scan(&user, &privileged); err != nil {
		return err
	}
	if privileged {
		return &PrivilegedRoleError{User: user}
	}
	return pgmigrate.Check(ctx, pool, files, versionTable)
}

// Ping checks the database answers; used by /readyz.
func (db DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }

// Close releases the pool.
func (db DB) Close() { db.Pool.Close() }
