package postgres

import (
	"context"
	"time"
)

// TryLockKey takes the session-scoped advisory lock named name for the
// caller, if no session holds it: ok false when one does. Unlike the
// transaction-scoped locks elsewhere it outlives any one statement, so it
// holds a connection of the pool until unlock, which every caller must
// call (it is safe to call once). A session that dies (the process, the
// connection) lets its locks go with it, so a crash never leaves one
// taken. The key is a 64-bit hash of name; two names that collide only
// exclude each other.
func (db *DB) TryLockKey(ctx context.Context, name string) (unlock func(), ok bool, err error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	const key = `hashtextextended('key-lock:' || $1, 0)`
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+key+`)`, name).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+key+`)`, name); err != nil {
			// The lock must not go back to the pool with the connection.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, true, nil
}
