package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payorch/shared/pgdb"
)

// LockToken takes, in a transaction a test holds open, the lock that a
// payment method's creation and GiveUpToken take on a token: args for
// Exec(ctx, LockTokenSQL, LockTokenArgs(id)...).
const LockTokenSQL = lockTokenSQL

// LockTokenArgs are LockTokenSQL's arguments for the token id.
func LockTokenArgs(id string) []any { return []any{tokenLockClass, id} }

// OpenDialing opens a pool on dsn (a migrated core database) as Open
// does, each of its connections made by dial: tests that watch what goes
// over the wire (round trips).
func OpenDialing(ctx context.Context, dsn string, dial pgconn.DialFunc) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.DialFunc = dial
	// Plain text, for dial to read; and no ping before handing out a
	// connection idle for a second, which a test's pauses would count.
	cfg.ConnConfig.TLSConfig, cfg.ConnConfig.Fallbacks = nil, nil
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &DB{DB: pgdb.DB{Pool: pool}, callSlots: make(chan struct{}, max(1, int(cfg.MaxConns)/2))}, nil
}

// Exec and Query run a statement in the transaction as the store's own
// methods do (txConn): tests of the transaction's rules.
func (tx *Tx) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := tx.tx.Exec(ctx, sql, args...)
	return err
}

func (tx *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return tx.tx.Query(ctx, sql, args...)
}
