// Package pgsetup provisions the two databases and the two roles the zones use.
//
// The PCI zone (vault-proxy) and the core (core-api) each own one database
// through their own login role. CONNECT on each database is revoked from
// PUBLIC and granted only to its owner, so the core role is refused at the
// door of the vault database: a compromised core-api cannot read ciphertext,
// wrapped keys or the detokenization audit log even if it learns the DSN.
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

// Database names one database and the role that owns it.
type Database struct {
	Name string
	Role string
}

// identifier keeps names to plain lower-case identifiers so they can be
// interpolated into DDL, which takes no bind parameters.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (d Database) validate() error {
	if !identifier.MatchString(d.Name) {
		return fmt.Errorf("pgsetup: invalid database name %q", d.Name)
	}
	if !identifier.MatchString(d.Role) {
		return fmt.Errorf("pgsetup: invalid role name %q", d.Role)
	}
	return nil
}

// Provision creates each role (LOGIN) and database when missing, makes the
// role the owner and restricts CONNECT to it. It is idempotent and safe to run
// concurrently from several test packages against one cluster.
func Provision(ctx context.Context, adminDSN string, dbs ...Database) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("pgsetup: connect as admin: %w", err)
	}
	defer conn.Close(ctx)
	for _, d := range dbs {
		if err := d.validate(); err != nil {
			return err
		}
		if err := ensureRole(ctx, conn, d.Role); err != nil {
			return err
		}
		if err := ensureDatabase(ctx, conn, d); err != nil {
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
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, d.Name, d.Role))
		if err != nil && !isRace(err) {
			return fmt.Errorf("pgsetup: create database %s: %w", d.Name, err)
		}
	}
	for _, stmt := range []string{
		fmt.Sprintf(`ALTER DATABASE %s OWNER TO %s`, d.Name, d.Role),
		fmt.Sprintf(`REVOKE ALL ON DATABASE %s FROM PUBLIC`, d.Name),
		fmt.Sprintf(`GRANT CONNECT, TEMPORARY ON DATABASE %s TO %s`, d.Name, d.Role),
	} {
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

// DSN derives the connection string a service uses from the admin one: same
// host and options, the service's role and database.
func DSN(adminDSN string, d Database) (string, error) {
	u, err := url.Parse(adminDSN)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("pgsetup: DATABASE_URL must be a postgres:// URL")
	}
	if pw, ok := u.User.Password(); ok && d.Role == u.User.Username() {
		u.User = url.UserPassword(d.Role, pw)
	} else {
		u.User = url.User(d.Role)
	}
	u.Path = "/" + d.Name
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
