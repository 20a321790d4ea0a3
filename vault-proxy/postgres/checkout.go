package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	vaultproxy "github.com/payorch/vault-proxy"
)

const checkoutColumns = `id, merchant_account_id, amount, currency, cart_items, metadata, expires_at, created_at,
	payment_method_id, payment_method_kind, field_attempts, used_at, used_idempotency_key`

func scanCheckoutSession(row pgx.Row) (*vaultproxy.CheckoutSession, error) {
	var s vaultproxy.CheckoutSession
	var pm *uuid.UUID
	var kind, key *string
	err := row.Scan(&s.ID, &s.MerchantAccountID, &s.Amount, &s.Currency, &s.CartItems, &s.Metadata, &s.ExpiresAt, &s.CreatedAt,
		&pm, &kind, &s.FieldAttempts, &s.UsedAt, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, vaultproxy.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if pm != nil {
		s.PaymentMethodID = *pm
	}
	if kind != nil {
		s.PaymentMethodKind = *kind
	}
	if key != nil {
		s.UsedIdempotencyKey = *key
	}
	return &s, nil
}

// InsertCheckoutSession stores a new session.
func (db *DB) InsertCheckoutSession(ctx context.Context, s *vaultproxy.CheckoutSession) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO checkout_sessions
		(id, merchant_account_id, amount, currency, cart_items, metadata, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		s.ID, s.MerchantAccountID, s.Amount, s.Currency, nullJSON(s.CartItems), nullJSON(s.Metadata), s.ExpiresAt, s.CreatedAt)
	return err
}

func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// CheckoutSession reads the session id, of whichever merchant account:
// the fields endpoint knows the session by its id alone, and the caller
// compares the account where a merchant asks.
func (db *DB) CheckoutSession(ctx context.Context, id uuid.UUID) (*vaultproxy.CheckoutSession, error) {
	return scanCheckoutSession(db.Pool.QueryRow(ctx, `SELECT `+checkoutColumns+` FROM checkout_sessions WHERE id = $1`, id))
}

// CountCheckoutFieldAttempt counts a field submission to the session id
// and returns the session as it is after it.
func (db *DB) CountCheckoutFieldAttempt(ctx context.Context, id uuid.UUID) (*vaultproxy.CheckoutSession, error) {
	return scanCheckoutSession(db.Pool.QueryRow(ctx, `UPDATE checkout_sessions SET field_attempts = field_attempts + 1
		WHERE id = $1 RETURNING `+checkoutColumns, id))
}

// SetCheckoutSessionCard makes token (of kind) the session's card, if the
// session is neither used nor expired at now, and returns the card it had
// before (uuid.Nil when none) and its kind, for the caller to let go of.
func (db *DB) SetCheckoutSessionCard(ctx context.Context, id, token uuid.UUID, kind string, now time.Time) (uuid.UUID, string, error) {
	var prev *uuid.UUID
	var prevKind *string
	err := db.Pool.QueryRow(ctx, `UPDATE checkout_sessions s SET payment_method_id = $2, payment_method_kind = $3
		FROM (SELECT id, payment_method_id, payment_method_kind FROM checkout_sessions WHERE id = $1 FOR UPDATE) old
		WHERE s.id = old.id AND s.used_at IS NULL AND s.expires_at > $4
		RETURNING old.payment_method_id, old.payment_method_kind`, id, token, kind, now).Scan(&prev, &prevKind)
	if errors.Is(err, pgx.ErrNoRows) {
		s, rerr := db.CheckoutSession(ctx, id)
		if rerr != nil {
			return uuid.Nil, "", rerr
		}
		return uuid.Nil, "", refusal(s, now)
	}
	if err != nil || prev == nil {
		return uuid.Nil, "", err
	}
	return *prev, *prevKind, nil
}

// refusal is why s, which a conditional update did not match, refuses.
func refusal(s *vaultproxy.CheckoutSession, now time.Time) error {
	switch {
	case s.UsedAt != nil:
		return vaultproxy.ErrCheckoutSessionUsed
	case s.Expired(now):
		return vaultproxy.ErrCheckoutSessionExpired
	case s.PaymentMethodID == uuid.Nil:
		return vaultproxy.ErrCheckoutSessionIncomplete
	}
	return vaultproxy.ErrCheckoutSessionUsed
}

// ClaimCheckoutSession marks the merchant account's session id used by a
// payment under key (empty: none) at now, and returns it. A session used
// already under the same non-empty key is returned with replay true: the
// payment's retry. Otherwise a session that is used, expired or has no
// card refuses with the matching error, and one of another account is
// vaultproxy.ErrNotFound.
func (db *DB) ClaimCheckoutSession(ctx context.Context, merchantAccountID string, id uuid.UUID, key string, now time.Time) (s *vaultproxy.CheckoutSession, replay bool, err error) {
	var k *string
	if key != "" {
		k = &key
	}
	s, err = scanCheckoutSession(db.Pool.QueryRow(ctx, `UPDATE checkout_sessions SET used_at = $4, used_idempotency_key = $3
		WHERE id = $1 AND merchant_account_id = $2 AND used_at IS NULL AND expires_at > $4 AND payment_method_id IS NOT NULL
		RETURNING `+checkoutColumns, id, merchantAccountID, k, now))
	if !errors.Is(err, vaultproxy.ErrNotFound) {
		return s, false, err
	}
	s, err = db.CheckoutSession(ctx, id)
	switch {
	case err != nil:
		return nil, false, err
	case s.MerchantAccountID != merchantAccountID:
		return nil, false, vaultproxy.ErrNotFound
	case s.UsedAt != nil && key != "" && s.UsedIdempotencyKey == key:
		return s, true, nil
	}
	return nil, false, refusal(s, now)
}

// ReleaseCheckoutSession undoes the claim of the session id by the payment
// under key: core-api refused that payment, so no transaction used it.
func (db *DB) ReleaseCheckoutSession(ctx context.Context, id uuid.UUID, key string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE checkout_sessions SET used_at = NULL, used_idempotency_key = NULL
		WHERE id = $1 AND used_at IS NOT NULL AND coalesce(used_idempotency_key, '') = $2`, id, key)
	return err
}

// CheckoutOrigins is the merchant account's allowed origins (none when it
// has set none).
func (db *DB) CheckoutOrigins(ctx context.Context, merchantAccountID string) ([]string, error) {
	var origins []string
	err := db.Pool.QueryRow(ctx, `SELECT allowed_origins FROM checkout_settings WHERE merchant_account_id = $1`, merchantAccountID).Scan(&origins)
	if errors.Is(err, pgx.ErrNoRows) {
		return []string{}, nil
	}
	return origins, err
}

// SetCheckoutOrigins replaces the merchant account's allowed origins.
func (db *DB) SetCheckoutOrigins(ctx context.Context, merchantAccountID string, origins []string, now time.Time) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO checkout_settings (merchant_account_id, allowed_origins, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (merchant_account_id) DO UPDATE SET allowed_origins = excluded.allowed_origins, updated_at = excluded.updated_at`,
		merchantAccountID, origins, now)
	return err
}
