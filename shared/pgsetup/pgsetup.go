// Package pgsetup provisions the two databases and the roles the zones use.
//
// Each zone has two login roles. Its owner role owns the database and
// everything in it and is the one that runs the migrations; the service
// itself connects as a runtime role that owns nothing and holds only the
// privileges the migrations grant it, so a compromised service cannot
// change the schema or rewrite a history table such as the audit trail.
//
// CONNECT on each database is revoked from PUBLIC and granted only to its
// own two roles, so the core roles are refused at the door of the vault
// database: a compromised core-api cannot read ciphertext, wrapped keys or
// the detokenization audit log even if it learns the DSN.
package pgsetup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The zones' role names. They are fixed because the migrations grant the
// runtime roles their privileges by name (vault-proxy and core-api's
// migrations/), and tests use the same names so those grants are what the
// tests run under.
const (
	VaultOwner = "payorch_vault_owner"
	VaultRole  = "payorch_vault"
	CoreOwner  = "payorch_core_owner"
	CoreRole   = "payorch_core"
)

// Database names one database, the role that owns it and runs its
// migrations, and the runtime role its service connects as.
type Database struct {
	Name  string
	Owner string
	Role  string
}

// Vault is the vault zone's database named name, with the vault roles.
func Vault(name string) Database { return Database{Name: name, Owner: VaultOwner, Role: VaultRole} }

// Core is the core zone's database named name, with the core roles.
func Core(name string) Database { return Database{Name: name, Owner: CoreOwner, Role: CoreRole} }

// identifier keeps names to plain lower-case identifiers so they can be
// interpolated into DDL, which takes no bind parameters.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (d Database) validate() error {
	if !identifier.MatchString(d.Name) {
		return fmt.Errorf("pgsetup: invalid database name %q", d.Name)
	}
	for _, r := range []string{d.Owner, d.Role} {
		if !identifier.MatchString(r) {
			return fmt.Errorf("pgsetup: invalid role name %q", r)
		}
	}
	if d.Owner == d.Role {
		return fmt.Errorf("pgsetup: database %s: the owner and the runtime role must differ", d.Name)
	}
	return nil
}

// Provision creates each database's two roles (LOGIN) and the database
// when missing, makes the owner role own the database and its public
// schema, and lets only the two roles connect. It is idempotent and safe
// to run concurrently from several test packages against one cluster.
//
// A database from before the roles were split, whose objects the runtime
// role owns, has them handed to the owner role, so the next migration can
// grant the runtime role its privileges.
func Provision(ctx context.Context, adminDSN string, dbs ...Database) error {
	for _, d := range dbs {
		if err := d.validate(); err != nil {
			return err
		}
	}
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("pgsetup: connect as admin: %w", err)
	}
	defer conn.Close(ctx)
	for _, d := range dbs {
		for _, r := range []string{d.Owner, d.Role} {
			if err := ensureRole(ctx, conn, r); err != nil {
				return err
			}
		}
		if err := ensureDatabase(ctx, conn, d); err != nil {
			return err
		}
		if err := prepareSchema(ctx, adminDSN, d); err != nil {
			return err
		}
	}
	return nil
}

func ensureRole(ctx context.Context, conn *pgx.Conn, role string) error {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return fmt.Errorf("pgsetup: look up role %s: %w", role, err)
	}
	if exists {
		return nil
	}
	_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN`, role))
	if isRace(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgsetup: create role %s: %w", role, err)
	}
	return nil
}

func ensureDatabase(ctx context.Context, conn *pgx.Conn, d Database) error {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, d.Name).Scan(&exists); err != nil {
		return fmt.Errorf("pgsetup: look up database %s: %w", d.Name, err)
	}
	if !exists {
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, d.Name, d.Owner))
		if err != nil && !isRace(err) {
			return fmt.Errorf("pgsetup: create database %s: %w", d.Name, err)
		}
	}
	return execAll(ctx, conn,
		fmt.Sprintf(`ALTER DATABASE %s OWNER TO %s`, d.Name, d.Owner),
		fmt.Sprintf(`REVOKE ALL ON DATABASE %s FROM PUBLIC`, d.Name),
		fmt.Sprintf(`GRANT CONNECT, TEMPORARY ON DATABASE %s TO %s`, d.Name, d.Owner),
		// The runtime role connects and nothing more (an earlier
		// provisioning also let it make temporary tables).
		fmt.Sprintf(`REVOKE ALL ON DATABASE %s FROM %s`, d.Name, d.Role),
		fmt.Sprintf(`GRANT CONNECT ON DATABASE %s TO %s`, d.Name, d.Role),
	)
}

// prepareSchema, connected to d as the admin, gives the public schema to
// the owner role (only it creates objects there; the runtime role may use
// what the migrations grant it) and hands the owner whatever the runtime
// role still owns from before the split.
func prepareSchema(ctx context.Context, adminDSN string, d Database) error {
	dsn, err := DSN(adminDSN, d.Name, "")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("pgsetup: connect to %s as admin: %w", d.Name, err)
	}
	defer conn.Close(ctx)
	if err := execAll(ctx, conn,
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`, // PostgreSQL before 15 grants it
		fmt.Sprintf(`ALTER SCHEMA public OWNER TO %s`, d.Owner),
		fmt.Sprintf(`GRANT USAGE ON SCHEMA public TO %s`, d.Role),
	); err != nil {
		return err
	}
	// Table by table, not REASSIGN OWNED: that would also hand over every
	// other database the runtime role owns in the cluster. A table's
	// indexes and identity sequences follow it.
	rows, err := conn.Query(ctx, `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relowner = $1::regrole`, d.Role)
	if err != nil {
		return fmt.Errorf("pgsetup: %s: tables of %s: %w", d.Name, d.Role, err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("pgsetup: %s: tables of %s: %w", d.Name, d.Role, err)
	}
	var stmts []string
	for _, t := range tables {
		stmts = append(stmts, fmt.Sprintf(`ALTER TABLE public.%s OWNER TO %s`, pgx.Identifier{t}.Sanitize(), d.Owner))
	}
	return execAll(ctx, conn, stmts...)
}

func execAll(ctx context.Context, conn *pgx.Conn, stmts ...string) error {
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("pgsetup: %s: %w", stmt, err)
		}
	}
	return nil
}

// Drop removes databases, disconnecting any session still attached.
func Drop(ctx context.Context, adminDSN string, names ...string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("pgsetup: connect as admin: %w", err)
	}
	defer conn.Close(ctx)
	var errs []error
	for _, n := range names {
		if !identifier.MatchString(n) {
			errs = append(errs, fmt.Errorf("pgsetup: invalid database name %q", n))
			continue
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, n)); err != nil {
			errs = append(errs, fmt.Errorf("pgsetup: drop %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// DSN derives a connection string from the admin one: same host and
// options, database name and role (the admin's own when role is empty; the
// admin's password is kept only for the admin's role).
func DSN(adminDSN, database, role string) (string, error) {
	u, err := url.Parse(adminDSN)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("pgsetup: DATABASE_URL must be a postgres:// URL")
	}
	if role != "" && role != u.User.Username() {
		u.User = url.User(role)
	}
	u.Path = "/" + database
	return u.String(), nil
}

// isRace reports the errors a concurrent creator of the same role or database
// causes; the object exists afterwards, which is all Provision promises.
func isRace(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "42710", "42P04", "23505": // duplicate_object, duplicate_database, unique_violation on the catalog
		return true
	}
	return false
}
