package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// TxCommitted waits until database transaction txID (as
// DeleteMerchantAccount names it) has ended, and reports whether it
// committed. A transaction whose connection broke may still run for a
// while on the server; ctx bounds the wait.
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

// keyedLocks are mutexes by key (a payment method), made on first use and
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
	select {
	case l.held <- struct{}{}:
		return func() { <-l.held; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
