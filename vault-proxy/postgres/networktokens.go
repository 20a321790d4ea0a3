package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/networktoken"
)

const networkTokenColumns = `id, merchant_account_id, payment_method_id, provider, scheme, tsp_reference, status,
	expiration_date, last4, data_key_id, wrapped_record_key, ciphertext, created_at, updated_at`

func scanNetworkToken(r pgx.Row) (*networktoken.NetworkToken, error) {
	t := &networktoken.NetworkToken{}
	var status, exp string
	var dataKey *uuid.UUID
	err := r.Scan(&t.ID, &t.MerchantAccountID, &t.PaymentMethodID, &t.Provider, &t.Scheme, &t.Reference, &status,
		&exp, &t.Last4, &dataKey, &t.Sealed.WrappedKey, &t.Sealed.Ciphertext, &t.CreatedAt, &t.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, vaultproxy.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	t.Status = networktoken.Status(status)
	if dataKey != nil {
		t.Sealed.DataKeyID = *dataKey
	}
	var e card.Expiry
	if err := e.UnmarshalText([]byte(exp)); err != nil {
		return nil, err
	}
	t.Expiry = e
	return t, nil
}

// CurrentNetworkToken returns the payment method's token that is not
// deleted (networktoken.Store).
func (db *DB) CurrentNetworkToken(ctx context.Context, merchantAccountID string, paymentMethodID uuid.UUID) (*networktoken.NetworkToken, error) {
	return scanNetworkToken(db.Pool.QueryRow(ctx, `SELECT `+networkTokenColumns+` FROM network_tokens
		WHERE merchant_account_id = $1 AND payment_method_id = $2 AND status <> 'deleted'`, merchantAccountID, paymentMethodID))
}

// NetworkTokens lists the payment method's tokens, oldest first
// (networktoken.Store).
func (db *DB) NetworkTokens(ctx context.Context, merchantAccountID string, paymentMethodID uuid.UUID) ([]*networktoken.NetworkToken, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+networkTokenColumns+` FROM network_tokens
		WHERE merchant_account_id = $1 AND payment_method_id = $2 ORDER BY id`, merchantAccountID, paymentMethodID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*networktoken.NetworkToken, error) { return scanNetworkToken(r) })
}

// NetworkToken returns one of the payment method's tokens
// (networktoken.Store).
func (db *DB) NetworkToken(ctx context.Context, merchantAccountID string, paymentMethodID, id uuid.UUID) (*networktoken.NetworkToken, error) {
	return scanNetworkToken(db.Pool.QueryRow(ctx, `SELECT `+networkTokenColumns+` FROM network_tokens
		WHERE merchant_account_id = $1 AND payment_method_id = $2 AND id = $3`, merchantAccountID, paymentMethodID, id))
}

// InsertNetworkToken stores a new token unless the payment method already
// has one that is not deleted (networktoken.Store).
func (db *DB) InsertNetworkToken(ctx context.Context, t *networktoken.NetworkToken) (bool, error) {
	exp, err := t.Expiry.MarshalText()
	if err != nil {
		return false, err
	}
	err = db.Pool.QueryRow(ctx, `
		INSERT INTO network_tokens (id, merchant_account_id, payment_method_id, provider, scheme, tsp_reference, status,
		                            expiration_date, last4, data_key_id, wrapped_record_key, ciphertext)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
		WHERE EXISTS (SELECT 1 FROM vaulted_cards WHERE id = $3 AND merchant_account_id = $2)
		ON CONFLICT (payment_method_id) WHERE status <> 'deleted' DO NOTHING
		RETURNING created_at, updated_at`,
		t.ID, t.MerchantAccountID, t.PaymentMethodID, t.Provider, t.Scheme, t.Reference, string(t.Status),
		string(exp), t.Last4, t.Sealed.DataKeyID, t.Sealed.WrappedKey, t.Sealed.Ciphertext).Scan(&t.CreatedAt, &t.UpdatedAt)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, pgx.ErrNoRows):
		// Either a conflict (another token exists) or no such card.
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM vaulted_cards WHERE id = $1 AND merchant_account_id = $2`,
			t.PaymentMethodID, t.MerchantAccountID).Scan(&n); err != nil {
			return false, err
		}
		if n == 0 {
			return false, vaultproxy.ErrNotFound
		}
		return false, nil
	case errors.As(err, &pgErr) && pgErr.Code == "23503": // the card was deleted meanwhile
		return false, vaultproxy.ErrNotFound
	}
	return false, err
}

// ChangeNetworkToken locks one of the payment method's tokens, hands it to
// change and stores the status change returns, in one transaction
// (networktoken.Store). The row lock is held while change calls the token
// service, so that lifecycle operations on the token, on any instance,
// take turns and each sees the status the one before left.
//
// The lock is FOR NO KEY UPDATE, the lock the status update takes anyway:
// it does not conflict with KEY SHARE locks of foreign key checks. Nothing
// here locks the card row either (the update leaves payment_method_id
// alone, so its foreign key is not checked): DeleteCard, which holds the
// card row and then waits for token rows, never waits on a transaction that
// waits for it.
func (db *DB) ChangeNetworkToken(ctx context.Context, merchantAccountID string, paymentMethodID, id uuid.UUID,
	change func(context.Context, *networktoken.NetworkToken) (networktoken.Status, error)) (*networktoken.NetworkToken, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	// Not bound by ctx: a request gone away must still end the transaction.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	t, err := scanNetworkToken(tx.QueryRow(ctx, `SELECT `+networkTokenColumns+` FROM network_tokens
		WHERE merchant_account_id = $1 AND payment_method_id = $2 AND id = $3 FOR NO KEY UPDATE`, merchantAccountID, paymentMethodID, id))
	if err != nil {
		return nil, err
	}
	status, err := change(ctx, t)
	if err != nil || status == t.Status {
		return t, err
	}
	// The token service has changed the token: record it even if the
	// request is cancelled now, or the two would disagree.
	ctx = context.WithoutCancel(ctx)
	if err := updateNetworkTokenStatus(ctx, tx, t, status); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// updateNetworkTokenStatus moves a token from t.Status to status; deleted
// drops the sealed value.
func updateNetworkTokenStatus(ctx context.Context, tx pgx.Tx, t *networktoken.NetworkToken, status networktoken.Status) error {
	err := tx.QueryRow(ctx, `
		UPDATE network_tokens SET status = $4, updated_at = now(),
			data_key_id        = CASE WHEN $4 = 'deleted' THEN NULL ELSE data_key_id END,
			wrapped_record_key = CASE WHEN $4 = 'deleted' THEN NULL ELSE wrapped_record_key END,
			ciphertext         = CASE WHEN $4 = 'deleted' THEN NULL ELSE ciphertext END
		WHERE merchant_account_id = $1 AND payment_method_id = $2 AND id = $3 AND status = $5
		RETURNING updated_at`,
		t.MerchantAccountID, t.PaymentMethodID, t.ID, string(status), string(t.Status)).Scan(&t.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return networktoken.ErrConflict
	}
	if err != nil {
		return err
	}
	t.Status = status
	if status == networktoken.StatusDeleted {
		t.Sealed = envelope.Sealed{}
	}
	return nil
}
