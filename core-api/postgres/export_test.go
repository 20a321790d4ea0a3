package postgres

// LockToken takes, in a transaction a test holds open, the lock that a
// payment method's creation and GiveUpToken take on a token: args for
// Exec(ctx, LockTokenSQL, LockTokenArgs(id)...).
const LockTokenSQL = lockTokenSQL

// LockTokenArgs are LockTokenSQL's arguments for the token id.
func LockTokenArgs(id string) []any { return []any{tokenLockClass, id} }
