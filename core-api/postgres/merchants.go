package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/pagination"
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
func (db *DB) CreateMerchantAccount(ctx context.Context, n coreapi.NewMerchantAccount) (*coreapi.MerchantAccount, error) {
	a, err := scanMerchant(db.Pool.QueryRow(ctx,
		`INSERT INTO merchant_accounts (id, display_name) VALUES ($1, $2) RETURNING `+merchantColumns, *n.ID, *n.DisplayName))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == uniqueViolation {
		return nil, &coreapi.DuplicateError{Resource: "merchant account", Field: "id", ExistingID: *n.ID}
	}
	return a, err
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

// DeleteMerchantAccount removes an account that nothing refers to any
// more; an account with buyers (or any other row referring to it) is
// coreapi.ErrInUse.
func (db *DB) DeleteMerchantAccount(ctx context.Context, id string) error {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM merchant_accounts WHERE id = $1`, id)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == foreignKeyViolation {
		return fmt.Errorf("merchant account: %w", coreapi.ErrInUse)
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("merchant account: %w", coreapi.ErrNotFound)
	}
	return nil
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
