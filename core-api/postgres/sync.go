package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/transactions"
)

// ProcessingOperations returns transaction transactionID's captures and
// refunds still processing, oldest first.
func (db *DB) ProcessingOperations(ctx context.Context, merchant, transactionID string) ([]coreapi.Capture, []coreapi.Refund, error) {
	if !coreapi.IsUUID(transactionID) {
		return nil, nil, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT `+opColumns+captureFrom+`
		WHERE o.merchant_account_id = $1 AND o.transaction_id = $2 AND o.status = 'processing' ORDER BY o.created_at, o.id`,
		merchant, transactionID)
	if err != nil {
		return nil, nil, err
	}
	captures, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.Capture, error) {
		var c coreapi.Capture
		return c, r.Scan(scanOperation(&c.OperationRecord)...)
	})
	if err != nil {
		return nil, nil, err
	}
	rows, err = db.Pool.Query(ctx, `SELECT `+refundColumns+refundFrom+`
		WHERE o.merchant_account_id = $1 AND o.transaction_id = $2 AND o.status = 'processing' ORDER BY o.created_at, o.id`,
		merchant, transactionID)
	if err != nil {
		return nil, nil, err
	}
	refunds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.Refund, error) {
		rf, err := scanRefund(r)
		if err != nil {
			return coreapi.Refund{}, err
		}
		return *rf, nil
	})
	return captures, refunds, err
}

// syncedMethods are the methods whose payments the sweep syncs: cards,
// bank debits, direct integrations and redirect payments.
var syncedMethods = slices.Concat([]string{coreapi.MethodCard, coreapi.MethodBank}, coreapi.DirectMethods, coreapi.RedirectMethods)

// UnsettledTransactions returns up to limit card, bank, direct and
// redirect transactions of every merchant account with something in
// flight (an authorization or a void, unchanged for minAge by the
// database's clock; a capture or refund requested more than minAge ago,
// a bank debit's capture waiting for the bank's result among them; a
// redirect payment waiting for its buyer for more than minAge, whose
// notification may have been lost), in the order (created_at, id), after
// the transaction after (the zero value: from the first). Each part but
// the redirect payments waiting for their buyer (as
// ExpiredApprovalTransactions) is
// read through its partial index of what is in flight.
func (db *DB) UnsettledTransactions(ctx context.Context, minAge time.Duration, after transactions.Unsettled, limit int) ([]transactions.Unsettled, error) {
	afterID := after.ID
	if afterID == "" {
		afterID = "00000000-0000-0000-0000-000000000000"
	}
	rows, err := db.Pool.Query(ctx, `SELECT t.merchant_account_id, t.id::text, t.created_at FROM transactions t
		WHERE t.id IN (
			SELECT id FROM transactions WHERE status IN ('processing', 'authorization_void_pending') AND updated_at < now() - $1::interval
			UNION SELECT transaction_id FROM captures WHERE status = 'processing' AND created_at < now() - $1::interval
			UNION SELECT transaction_id FROM refunds WHERE status = 'processing' AND created_at < now() - $1::interval
			UNION SELECT id FROM transactions WHERE status = 'buyer_approval_pending' AND payment_method_method = ANY($6)
				AND updated_at < now() - $1::interval)
		AND t.payment_method_method = ANY($5) AND (t.created_at, t.id) > ($2::timestamptz, $3::uuid)
		ORDER BY t.created_at, t.id LIMIT $4`, minAge, after.CreatedAt, afterID, limit, syncedMethods, coreapi.RedirectMethods)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (transactions.Unsettled, error) {
		var u transactions.Unsettled
		return u, r.Scan(&u.MerchantAccountID, &u.ID, &u.CreatedAt)
	})
}

// ExpiredQRTransactions returns up to limit pix payments of every
// merchant account still waiting for their transfer after their QR code's
// expiry by the database's clock, in the order (created_at, id), after
// the transaction after; read through transactions_qr_expiry_idx.
func (db *DB) ExpiredQRTransactions(ctx context.Context, after transactions.Unsettled, limit int) ([]transactions.Unsettled, error) {
	return db.expired(ctx, after, limit, `status = 'capture_pending' AND approval_expires_at IS NOT NULL
		AND payment_method_method = ANY($4)`, []string{coreapi.MethodPix})
}

// ExpiredApprovalTransactions returns up to limit redirect payments of
// every merchant account still waiting for their buyer after their
// reference's expiry by the database's clock, in the order (created_at,
// id), after the transaction after; read through
// transactions_approval_expiry_idx.
func (db *DB) ExpiredApprovalTransactions(ctx context.Context, after transactions.Unsettled, limit int) ([]transactions.Unsettled, error) {
	return db.expired(ctx, after, limit, `status = 'buyer_approval_pending' AND approval_expires_at IS NOT NULL
		AND payment_method_method = ANY($4)`, coreapi.RedirectMethods)
}

// ExpiredChallenges returns up to limit card payments of every merchant
// account still waiting for their 3-D Secure challenge after its expiry
// by the database's clock, in the order (created_at, id), after the
// transaction after; read through transactions_challenge_expiry_idx.
func (db *DB) ExpiredChallenges(ctx context.Context, after transactions.Unsettled, limit int) ([]transactions.Unsettled, error) {
	return db.expired(ctx, after, limit, `status = 'buyer_approval_pending' AND three_d_secure IS NOT NULL
		AND payment_method_method = ANY($4)`, []string{coreapi.MethodCard})
}

// expired returns up to limit transactions that match waiting (a
// condition on the methods $4) past their approval_expires_at by the
// database's clock, in the order (created_at, id), after after.
func (db *DB) expired(ctx context.Context, after transactions.Unsettled, limit int, waiting string, methods []string) ([]transactions.Unsettled, error) {
	afterID := after.ID
	if afterID == "" {
		afterID = "00000000-0000-0000-0000-000000000000"
	}
	rows, err := db.Pool.Query(ctx, `SELECT merchant_account_id, id::text, created_at FROM transactions
		WHERE `+waiting+` AND approval_expires_at <= now() AND (created_at, id) > ($1::timestamptz, $2::uuid)
		ORDER BY created_at, id LIMIT $3`, after.CreatedAt, afterID, limit, methods)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (transactions.Unsettled, error) {
		var u transactions.Unsettled
		return u, r.Scan(&u.MerchantAccountID, &u.ID, &u.CreatedAt)
	})
}
