package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is the core database within one transaction (DB.InTx): what must
// commit together, or hold its locks across a call to another service.
type Tx struct {
	tx        *txConn
	db        *DB // for what the changes write with them (the outbox)
	committed bool
}

// InTx runs fn in one database transaction, the store's unit of work: it
// commits when fn returns nil, and rolls back when fn fails or panics. ctx
// bounds the commit; fn's statements take their own contexts (the BEGIN
// goes with the first of them), and fn may commit itself (Tx.Commit) under
// a context of its own, for a transaction that must end whether or not the
// caller still waits.
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	c, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer rollback(ctx, c) // nothing to do once committed
	tx := &Tx{tx: &txConn{c: c}, db: db}
	if err := fn(tx); err != nil {
		return err
	}
	if tx.committed {
		return nil
	}
	return tx.Commit(ctx)
}

// Commit commits the transaction under ctx, before its fn returns, with
// the writes still waiting to be sent (txConn.later) in the same round
// trip.
func (tx *Tx) Commit(ctx context.Context) error {
	t := tx.tx
	if t.failed != nil {
		return t.failed
	}
	if !t.begun && len(t.waiting) == 0 { // nothing was sent: nothing to commit
		tx.committed = true
		return nil
	}
	var b pgx.Batch
	var tag pgconn.CommandTag
	b.Queue(`COMMIT`).Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	if err := t.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	if tag.String() != "COMMIT" { // a transaction that had failed: PostgreSQL rolled it back
		return pgx.ErrTxCommitRollback
	}
	tx.committed = true
	return nil
}

// txConn is a database transaction on one pooled connection, in as few
// round trips as its statements allow: its BEGIN is sent with its first
// statement, and writes whose results nothing reads (later) with the
// statement after them or with the COMMIT. Statements of one round trip
// run in order, and one that fails skips the rest until the round trip's
// end, COMMIT included: the transaction then only rolls back.
type txConn struct {
	c       *pgxpool.Conn
	begun   bool               // BEGIN sent
	waiting []*pgx.QueuedQuery // writes to send with the next round trip
	failed  error              // a write sent with another statement failed
}

// later queues b's statements to be sent with the transaction's next
// round trip, for writes whose results nothing reads before then. An error
// of theirs is returned by that round trip, and by Commit. Their
// callbacks may read what they return, and fail only with the statement's
// own error: in a round trip that carries the COMMIT, they run once it has
// committed (a check that may refuse a write must fail on the server,
// queueChecked).
func (t *txConn) later(b *pgx.Batch) {
	t.waiting = append(t.waiting, b.QueuedQueries...)
}

// SendBatch sends b, after the BEGIN if none was sent yet and the writes
// waiting (later), in one round trip.
func (t *txConn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.failed != nil {
		return pgx.FailedBatchResults(b, t.failed)
	}
	var before []*pgx.QueuedQuery
	if !t.begun {
		before = append(before, &pgx.QueuedQuery{SQL: `BEGIN`})
	}
	before = append(before, t.waiting...)
	if len(before) == 0 {
		return t.c.SendBatch(ctx, b)
	}
	t.begun, t.waiting = true, nil
	br := t.c.SendBatch(ctx, &pgx.Batch{QueuedQueries: append(before, b.QueuedQueries...)})
	for _, q := range before {
		var err error
		if q.Fn != nil {
			err = q.Fn(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			// The server skipped b's statements; b's callbacks are not
			// run, and its results report the error.
			t.failed = err
			_ = br.Close()
			return pgx.FailedBatchResults(b, err)
		}
	}
	return br
}

// divisionByZero is the error of a statement queued by queueChecked whose
// write found nothing.
const divisionByZero = "22012"

// queueChecked queues sql, which writes one row in a CTE and then divides
// by zero when it wrote none (SELECT 1 / (count(*) = 1)::int FROM it): a
// refusal on the server, which skips the statements after it in its round
// trip, the COMMIT included. The division by zero is returned as notFound.
func queueChecked(b *pgx.Batch, notFound error, sql string, args ...any) {
	b.Queue(sql, args...).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == divisionByZero {
			return notFound
		}
		return err
	}
}

// Exec runs one statement, as pgx.Tx's Exec.
func (t *txConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var b pgx.Batch
	var tag pgconn.CommandTag
	b.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	err := t.SendBatch(ctx, &b).Close()
	return tag, err
}

// Query runs a query of many rows, as pgx.Tx's Query. Its rows stream
// from the connection, so what the transaction still has to send (its
// BEGIN, the writes waiting) goes first, in a round trip of its own. A
// failed transaction refuses it as SendBatch does: a round trip that
// failed before the server ran its BEGIN (a statement it could not
// prepare) leaves the connection outside any transaction, where the
// query would run, and stay, on its own.
func (t *txConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.failed != nil {
		return nil, t.failed
	}
	if !t.begun || len(t.waiting) > 0 {
		if err := t.SendBatch(ctx, &pgx.Batch{}).Close(); err != nil {
			return nil, err
		}
	}
	return t.c.Query(ctx, sql, args...)
}

// QueryRow runs one query when its row is scanned, as pgx.Tx's QueryRow.
func (t *txConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return &txRow{t: t, ctx: ctx, sql: sql, args: args}
}

type txRow struct {
	t    *txConn
	ctx  context.Context
	sql  string
	args []any
}

func (r *txRow) Scan(dest ...any) error {
	var b pgx.Batch
	b.Queue(r.sql, r.args...).QueryRow(func(row pgx.Row) error { return row.Scan(dest...) })
	return r.t.SendBatch(r.ctx, &b).Close()
}

// TxID is the transaction's id: after an error, TxCommitted tells by it
// whether the transaction committed all the same (a commit whose answer
// was lost).
func (tx *Tx) TxID(ctx context.Context) (string, error) {
	var id string
	err := tx.tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&id)
	return id, err
}

// CallTurn waits until a transaction that holds its pooled connection
// across a call to another service (a row kept locked while vault-proxy
// answers) may take one. Those of one key (a record) take turns in this
// process before taking a connection, so a burst on one record uses one
// connection per instance; and at most half the pool is held by them at
// once, so a slow callee cannot take every connection from other requests,
// or from the transaction that mends a failed one. ctx bounds only these
// waits; release lets the next one in.
func (db *DB) CallTurn(ctx context.Context, key string) (release func(), err error) {
	unlock, err := db.turns.lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return acquire(ctx, db.callSlots, unlock)
}

// acquire waits for a place in sem (a buffered channel) or for ctx to
// end; then runs once it is over: after the place is given back (release),
// or at once when ctx ended first.
func acquire(ctx context.Context, sem chan struct{}, then func()) (release func(), err error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem; then() }, nil
	case <-ctx.Done():
		then()
		return nil, ctx.Err()
	}
}

// TxCommitted waits until database transaction txID (Tx.TxID) has ended,
// and reports whether it committed. A transaction whose connection broke
// may still run for a while on the server; ctx bounds the wait.
func (db *DB) TxCommitted(ctx context.Context, txID string) (bool, error) {
	for {
		var status *string
		if err := db.Pool.QueryRow(ctx, `SELECT pg_xact_status($1::xid8)`, txID).Scan(&status); err != nil {
			return false, err
		}
		switch {
		case status == nil:
			return false, fmt.Errorf("postgres: transaction %s is too old to tell", txID)
		case *status == "committed":
			return true, nil
		case *status == "aborted":
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rollback ends the transaction on c, unless it committed, whatever the
// state of ctx (neither a client gone nor a deadline passed may leave the
// row locked until the pool notices), and gives c back to the pool.
func rollback(ctx context.Context, c *pgxpool.Conn) {
	if c.Conn().PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = c.Exec(ctx, `ROLLBACK`) // a connection left in a transaction is closed on release, which ends it
	}
	c.Release()
}

// keyedLocks are mutexes by key (a record), made on first use and
// dropped when no one holds or waits for them. The zero value is ready.
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	held chan struct{} // holds a value while locked
	refs int           // holders and waiters
}

// lock waits for key's lock, or for ctx to end.
func (k *keyedLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyedLock{held: make(chan struct{}, 1)}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	leave := func() {
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	return acquire(ctx, l.held, leave)
}
