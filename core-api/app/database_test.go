package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/shared/testsupport"
)

func TestWithStatementTimeout(t *testing.T) {
	for _, tc := range []struct{ name, dsn, want string }{
		{"URL", "postgres://c@127.0.0.1/c", "postgres://c@127.0.0.1/c?statement_timeout=50000"},
		{"URL with parameters", "postgresql://c@127.0.0.1/c?sslmode=disable", "postgresql://c@127.0.0.1/c?sslmode=disable&statement_timeout=50000"},
		{"URL with several hosts", "postgres://c@h1:5432,h2:5433/c", "postgres://c@h1:5432,h2:5433/c?statement_timeout=50000"},
		{"keyword/value", "host=127.0.0.1 user=c dbname=c", "host=127.0.0.1 user=c dbname=c statement_timeout=50000"},
		{"the operator's URL setting stands", "postgres://c@127.0.0.1/c?statement_timeout=5000", "postgres://c@127.0.0.1/c?statement_timeout=5000"},
		{"the operator's keyword setting stands", "host=127.0.0.1 statement_timeout=0", "host=127.0.0.1 statement_timeout=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WithStatementTimeout(tc.dsn, 50*time.Second)
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := WithStatementTimeout("postgres://c:s3cret@127.0.0.1:notaport/c", time.Second); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("an unparsable URL: %v; want an error without its password", err)
	}
}

// The setting reaches PostgreSQL: a statement longer than the timeout is
// cancelled by the server, whatever its context.
func TestStatementTimeoutReachesPostgreSQL(t *testing.T) {
	dsn, err := WithStatementTimeout(testsupport.NewTestDatabases(t).CoreDSN, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var setting string
	if err := conn.QueryRow(ctx, `SHOW statement_timeout`).Scan(&setting); err != nil || setting != "200ms" {
		t.Fatalf("statement_timeout = %q, %v", setting, err)
	}
	_, err = conn.Exec(ctx, `SELECT pg_sleep(5)`)
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("pg_sleep(5) under a 200ms statement_timeout: %v", err)
	}
}
