package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The advisory locks of the vault reconciliation (core-api/reconcile), in
// PostgreSQL's two-key space (tern's migration lock is in the one-key
// space, which does not overlap): the first key says what the second is.
const (
	// tokenLockClass: the second key is hashtext(token). A payment
	// method's creation and GiveUpToken take it for the transaction, so
	// that one of them sees the other's row (two tokens of one hash only
	// wait for each other).
	tokenLockClass = 1953459054 // "tokn"
	// reconcileLockClass: the second key is 0. One session at a time holds
	// it, for a whole run of the reconciliation.
	reconcileLockClass = 1919118956 // "rcnl"
)

// lockTokenSQL takes the token's lock ($2, a payment method id; $1 is
// tokenLockClass) until the transaction ends.
const lockTokenSQL = `SELECT pg_advisory_xact_lock($1, hashtext($2::text))`

// LockReconciliation takes the lock that one reconciliation at a time
// holds, across instances, without waiting: ok is false when another
// holds it. The lock is its session's: should this process die, the
// session ends and the lock with it.
func (db *DB) LockReconciliation(ctx context.Context) (release func(), ok bool, err error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, 0)`, reconcileLockClass).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, 0)`, reconcileLockClass); err != nil {
			// Whether it was given back is not known: the session ends,
			// which gives it back (the server notices soon, not at once).
			_ = conn.Hijack().Close(ctx)
			return
		}
		conn.Release()
	}, true, nil
}

// WithoutPaymentMethod returns those of ids (tokens) that no payment
// method of any merchant account has, nor any 3-D Secure scenario as its
// card condition, in the order given.
func (db *DB) WithoutPaymentMethod(ctx context.Context, ids []string) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT t.id::text FROM unnest($1::uuid[]) WITH ORDINALITY AS t (id, n)
		WHERE NOT EXISTS (SELECT FROM payment_methods pm WHERE pm.id = t.id)
			AND NOT EXISTS (SELECT FROM three_ds_scenarios s WHERE s.card_condition_id = t.id) ORDER BY t.n`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// GiveUpToken records that no payment method will ever be created with
// the token id, a vaulted record of merchant vaulted at vaultedAt, unless
// one has been already: then it records nothing and says false. Under the
// token's lock, which CreatePaymentMethod takes too, the check and the
// record are one step to a creation. Giving a token up twice is allowed.
func (db *DB) GiveUpToken(ctx context.Context, id, merchant, kind string, vaultedAt time.Time) (bool, error) {
	var given bool
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockTokenSQL, tokenLockClass, id); err != nil {
			return err
		}
		// A statement of its own, after the wait: its snapshot sees a
		// creation that committed meanwhile.
		var held bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM payment_methods WHERE id = $1)`, id).Scan(&held); err != nil || held {
			return err
		}
		given = true
		_, err := tx.Exec(ctx, `INSERT INTO given_up_tokens (id, merchant_account_id, kind, vaulted_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`, id, merchant, kind, vaultedAt)
		return err
	})
	return given && err == nil, err
}

// TokenShredded records that vault-proxy has shredded (or no longer had)
// the record of a given-up token.
func (db *DB) TokenShredded(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE given_up_tokens SET shredded_at = now() WHERE id = $1 AND shredded_at IS NULL`, id)
	return err
}
