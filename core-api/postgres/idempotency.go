package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/core-api/idempotency"
)

var _ idempotency.Store = (*DB)(nil)

// ClaimIdempotencyKey claims s for owner (idempotency.Store). The row is
// inserted, or else locked and judged by the database's clock, in one
// short transaction: of concurrent claims one inserts, and the others
// wait for its commit and find it held.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, s idempotency.Scope, f idempotency.Fingerprint, owner string,
	lease, ttl time.Duration) (st idempotency.IdempotencyKeyState, err error) {
	// A row found gone (released or purged between the two statements)
	// is claimed afresh; a few rounds are plenty.
	for range 3 {
		var found bool
		err = db.InTx(ctx, func(tx *Tx) error {
			st, found, err = claimOnce(ctx, tx.tx, s, f, owner, lease, ttl)
			return err
		})
		if err != nil || found {
			return st, err
		}
	}
	return st, errors.New("idempotency key: claim kept racing with its removal")
}

func claimOnce(ctx context.Context, tx *txConn, s idempotency.Scope, f idempotency.Fingerprint, owner string,
	lease, ttl time.Duration) (st idempotency.IdempotencyKeyState, found bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys
		(merchant_account_id, endpoint, key, fingerprint, owner, locked_until, expires_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6::interval, now() + $7::interval)
		ON CONFLICT DO NOTHING`,
		s.MerchantAccountID, s.Endpoint, s.Key, f[:], owner, lease, ttl)
	if err != nil {
		return st, false, err
	}
	if tag.RowsAffected() == 1 {
		return idempotency.IdempotencyKeyState{Claimed: true, Fingerprint: f}, true, nil
	}
	var (
		fp              []byte
		expired, leased bool
		status          *int16
		contentType     *string
		body            []byte
		resource        *string
	)
	err = tx.QueryRow(ctx, `SELECT fingerprint, expires_at <= now(), coalesce(locked_until > now(), false),
			response_status, response_content_type, response_body, resource_id
		FROM idempotency_keys WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3 FOR UPDATE`,
		s.MerchantAccountID, s.Endpoint, s.Key).Scan(&fp, &expired, &leased, &status, &contentType, &body, &resource)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	copy(st.Fingerprint[:], fp)
	switch {
	case expired && !leased:
		// Past its 24 hours but not purged yet: a new key. One whose
		// claim still runs stays that claim's.
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET fingerprint = $4, owner = $5,
			locked_until = now() + $6::interval, expires_at = now() + $7::interval, created_at = now(),
			response_status = NULL, response_content_type = NULL, response_body = NULL, resource_id = NULL
			WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3`,
			s.MerchantAccountID, s.Endpoint, s.Key, f[:], owner, lease, ttl)
		return idempotency.IdempotencyKeyState{Claimed: true, Fingerprint: f}, true, err
	case status != nil:
		st.Response = &idempotency.Response{Status: int(*status), Body: body}
		if contentType != nil {
			st.Response.ContentType = *contentType
		}
		return st, true, nil
	case !leased && st.Fingerprint == f:
		// The claim's process died, or its request outran the lease, or
		// it failed after attaching a resource.
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET owner = $4, locked_until = now() + $5::interval
			WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3`,
			s.MerchantAccountID, s.Endpoint, s.Key, owner, lease)
		taken := idempotency.IdempotencyKeyState{Claimed: true, TakenOver: true, Fingerprint: f}
		if resource != nil {
			taken.Resource = *resource
		}
		return taken, true, err
	default:
		return st, true, nil
	}
}

// CompleteIdempotencyKey stores resp on s if owner holds it
// (idempotency.Store).
func (db *DB) CompleteIdempotencyKey(ctx context.Context, s idempotency.Scope, owner string, resp idempotency.Response) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET locked_until = NULL,
			response_status = $5, response_content_type = $6, response_body = $7
		WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3 AND owner = $4 AND response_status IS NULL`,
		s.MerchantAccountID, s.Endpoint, s.Key, owner, resp.Status, resp.ContentType, resp.Body)
	return tag.RowsAffected() == 1, err
}

// ReleaseIdempotencyKey removes s if owner holds it, or ends its lease
// when a resource is attached (idempotency.Store).
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, s idempotency.Scope, owner string) error {
	var b pgx.Batch
	b.Queue(`DELETE FROM idempotency_keys WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3
		AND owner = $4 AND response_status IS NULL AND resource_id IS NULL`, s.MerchantAccountID, s.Endpoint, s.Key, owner)
	b.Queue(`UPDATE idempotency_keys SET locked_until = now() WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3
		AND owner = $4 AND response_status IS NULL AND resource_id IS NOT NULL`, s.MerchantAccountID, s.Endpoint, s.Key, owner)
	return db.Pool.SendBatch(ctx, &b).Close()
}

// AttachIdempotencyKey records resource on s if owner holds it
// (idempotency.Store).
func (db *DB) AttachIdempotencyKey(ctx context.Context, s idempotency.Scope, owner, resource string) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE idempotency_keys SET resource_id = $5
		WHERE merchant_account_id = $1 AND endpoint = $2 AND key = $3 AND owner = $4 AND response_status IS NULL`,
		s.MerchantAccountID, s.Endpoint, s.Key, owner, resource)
	return tag.RowsAffected() == 1, err
}

// PurgeIdempotencyKeys removes up to limit expired keys
// (idempotency.Store). SKIP LOCKED lets instances purging at once share
// the rows rather than wait for each other; a claim still running keeps
// its row.
func (db *DB) PurgeIdempotencyKeys(ctx context.Context, limit int) (int, error) {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE ctid IN (
		SELECT ctid FROM idempotency_keys
		WHERE expires_at <= now() AND (locked_until IS NULL OR locked_until <= now())
		LIMIT $1 FOR UPDATE SKIP LOCKED)`, limit)
	return int(tag.RowsAffected()), err
}
