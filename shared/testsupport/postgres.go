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

// Roles used by tests; the same names as production so grants are exercised.
const (
	VaultRole = "payorch_vault"
	CoreRole  = "payorch_core"
)

// Databases is one test package's pair of fresh databases.
type Databases struct {
	AdminDSN string
	Vault    pgsetup.Database
	Core     pgsetup.Database
	VaultDSN string // as VaultRole
	CoreDSN  string // as CoreRole
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
		Vault:    pgsetup.Database{Name: fmt.Sprintf("t_%s_%s_vault", p, suffix), Role: VaultRole},
		Core:     pgsetup.Database{Name: fmt.Sprintf("t_%s_%s_core", p, suffix), Role: CoreRole},
	}
	if err := pgsetup.Provision(ctx, admin, d.Vault, d.Core); err != nil {
		return nil, err
	}
	var err error
	if d.VaultDSN, err = pgsetup.DSN(admin, d.Vault); err != nil {
		return nil, err
	}
	if d.CoreDSN, err = pgsetup.DSN(admin, d.Core); err != nil {
		return nil, err
	}
	return d, nil
}

// Drop removes both databases.
func (d *Databases) Drop(ctx context.Context) error {
	return pgsetup.Drop(ctx, d.AdminDSN, d.Vault.Name, d.Core.Name)
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
