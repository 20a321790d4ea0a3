package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// PostgreSQL error codes this store maps.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

// merchantAccountFKs are the foreign keys from a record to its merchant
// account.
var merchantAccountFKs = map[string]bool{
	"buyers_merchant_account_id_fkey":           true,
	"payment_methods_merchant_account_id_fkey":  true,
	"mandates_merchant_account_id_fkey":         true,
	"transactions_merchant_account_id_fkey":     true,
	"payment_services_merchant_account_id_fkey": true,
}

// merchantAccountGone reports whether err is a write that named a merchant
// account that does not exist.
func merchantAccountGone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == foreignKeyViolation && merchantAccountFKs[pe.ConstraintName]
}

const buyerColumns = `id::text, merchant_account_id, display_name, external_identifier, account_number, billing_details, created_at, updated_at`

func scanBuyer(row pgx.Row) (*coreapi.Buyer, error) {
	var b coreapi.Buyer
	var bd []byte
	if err := row.Scan(&b.ID, &b.MerchantAccountID, &b.DisplayName, &b.ExternalIdentifier, &b.AccountNumber, &bd, &b.CreatedAt, &b.UpdatedAt); err != nil {
		return nil, err
	}
	if bd != nil {
		b.BillingDetails = new(coreapi.BillingDetails)
		if err := json.Unmarshal(bd, b.BillingDetails); err != nil {
			return nil, fmt.Errorf("buyer %s: billing_details: %w", b.ID, err)
		}
	}
	return &b, nil
}

// billingJSON is the jsonb parameter for billing details: nil for NULL.
func billingJSON(bd *coreapi.BillingDetails) ([]byte, error) {
	if bd == nil {
		return nil, nil
	}
	return json.Marshal(bd)
}

// CreateBuyer inserts a buyer in merchant account m. A taken
// external_identifier is a *coreapi.DuplicateError naming the holder.
//
// One round trip: the row is whole before it is sent (its id and times
// are set here), so its outbound event is rendered first and both
// statements go in one batch, which PostgreSQL runs as one implicit
// transaction (everything before the batch's single Sync): the event is
// written if and only if the buyer is.
func (db *DB) CreateBuyer(ctx context.Context, m string, f coreapi.BuyerFields) (*coreapi.Buyer, error) {
	bd, err := billingJSON(f.BillingDetails.Ptr())
	if err != nil {
		return nil, err
	}
	now := time.Now().Truncate(time.Microsecond) // timestamptz's precision: the row as it reads back
	b := &coreapi.Buyer{ID: uuid.NewString(), MerchantAccountID: m, DisplayName: f.DisplayName.Ptr(),
		ExternalIdentifier: f.ExternalIdentifier.Ptr(), AccountNumber: f.AccountNumber.Ptr(), BillingDetails: f.BillingDetails.Ptr(),
		CreatedAt: now, UpdatedAt: now}
	var batch pgx.Batch
	batch.Queue(`INSERT INTO buyers (id, merchant_account_id, display_name, external_identifier, account_number, billing_details, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
		b.ID, m, b.DisplayName, b.ExternalIdentifier, b.AccountNumber, bd, now)
	e, _ := buyerEvent(coreapi.EventBuyerCreated, b, nil)
	if err := db.queueOutboundEvent(&batch, e); err != nil {
		return nil, err
	}
	if err := db.Pool.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, db.buyerWriteError(ctx, m, f.ExternalIdentifier.Ptr(), err)
	}
	return b, nil
}

// FindBuyer returns buyer id of merchant account m, or an error wrapping
// coreapi.ErrNotFound (also when id belongs to another account).
func (db *DB) FindBuyer(ctx context.Context, m, id string) (*coreapi.Buyer, error) {
	b, err := scanBuyer(db.Pool.QueryRow(ctx, `SELECT `+buyerColumns+` FROM buyers WHERE merchant_account_id = $1 AND id = $2`, m, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("buyer: %w", coreapi.ErrNotFound)
	}
	return b, err
}

// UpdateBuyer applies a partial update in one statement: absent fields keep
// their value, null clears. With no field present it only reads.
func (db *DB) UpdateBuyer(ctx context.Context, m, id string, f coreapi.BuyerFields) (*coreapi.Buyer, error) {
	if f.Empty() {
		return db.FindBuyer(ctx, m, id)
	}
	bd, err := billingJSON(f.BillingDetails.Ptr())
	if err != nil {
		return nil, err
	}
	var b *coreapi.Buyer
	err = db.announced(ctx, func(q querier) (e *coreapi.OutboundEvent, err error) {
		b, err = scanBuyer(q.QueryRow(ctx, `
		UPDATE buyers SET
			display_name        = CASE WHEN $3::boolean THEN $4::text ELSE display_name END,
			external_identifier = CASE WHEN $5::boolean THEN $6::text ELSE external_identifier END,
			account_number      = CASE WHEN $7::boolean THEN $8::text ELSE account_number END,
			billing_details     = CASE WHEN $9::boolean THEN $10::jsonb ELSE billing_details END,
			updated_at          = greatest(now(), updated_at) -- created_at is core-api's clock (CreateBuyer)
		WHERE merchant_account_id = $1 AND id = $2
		RETURNING `+buyerColumns,
			m, id,
			f.DisplayName.Set, f.DisplayName.Ptr(),
			f.ExternalIdentifier.Set, f.ExternalIdentifier.Ptr(),
			f.AccountNumber.Set, f.AccountNumber.Ptr(),
			f.BillingDetails.Set, bd))
		return buyerEvent(coreapi.EventBuyerUpdated, b, err)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("buyer: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, db.buyerWriteError(ctx, m, f.ExternalIdentifier.Ptr(), err)
	}
	return b, nil
}

// DeleteBuyer removes buyer id of merchant account m. A buyer other rows
// still refer to (without ON DELETE rules) is coreapi.ErrInUse.
func (db *DB) DeleteBuyer(ctx context.Context, m, id string) error {
	err := db.announced(ctx, func(q querier) (*coreapi.OutboundEvent, error) {
		b, err := scanBuyer(q.QueryRow(ctx, `DELETE FROM buyers WHERE merchant_account_id = $1 AND id = $2
			RETURNING `+buyerColumns, m, id))
		e, err := buyerEvent(coreapi.EventBuyerDeleted, b, err)
		if e != nil {
			e.CreatedAt = time.Now() // a deletion has no updated_at of its own
		}
		return e, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("buyer: %w", coreapi.ErrNotFound)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == foreignKeyViolation {
		return fmt.Errorf("buyer: %w", coreapi.ErrInUse)
	}
	return err
}

// buyerEvent is the outbound event of a write of buyer b that returned
// err.
func buyerEvent(name string, b *coreapi.Buyer, err error) (*coreapi.OutboundEvent, error) {
	if err != nil {
		return nil, err
	}
	return &coreapi.OutboundEvent{MerchantAccountID: b.MerchantAccountID, Name: name, Target: b, CreatedAt: b.UpdatedAt}, nil
}

// ListBuyers returns up to page.FetchLimit() buyers of merchant account m
// in the page's query order (see pagination.Build), with only the summary
// columns: id, display_name, external_identifier, created_at, updated_at.
// It is one index range scan on buyers_list_idx.
func (db *DB) ListBuyers(ctx context.Context, m string, f coreapi.BuyerFilter, page pagination.Page) ([]coreapi.Buyer, error) {
	sql, args := buyerListQuery(m, f, page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.Buyer, error) {
		b := coreapi.Buyer{MerchantAccountID: m}
		err := r.Scan(&b.ID, &b.DisplayName, &b.ExternalIdentifier, &b.CreatedAt, &b.UpdatedAt)
		return b, err
	})
}

func buyerListQuery(m string, f coreapi.BuyerFilter, page pagination.Page) (string, []any) {
	args := []any{m}
	sql := `SELECT id::text, display_name, external_identifier, created_at, updated_at FROM buyers WHERE merchant_account_id = $1`
	if f.ExternalIdentifier != "" {
		args = append(args, f.ExternalIdentifier)
		sql += ` AND external_identifier = $` + strconv.Itoa(len(args))
	}
	if f.Search != "" {
		args = append(args, "%"+likeEscape(f.Search)+"%")
		n := strconv.Itoa(len(args))
		sql += ` AND (display_name ILIKE $` + n + ` OR external_identifier ILIKE $` + n + `)`
	}
	return keysetPage(sql, args, "buyers", page)
}

// CountBuyers counts merchant account m's buyers.
func (db *DB) CountBuyers(ctx context.Context, m string) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM buyers WHERE merchant_account_id = $1`, m).Scan(&n)
	return n, err
}

// likeEscape escapes LIKE's wildcards (backslash is the default escape).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// buyerWriteError maps a failed insert or update: a taken
// external_identifier becomes a DuplicateError naming the existing buyer; a
// merchant account deleted meanwhile is coreapi.ErrMerchantAccountNotFound.
func (db *DB) buyerWriteError(ctx context.Context, m string, ext *string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case merchantAccountGone(err):
		return coreapi.ErrMerchantAccountNotFound
	case pe.Code == uniqueViolation && pe.ConstraintName == "buyers_external_identifier_key" && ext != nil:
		dup := &coreapi.DuplicateError{Resource: "buyer", Field: "external_identifier"}
		// The holder may have been deleted since; then the conflict is
		// still reported, without a resource id.
		if qerr := db.Pool.QueryRow(ctx, `SELECT id::text FROM buyers WHERE merchant_account_id = $1 AND external_identifier = $2`, m, *ext).Scan(&dup.ExistingID); qerr != nil && !errors.Is(qerr, pgx.ErrNoRows) {
			return qerr
		}
		return dup
	}
	return err
}
