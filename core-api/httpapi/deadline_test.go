package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payorch/core-api/app"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/merchants"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/pagination"
)

// A request whose database work blocks ends at its deadline, or at the
// database's statement_timeout if that comes first, with 504
// gateway_timeout in the error envelope (docs/api-conventions.md), and
// leaves nothing behind: the blocked statement is cancelled on the server,
// not left to run once unblocked.
func TestRequestDeadline(t *testing.T) {
	ctx := context.Background()
	dbs := postgrestest.Migrated(t)
	authz, token := testAuth(t, "merchant-accounts.write", "merchant-accounts.read")

	// Each way of blocking returns what unblocks it.
	lockAccount := func(t *testing.T, db *postgres.DB) func() {
		t.Helper()
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM merchant_accounts WHERE id = 'default' FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		return func() {
			// pgx cancels the statement on the server when the deadline
			// passes, but asynchronously (a cancel request as it closes
			// the connection): give that a moment to land first.
			time.Sleep(time.Second)
			_ = tx.Rollback(ctx)
		}
	}
	takeEveryConnection := func(t *testing.T, db *postgres.DB) func() {
		t.Helper()
		var conns []*pgxpool.Conn
		for range db.Pool.Config().MaxConns {
			c, err := db.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		return func() {
			for _, c := range conns {
				c.Release()
			}
		}
	}
	const short, long = 300 * time.Millisecond, 30 * time.Second

	for _, tc := range []struct {
		name                             string
		requestTimeout, statementTimeout time.Duration
		block                            func(*testing.T, *postgres.DB) func()
		method, path, body               string
		endsAt                           time.Duration
	}{
		{"a row lock held elsewhere", short, long, lockAccount,
			http.MethodPut, "/merchant-accounts/default", `{"display_name":"Late"}`, short},
		{"no free pool connection", short, long, takeEveryConnection,
			http.MethodGet, "/merchant-accounts/default", "", short},
		{"statement_timeout before the request's deadline", long, short, lockAccount,
			http.MethodPut, "/merchant-accounts/default", `{"display_name":"Late"}`, short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, err := app.WithStatementTimeout(dbs.CoreDSN, tc.statementTimeout)
			if err != nil {
				t.Fatal(err)
			}
			db, err := postgres.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
			rt.SetRequestTimeout(tc.requestTimeout)
			log := slog.New(slog.DiscardHandler)
			httpapi.Routes(rt, httpapi.Deps{Log: log, Auth: authz, Cursors: pagination.RandomCodec("core-api"),
				MerchantAccounts: &merchants.Service{Store: postgres.MerchantsStore{DB: db}, Log: log}})

			unblock := tc.block(t, db)
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			start := time.Now()
			rt.ServeHTTP(rec, req)
			took := time.Since(start)
			unblock()

			e, err := apierror.Parse(rec.Body.Bytes())
			if rec.Code != http.StatusGatewayTimeout || err != nil || e.Code != apierror.CodeGatewayTimeout ||
				e.RequestID == "" || e.RequestID != rec.Header().Get("X-Request-Id") {
				t.Fatalf("= %d %s (%v), want 504 gateway_timeout with the request id", rec.Code, rec.Body.Bytes(), err)
			}
			// Generous above: the race detector and a busy machine.
			if took < tc.endsAt || took > tc.endsAt+10*time.Second {
				t.Fatalf("answered after %s, want about %s", took, tc.endsAt)
			}
			// Locking the row waits for a statement still queued on it.
			var name string
			if err := db.Pool.QueryRow(ctx, `SELECT display_name FROM merchant_accounts WHERE id = 'default' FOR UPDATE`).Scan(&name); err != nil || name != "Default" {
				t.Fatalf("display_name = %q, %v: the timed-out request changed it", name, err)
			}
		})
	}
}

// testAuth returns an Auth trusting a fresh key and a token of that key
// holding scopes.
func testAuth(t testing.TB, scopes ...string) (*httpapi.Auth, string) {
	t.Helper()
	return testAuthFor(t, nil, scopes...)
}

// testAuthFor is testAuth with a token for the merchant accounts named
// (nil: the default one).
func testAuthFor(t testing.TB, accounts []string, scopes ...string) (*httpapi.Auth, string) {
	t.Helper()
	const issuer = "test"
	priv, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys := auth.NewKeySet()
	if _, err := keys.Add(&priv.PublicKey, issuer); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	token, err := auth.Mint(priv, issuer, scopes, time.Hour, time.Time{}, accounts)
	if err != nil {
		t.Fatal(err)
	}
	return &httpapi.Auth{Verifier: v, Exists: func(context.Context, string) (bool, error) { return true, nil }}, token
}
