package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// CreateDirectSession records the session of direct-integration
// transaction id: its client and its session token's digest.
func (db *DB) CreateDirectSession(ctx context.Context, merchant, id, client string, tokenHash []byte) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO direct_sessions (transaction_id, merchant_account_id, integration_client, session_token_hash)
		VALUES ($1, $2, $3, $4)`, id, merchant, client, tokenHash)
	return err
}

// ExchangeDirectSession marks the session of transaction id exchanged if
// tokenHash is its token's digest and it was not exchanged before, in one
// statement: of two exchanges at once, one wins. ok is false otherwise.
func (db *DB) ExchangeDirectSession(ctx context.Context, merchant, id string, tokenHash []byte) (client string, ok bool, err error) {
	err = db.Pool.QueryRow(ctx, `UPDATE direct_sessions SET exchanged_at = now()
		WHERE transaction_id = $1 AND merchant_account_id = $2 AND session_token_hash = $3 AND exchanged_at IS NULL
		RETURNING integration_client`, id, merchant, tokenHash).Scan(&client)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return client, err == nil, err
}
