// Package pgmigrate applies a service's embedded, versioned SQL migrations.
// Files are named NNN_description.sql and applied in order, each in its own
// transaction, under an advisory lock so that two runs at once do not race
// (tern takes the lock).
//
// Migrations run as the database's owner role, at deploy time (each
// service's migrate command); the service itself serves as a runtime role
// that cannot change the schema, and only checks that the schema is at
// least as new as its build (Check).
package pgmigrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// NotOwnerError is a migration run as a role other than the database's
// owner. Objects it created would belong to that role, outside the grants
// the migrations give the runtime role (their default privileges are the
// owner's), so it is refused before anything runs.
type NotOwnerError struct {
	User, Owner string
}

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("pgmigrate: connected as %s, but migrations run as the database's owner, %s", e.User, e.Owner)
}

// BehindError is a schema older than the build that checks it.
type BehindError struct {
	Have, Want int32
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("pgmigrate: the database schema is at version %d and this build needs %d: run the migrate command with the owner role's database URL first", e.Have, e.Want)
}

// Up migrates the database behind conn, connected as its owner, to the
// newest version in migrations. versionTable names the table that records
// the applied version, so two services could share a database without
// sharing history.
func Up(ctx context.Context, conn *pgx.Conn, migrations fs.FS, versionTable string) error {
	var user, owner string
	if err := conn.QueryRow(ctx, `SELECT current_user, pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()`).Scan(&user, &owner); err != nil {
		return fmt.Errorf("pgmigrate: %w", err)
	}
	if user != owner {
		return &NotOwnerError{User: user, Owner: owner}
	}
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

// Querier is what Check reads the version through: a connection or a pool.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Check returns a *BehindError when the schema behind q is older than the
// newest migration in migrations (one never migrated included). A newer
// schema is fine: while a deployment rolls out, the instances still on the
// previous build serve against the schema the new one migrated to.
func Check(ctx context.Context, q Querier, migrations fs.FS, versionTable string) error {
	files, err := migrate.FindMigrations(migrations)
	if err != nil {
		return fmt.Errorf("pgmigrate: %w", err)
	}
	want := int32(len(files))
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, versionTable).Scan(&exists); err != nil {
		return fmt.Errorf("pgmigrate: %w", err)
	}
	if !exists {
		return &BehindError{Want: want}
	}
	var have int32
	err = q.QueryRow(ctx, "SELECT version FROM "+pgx.Identifier{versionTable}.Sanitize()).Scan(&have)
	if errors.Is(err, pgx.ErrNoRows) {
		return &BehindError{Want: want}
	}
	if err != nil {
		return fmt.Errorf("pgmigrate: read the schema version: %w", err)
	}
	if have < want {
		return &BehindError{Have: have, Want: want}
	}
	return nil
}
