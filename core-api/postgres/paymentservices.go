package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/shared/pagination"
)

// PaymentServicesStore is the core database as the payment services
// service's store.
type PaymentServicesStore struct{ *DB }

var _ paymentservices.Store = PaymentServicesStore{}

// InTx is DB.InTx, its transaction a paymentservices.Tx.
func (s PaymentServicesStore) InTx(ctx context.Context, fn func(paymentservices.Tx) error) error {
	return s.DB.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}

// psColumns is what scanPaymentService reads; never the ciphertext.
const psColumns = `ps.id::text, ps.merchant_account_id, ps.connector, ps.method, ps.display_name, ps.active, ps.is_default,
	ps.settings, ps.credential_fields, ps.created_at, ps.updated_at`

func scanPaymentService(row pgx.Row, extra ...any) (*coreapi.PaymentService, error) {
	var ps coreapi.PaymentService
	var settings []byte
	err := row.Scan(append([]any{&ps.ID, &ps.MerchantAccountID, &ps.Connector, &ps.Method, &ps.DisplayName, &ps.Active, &ps.Default,
		&settings, &ps.CredentialsSet, &ps.CreatedAt, &ps.UpdatedAt}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("payment service: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	ps.Settings = settings
	return &ps, nil
}

// PaymentService reads payment service id of merchant account m unless
// it is deleted.
func (db *DB) PaymentService(ctx context.Context, m, id string) (*coreapi.PaymentService, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("payment service: %w", coreapi.ErrNotFound)
	}
	return scanPaymentService(db.Pool.QueryRow(ctx, `SELECT `+psColumns+` FROM payment_services ps
		WHERE ps.merchant_account_id = $1 AND ps.id = $2 AND ps.deleted_at IS NULL`, m, id))
}

// PaymentServiceCredentials reads payment service id with its
// credentials' ciphertext; a deleted one only withDeleted.
func (db *DB) PaymentServiceCredentials(ctx context.Context, m, id string, withDeleted bool) (*coreapi.PaymentService, string, error) {
	if !coreapi.IsUUID(id) {
		return nil, "", fmt.Errorf("payment service: %w", coreapi.ErrNotFound)
	}
	var ct string
	ps, err := scanPaymentService(db.Pool.QueryRow(ctx, `SELECT `+psColumns+`, ps.credentials_ciphertext FROM payment_services ps
		WHERE ps.merchant_account_id = $1 AND ps.id = $2 AND ($3 OR ps.deleted_at IS NULL)`, m, id, withDeleted), &ct)
	return ps, ct, err
}

// DefaultPaymentService reads merchant account m's default for method
// with its credentials' ciphertext.
func (db *DB) DefaultPaymentService(ctx context.Context, m, method string) (*coreapi.PaymentService, string, error) {
	var ct string
	ps, err := scanPaymentService(db.Pool.QueryRow(ctx, `SELECT `+psColumns+`, ps.credentials_ciphertext FROM payment_services ps
		WHERE ps.merchant_account_id = $1 AND ps.method = $2 AND ps.is_default`, m, method), &ct)
	return ps, ct, err
}

// ListPaymentServices returns up to page.FetchLimit() payment services of
// merchant account m that are not deleted, in the page's query order.
func (db *DB) ListPaymentServices(ctx context.Context, m string, page pagination.Page) ([]coreapi.PaymentService, error) {
	sql, args := keysetPage(`SELECT `+psColumns+` FROM payment_services ps
		WHERE ps.merchant_account_id = $1 AND ps.deleted_at IS NULL`, []any{m}, "ps", page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.PaymentService, error) {
		ps, err := scanPaymentService(r)
		if err != nil {
			return coreapi.PaymentService{}, err
		}
		return *ps, nil
	})
}

// LockPaymentService reads payment service id unless it is deleted, and
// holds its row's lock until the transaction ends.
func (tx *Tx) LockPaymentService(ctx context.Context, m, id string) (*coreapi.PaymentService, error) {
	return tx.lockPaymentService(ctx, m, id, "")
}

// LockPaymentServiceCredentials is LockPaymentService with the
// credentials' ciphertext.
func (tx *Tx) LockPaymentServiceCredentials(ctx context.Context, m, id string) (*coreapi.PaymentService, string, error) {
	var ct string
	ps, err := tx.lockPaymentService(ctx, m, id, ", ps.credentials_ciphertext", &ct)
	return ps, ct, err
}

func (tx *Tx) lockPaymentService(ctx context.Context, m, id, extraColumns string, extra ...any) (*coreapi.PaymentService, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("payment service: %w", coreapi.ErrNotFound)
	}
	return scanPaymentService(tx.tx.QueryRow(ctx, `SELECT `+psColumns+extraColumns+` FROM payment_services ps
		WHERE ps.merchant_account_id = $1 AND ps.id = $2 AND ps.deleted_at IS NULL FOR UPDATE`, m, id), extra...)
}

// ClearDefault unsets merchant account m's default for method unless it
// is except. A transaction-scoped advisory lock on (account, method)
// orders concurrent moves of the default: the second waits for the first
// to commit and then clears its choice, where without it both would clear
// nothing and one would fail on the unique index.
func (tx *Tx) ClearDefault(ctx context.Context, m, method, except string) error {
	if _, err := tx.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('payment_services.default:' || $1 || ':' || $2, 0))`, m, method); err != nil {
		return err
	}
	_, err := tx.tx.Exec(ctx, `UPDATE payment_services SET is_default = false, updated_at = now()
		WHERE merchant_account_id = $1 AND method = $2 AND is_default AND id <> $3`, m, method, except)
	return err
}

// InsertPaymentService stores ps with its credentials' ciphertext.
func (tx *Tx) InsertPaymentService(ctx context.Context, ps *coreapi.PaymentService, ciphertext string) error {
	err := tx.tx.QueryRow(ctx, `INSERT INTO payment_services (id, merchant_account_id, connector, method, display_name,
			active, is_default, settings, credentials_ciphertext, credential_fields)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING created_at, updated_at`,
		ps.ID, ps.MerchantAccountID, ps.Connector, ps.Method, ps.DisplayName, ps.Active, ps.Default,
		[]byte(ps.Settings), ciphertext, ps.CredentialsSet).Scan(&ps.CreatedAt, &ps.UpdatedAt)
	return paymentServiceWriteError(err)
}

// UpdatePaymentService writes ps's mutable fields, and the ciphertext
// unless it is "".
func (tx *Tx) UpdatePaymentService(ctx context.Context, ps *coreapi.PaymentService, ciphertext string) error {
	err := tx.tx.QueryRow(ctx, `UPDATE payment_services SET display_name = $3, active = $4, is_default = $5, settings = $6,
			credentials_ciphertext = CASE WHEN $7 = '' THEN credentials_ciphertext ELSE $7 END,
			credential_fields = CASE WHEN $7 = '' THEN credential_fields ELSE $8 END,
			updated_at = now()
		WHERE merchant_account_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING updated_at`,
		ps.MerchantAccountID, ps.ID, ps.DisplayName, ps.Active, ps.Default, []byte(ps.Settings), ciphertext, ps.CredentialsSet).Scan(&ps.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("payment service: %w", coreapi.ErrNotFound)
	}
	return paymentServiceWriteError(err)
}

// DeletePaymentService marks payment service id deleted.
func (tx *Tx) DeletePaymentService(ctx context.Context, m, id string) error {
	tag, err := tx.tx.Exec(ctx, `UPDATE payment_services SET deleted_at = now(), updated_at = now(), is_default = false
		WHERE merchant_account_id = $1 AND id = $2 AND deleted_at IS NULL`, m, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("payment service: %w", coreapi.ErrNotFound)
	}
	return nil
}

// paymentServiceWriteError maps a failed write: an account deleted
// meanwhile, or a default taken by a concurrent request (which
// ClearDefault's lock leaves to writers that skipped it).
func paymentServiceWriteError(err error) error {
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case merchantAccountGone(err):
		return coreapi.ErrMerchantAccountNotFound
	case errors.As(err, &pe) && pe.Code == uniqueViolation && pe.ConstraintName == "payment_services_one_default":
		return fmt.Errorf("payment service default: %w", coreapi.ErrConflict)
	}
	return err
}
