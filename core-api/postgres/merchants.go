package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

const merchantColumns = `id, display_name, created_at, updated_at`

func scanMerchant(row pgx.Row) (*coreapi.MerchantAccount, error) {
	var a coreapi.MerchantAccount
	if err := row.Scan(&a.ID, &a.DisplayName, &a.CreatedAt, &a.UpdatedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("merchant account: %w", coreapi.ErrNotFound)
		}
		return nil, err
	}
	return &a, nil
}

// CreateMerchantAccount inserts an account; a taken id is a
// *coreapi.DuplicateError.
func (tx *Tx) CreateMerchantAccount(ctx context.Context, n coreapi.NewMerchantAccount) (*coreapi.MerchantAccount, error) {
	a, err := scanMerchant(tx.tx.QueryRow(ctx,
		`INSERT INTO merchant_accounts (id, display_name) VALUES ($1, $2) RETURNING `+merchantColumns, *n.ID, *n.DisplayName))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == uniqueViolation {
		return nil, &coreapi.DuplicateError{Resource: "merchant account", Field: "id", ExistingID: *n.ID}
	}
	return a, err
}

// DeletedMerchantAccount reports whether id was a deleted account's.
func (tx *Tx) DeletedMerchantAccount(ctx context.Context, id string) (bool, error) {
	var deleted bool
	err := tx.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deleted_merchant_accounts WHERE id = $1)`, id).Scan(&deleted)
	return deleted, err
}

// FindMerchantAccount returns account id or an error wrapping ErrNotFound.
func (db *DB) FindMerchantAccount(ctx context.Context, id string) (*coreapi.MerchantAccount, error) {
	return scanMerchant(db.Pool.QueryRow(ctx, `SELECT `+merchantColumns+` FROM merchant_accounts WHERE id = $1`, id))
}

// UpdateMerchantAccount changes the display name if given.
func (db *DB) UpdateMerchantAccount(ctx context.Context, id string, u coreapi.MerchantAccountUpdate) (*coreapi.MerchantAccount, error) {
	if u.DisplayName.Ptr() == nil {
		return db.FindMerchantAccount(ctx, id)
	}
	return scanMerchant(db.Pool.QueryRow(ctx,
		`UPDATE merchant_accounts SET display_name = $2, updated_at = now() WHERE id = $1 RETURNING `+merchantColumns, id, u.DisplayName.Value))
}

// queryRower is a pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// merchantUsage counts the records that keep account id in use, in one
// statement (one snapshot); only kinds with a count above zero are
// returned. A missing account wraps coreapi.ErrNotFound.
func merchantUsage(ctx context.Context, q queryRower, id string) ([]coreapi.RecordCount, error) {
	var exists bool
	var buyers, methods, mandates, transactions, cardScenarios int64
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM merchant_accounts WHERE id = $1),
		(SELECT count(*) FROM buyers WHERE merchant_account_id = $1),
		(SELECT count(*) FROM payment_methods WHERE merchant_account_id = $1),
		(SELECT count(*) FROM mandates WHERE merchant_account_id = $1 AND status IN ('pending', 'active')),
		(SELECT count(*) FROM transactions WHERE merchant_account_id = $1),
		(SELECT count(*) FROM three_ds_scenarios WHERE merchant_account_id = $1 AND card_condition_id IS NOT NULL)`, id).
		Scan(&exists, &buyers, &methods, &mandates, &transactions, &cardScenarios)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("merchant account: %w", coreapi.ErrNotFound)
	}
	var in []coreapi.RecordCount
	for _, u := range []coreapi.RecordCount{
		{Resource: coreapi.UsageBuyers, Count: buyers},
		{Resource: coreapi.UsagePaymentMethods, Count: methods},
		{Resource: coreapi.UsageMandates, Count: mandates},
		{Resource: coreapi.UsageTransactions, Count: transactions},
		{Resource: coreapi.UsageThreeDSCardScenarios, Count: cardScenarios},
	} {
		if u.Count > 0 {
			in = append(in, u)
		}
	}
	return in, nil
}

// LockMerchantAccount locks account id's row until the transaction ends;
// a missing account wraps coreapi.ErrNotFound. Every insert referring to
// the account takes a key-share lock on its row (the foreign key), so
// while it is held none can appear between a count of the account's
// records (MerchantAccountUsage) and its deletion.
func (tx *Tx) LockMerchantAccount(ctx context.Context, id string) error {
	return lockMerchantRow(ctx, tx.tx, id)
}

// MerchantAccountUsage counts the records that keep account id in use
// (merchantUsage).
func (tx *Tx) MerchantAccountUsage(ctx context.Context, id string) ([]coreapi.RecordCount, error) {
	return merchantUsage(ctx, tx.tx, id)
}

// DeleteMerchantAccount removes account id, locked and found unused in
// this transaction; a row that still refers to it (a kind of record
// MerchantAccountUsage does not count, which the database's foreign keys
// know) is a *coreapi.MerchantAccountInUseError. Its revoked and failed mandates are
// history, not use: they move to mandates_of_deleted_accounts, so the
// record of their revocation survives the account and a later account with
// the same id does not inherit it; the id goes to
// deleted_merchant_accounts.
func (tx *Tx) DeleteMerchantAccount(ctx context.Context, id string) error {
	_, err := tx.tx.Exec(ctx, `WITH gone AS (DELETE FROM mandates WHERE merchant_account_id = $1 RETURNING *)
		INSERT INTO mandates_of_deleted_accounts (id, merchant_account_id, account_created_at, payment_method_id,
			connector, scheme, status, created_at, updated_at, revoked_at)
		SELECT g.id, g.merchant_account_id, a.created_at, g.payment_method_id,
			g.connector, g.scheme, g.status, g.created_at, g.updated_at, g.revoked_at
		FROM gone g JOIN merchant_accounts a ON a.id = g.merchant_account_id`, id)
	if err == nil {
		_, err = tx.tx.Exec(ctx, `WITH gone AS (DELETE FROM merchant_accounts WHERE id = $1 RETURNING id, created_at)
			INSERT INTO deleted_merchant_accounts (id, account_created_at) SELECT id, created_at FROM gone`, id)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == foreignKeyViolation {
		return &coreapi.MerchantAccountInUseError{}
	}
	return err
}

// lockMerchantRow locks account id's row until tx ends; a missing account
// wraps coreapi.ErrNotFound.
func lockMerchantRow(ctx context.Context, tx *txConn, id string) error {
	tag, err := tx.Exec(ctx, `SELECT 1 FROM merchant_accounts WHERE id = $1 FOR UPDATE`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("merchant account: %w", coreapi.ErrNotFound)
	}
	return err
}

// ListMerchantAccounts returns up to page.FetchLimit() accounts in the
// page's query order; only is the set of ids a restricted token may see
// (nil: all).
func (db *DB) ListMerchantAccounts(ctx context.Context, only []string, page pagination.Page) ([]coreapi.MerchantAccount, error) {
	sql := `SELECT ` + merchantColumns + ` FROM merchant_accounts WHERE ($1::text[] IS NULL OR id = ANY($1))`
	args := []any{only}
	where, order, kargs := page.Keyset("created_at", "id", 2)
	if where != "" {
		sql += " AND " + where
		args = append(args, kargs...)
	}
	sql += " ORDER BY " + order + " LIMIT " + strconv.Itoa(page.FetchLimit())
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.MerchantAccount, error) {
		var a coreapi.MerchantAccount
		err := r.Scan(&a.ID, &a.DisplayName, &a.CreatedAt, &a.UpdatedAt)
		return a, err
	})
}
