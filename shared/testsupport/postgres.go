// Package testsupport starts and provisions the real dependencies tests run
// against: a fresh PostgreSQL database per test package and a real Vault.
// Nothing here is a mock; see README.md "Tests".
package testsupport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/pgsetup"
)

// DefaultAdminDSN is the machine's PostgreSQL (trust auth on loopback); the
// Makefile exports DATABASE_URL when it had to start a private cluster.
const DefaultAdminDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminDSN returns DATABASE_URL, or the machine default.
func AdminDSN() string {
	if v := os.Getenv("DATABASE_URL"); v != "" {
		return v
	}
	return DefaultAdminDSN
}

// Databases is one test package's pair of fresh databases, with the
// production role names (pgsetup) so the migrations' grants are what tests
// run under.
type Databases struct {
	AdminDSN string
	Vault    pgsetup.Database
	Core     pgsetup.Database
	VaultDSN string // as the vault runtime role, as vault-proxy serves
	CoreDSN  string // as the core runtime role, as core-api serves
	// As the owner roles, as the migrations run (and tests that change
	// the schema or the data behind the service's back).
	VaultOwnerDSN string
	CoreOwnerDSN  string
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabases provisions a vault and a core database with unique names for
// one test package. Call Drop when done (TestMain does it via RunWithDatabases).
func NewDatabases(ctx context.Context, prefix string) (*Databases, error) {
	admin := AdminDSN()
	suffix := randomHex(4)
	p := unsafeChars.ReplaceAllString(strings.ToLower(prefix), "_")
	if len(p) > 30 {
		p = p[:30]
	}
	d := &Databases{
		AdminDSN: admin,
		Vault:    pgsetup.Vault(fmt.Sprintf("t_%s_%s_vault", p, suffix)),
		Core:     pgsetup.Core(fmt.Sprintf("t_%s_%s_core", p, suffix)),
	}
	if err := pgsetup.Provision(ctx, admin, d.Vault, d.Core); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		dst      *string
		db, role string
	}{
		{&d.VaultDSN, d.Vault.Name, d.Vault.Role}, {&d.VaultOwnerDSN, d.Vault.Name, d.Vault.Owner},
		{&d.CoreDSN, d.Core.Name, d.Core.Role}, {&d.CoreOwnerDSN, d.Core.Name, d.Core.Owner},
	} {
		var err error
		if *c.dst, err = pgsetup.DSN(admin, c.db, c.role); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Drop removes both databases.
func (d *Databases) Drop(ctx context.Context) error {
	return pgsetup.Drop(ctx, d.AdminDSN, d.Vault.Name, d.Core.Name)
}

// ExecAsOwner runs sql in db, one of d's databases, as its owner role:
// what the runtime role may not do, such as ANALYZE or a test's own change
// to the schema or to a history table.
func (d *Databases) ExecAsOwner(t TB, db pgsetup.Database, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := pgsetup.DSN(d.AdminDSN, db.Name, db.Owner)
	if err != nil {
		t.Fatalf("testsupport: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("testsupport: connect as %s: %v", db.Owner, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("testsupport: as %s: %v", db.Owner, err)
	}
}

// TB is the part of testing.TB the helpers need; taking an interface keeps
// package testing out of anything that might import this by mistake.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	Name() string
}

// Databases provisions fresh databases for a single test and drops them when
// it ends. Prefer one pair per package via TestMain when tests can share.
func NewTestDatabases(t TB) *Databases {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := NewDatabases(ctx, t.Name())
	if err != nil {
		t.Fatalf("testsupport: provision databases: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = d.Drop(ctx)
	})
	return d
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}
