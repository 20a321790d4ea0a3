package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tx is the core database within one transaction (DB.InTx): what must
// commit together, or hold its locks across a call to another service.
type Tx struct {
	tx        pgx.Tx
	db        *DB // for what the changes write with them (the outbox)
	committed bool
}

// InTx runs fn in one database transaction, the store's unit of work: it
// commits when fn returns nil, and rolls back when fn fails or panics. ctx
// bounds the begin and the commit; fn's statements take their own
// contexts, and fn may commit itself (Tx.Commit) under a context of its
// own, for a transaction that must end whether or not the caller still
// waits.
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	ptx, err := db.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer rollback(ctx, ptx) // nothing to do once committed
	tx := &Tx{tx: ptx, db: db}
	if err := fn(tx); err != nil {
		return err
	}
	if tx.committed {
		return nil
	}
	return tx.Commit(ctx)
}

// Commit commits the transaction under ctx, before its fn returns.
func (tx *Tx) Commit(ctx context.Context) error {
	if err := tx.tx.Commit(ctx); err != nil {
		return err
	}
	tx.committed = true
	return nil
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

// rollback ends tx whatever the state of ctx: neither a client gone nor a
// deadline passed may leave the row locked until the pool notices.
func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx) // a failed rollback closes the connection, which ends the transaction
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
