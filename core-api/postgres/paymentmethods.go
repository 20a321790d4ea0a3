package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// pmColumns is the select list scanned by scanPaymentMethod: the payment
// method, its buyer's external identifier and its newest mandate.
const pmColumns = `pm.id::text, pm.merchant_account_id, pm.method, pm.status, pm.scheme, pm.label,
	coalesce(pm.bin, ''), coalesce(pm.card_type, ''), coalesce(pm.expiration_date, ''), coalesce(pm.fingerprint, ''),
	coalesce(pm.country, ''), coalesce(pm.currency, ''), pm.bank_details,
	coalesce(pm.buyer_id::text, ''), coalesce(b.external_identifier, ''), pm.external_identifier,
	pm.scheme_transaction_id, pm.scheme_transaction_id_scheme,
	pm.last_used_at, pm.usage_count, pm.cit_last_used_at, pm.cit_usage_count, pm.created_at, pm.updated_at, pm.stored,
	m.id, m.connector, m.payment_service_id::text, m.status, m.created_at, m.updated_at, m.revoked_at, m.recurring_token_at`

const pmFrom = ` FROM payment_methods pm` + pmJoins

// pmJoins adds what pmColumns reads besides the row itself to a relation
// named pm (the table, or an UPDATE's RETURNING *).
const pmJoins = `
	LEFT JOIN buyers b ON b.id = pm.buyer_id
	LEFT JOIN LATERAL (SELECT * FROM mandates m WHERE m.merchant_account_id = pm.merchant_account_id
		AND m.payment_method_id = pm.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1) m ON true`

func scanPaymentMethod(row pgx.Row) (*coreapi.PaymentMethod, error) {
	var (
		pm                  coreapi.PaymentMethod
		bank                []byte
		mID, mConn, mStatus *string
		mPaymentService     *string
		mCreated, mUpdated  *time.Time
		mRevoked, mToken    *time.Time
		stored              bool
	)
	err := row.Scan(&pm.ID, &pm.MerchantAccountID, &pm.Method, &pm.Status, &pm.Scheme, &pm.Label,
		&pm.BIN, &pm.CardType, &pm.ExpirationDate, &pm.Fingerprint,
		&pm.Country, &pm.Currency, &bank,
		&pm.BuyerID, &pm.BuyerExternalIdentifier, &pm.ExternalIdentifier,
		&pm.SchemeTransactionID, &pm.SchemeTransactionIDScheme,
		&pm.Usage.LastUsedAt, &pm.Usage.UsageCount, &pm.Usage.CITLastUsedAt, &pm.Usage.CITUsageCount, &pm.CreatedAt, &pm.UpdatedAt, &stored,
		&mID, &mConn, &mPaymentService, &mStatus, &mCreated, &mUpdated, &mRevoked, &mToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, coreapi.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	pm.SinglePayment = !stored
	if bank != nil {
		pm.Bank = &coreapi.BankDetails{}
		if err := json.Unmarshal(bank, pm.Bank); err != nil {
			return nil, fmt.Errorf("payment method %s: bank_details: %w", pm.ID, err)
		}
	}
	if mID != nil {
		pm.Mandate = &coreapi.Mandate{ID: *mID, MerchantAccountID: pm.MerchantAccountID, PaymentMethodID: pm.ID,
			Connector: *mConn, PaymentServiceID: mPaymentService, Scheme: pm.Scheme, Status: *mStatus, CreatedAt: *mCreated, UpdatedAt: *mUpdated, RevokedAt: mRevoked,
			RecurringTokenAt: mToken}
	}
	return &pm, nil
}

func collectPaymentMethods(rows pgx.Rows, err error) ([]coreapi.PaymentMethod, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []coreapi.PaymentMethod{}
	for rows.Next() {
		pm, err := scanPaymentMethod(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *pm)
	}
	return out, rows.Err()
}

// CreatePaymentMethod stores pm and, when not nil, its mandate, in one
// transaction. A second payment method with the same id is a
// *coreapi.DuplicateError; a buyer deleted meanwhile is
// coreapi.ErrBuyerNotFound, a merchant account deleted meanwhile
// ErrMerchantAccountNotFound, a token the vault reconciliation gave up
// coreapi.ErrTokenGivenUp.
// pm's timestamps are set from the database.
func (db *DB) CreatePaymentMethod(ctx context.Context, pm *coreapi.PaymentMethod, mandate *coreapi.Mandate) error {
	var bank []byte
	if pm.Bank != nil {
		var err error
		if bank, err = json.Marshal(pm.Bank); err != nil {
			return err
		}
	}
	return db.InTx(ctx, func(t *Tx) error {
		// The token's lock first, then the insert in a statement of its
		// own, whose snapshot postdates the wait: it sees whether the vault
		// reconciliation gave the token up meanwhile (GiveUpToken). One
		// round trip: the batch's statements run in order.
		var b pgx.Batch
		b.Queue(lockTokenSQL, tokenLockClass, pm.ID)
		b.Queue(`INSERT INTO payment_methods (id, merchant_account_id, method, status, scheme, label,
			bin, card_type, expiration_date, fingerprint, country, currency, bank_details, buyer_id, external_identifier, stored)
			SELECT $1, $2, $3, $4, $5, $6, nullif($7, ''), nullif($8, ''), nullif($9, ''), nullif($10, ''),
				nullif($11, ''), nullif($12, ''), $13, nullif($14, '')::uuid, $15, $16
			WHERE NOT EXISTS (SELECT FROM given_up_tokens WHERE id = $1)
			RETURNING created_at, updated_at`,
			pm.ID, pm.MerchantAccountID, pm.Method, pm.Status, pm.Scheme, pm.Label,
			pm.BIN, pm.CardType, pm.ExpirationDate, pm.Fingerprint, pm.Country, pm.Currency, bank, pm.BuyerID, pm.ExternalIdentifier, !pm.SinglePayment,
		).QueryRow(func(r pgx.Row) error {
			err := r.Scan(&pm.CreatedAt, &pm.UpdatedAt)
			if errors.Is(err, pgx.ErrNoRows) {
				return coreapi.ErrTokenGivenUp
			}
			return err
		})
		if mandate != nil {
			b.Queue(`INSERT INTO mandates (id, merchant_account_id, payment_method_id, connector, payment_service_id, scheme, status)
				VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at, updated_at`,
				mandate.ID, pm.MerchantAccountID, pm.ID, mandate.Connector, mandate.PaymentServiceID, pm.Scheme, mandate.Status,
			).QueryRow(func(r pgx.Row) error { return r.Scan(&mandate.CreatedAt, &mandate.UpdatedAt) })
			queueMandateCreated(&b, pm, mandate)
		}
		return paymentMethodWriteError(pm.ID, t.announcePaymentMethod(ctx, &b, coreapi.EventPaymentMethodCreated, pm.MerchantAccountID, pm.ID))
	})
}

// paymentMethodWriteError maps a failed insert of a payment method or its
// mandate. The buyer and the merchant account were looked up before, but
// may have been deleted since.
func paymentMethodWriteError(id string, err error) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
		return err
	case merchantAccountGone(err):
		return coreapi.ErrMerchantAccountNotFound
	case pe.Code == uniqueViolation && pe.ConstraintName == "payment_methods_pkey":
		return &coreapi.DuplicateError{Resource: "payment method", Field: "id", ExistingID: id}
	case pe.Code == foreignKeyViolation && pe.ConstraintName == "payment_methods_buyer_id_fkey":
		return coreapi.ErrBuyerNotFound
	}
	return err
}

// PaymentMethod returns one payment method of the merchant account.
func (db *DB) PaymentMethod(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error) {
	if !coreapi.IsUUID(id) {
		return nil, coreapi.ErrNotFound
	}
	return scanPaymentMethod(db.Pool.QueryRow(ctx, `SELECT `+pmColumns+pmFrom+`
		WHERE pm.merchant_account_id = $1 AND pm.id = $2`, merchant, id))
}

// ListPaymentMethods returns one page of the merchant account's payment
// methods, newest first (see package pagination), optionally of one buyer.
func (db *DB) ListPaymentMethods(ctx context.Context, merchant string, f coreapi.PaymentMethodFilter, page pagination.Page) ([]coreapi.PaymentMethod, error) {
	args := []any{merchant}
	q := `SELECT ` + pmColumns + pmFrom + ` WHERE pm.merchant_account_id = $1 AND pm.stored`
	if f.BuyerID != "" {
		args = append(args, f.BuyerID)
		q += ` AND pm.buyer_id = $` + strconv.Itoa(len(args))
	}
	if f.Method != "" {
		args = append(args, f.Method)
		q += ` AND pm.method = $` + strconv.Itoa(len(args))
	}
	q, args = keysetPage(q, args, "pm", page)
	return collectPaymentMethods(db.Pool.Query(ctx, q, args...))
}

// MaxBuyerPaymentMethods caps the unpaginated per-buyer lists
// (GET /buyers/payment-methods, GET /buyers/gift-cards).
const MaxBuyerPaymentMethods = 100

// BuyerPaymentMethods returns a buyer's payment methods of the given method
// ("" for all), most recently used first (never used last, by newest), at
// most MaxBuyerPaymentMethods.
func (db *DB) BuyerPaymentMethods(ctx context.Context, merchant, buyerID, method string) ([]coreapi.PaymentMethod, error) {
	return collectPaymentMethods(db.Pool.Query(ctx, `SELECT `+pmColumns+pmFrom+`
		WHERE pm.merchant_account_id = $1 AND pm.buyer_id = $2 AND ($3 = '' OR pm.method = $3) AND pm.stored
		ORDER BY pm.last_used_at DESC NULLS LAST, pm.created_at DESC, pm.id
		LIMIT `+strconv.Itoa(MaxBuyerPaymentMethods), merchant, buyerID, method))
}

// giftCardOrder is the ORDER BY of each sort_by: most recent or most
// frequent first, never-used last, ties by id.
var giftCardOrder = map[string]string{
	coreapi.SortLastUsedAt:    "pm.last_used_at DESC NULLS LAST, pm.id",
	coreapi.SortUsageCount:    "pm.usage_count DESC, pm.id",
	coreapi.SortCITLastUsedAt: "pm.cit_last_used_at DESC NULLS LAST, pm.id",
	coreapi.SortCITUsageCount: "pm.cit_usage_count DESC, pm.id",
}

// GiftCards returns a buyer's gift cards sorted by sortBy (one of
// coreapi.GiftCardSorts), at most MaxBuyerPaymentMethods.
func (db *DB) GiftCards(ctx context.Context, merchant, buyerID, sortBy string) ([]coreapi.PaymentMethod, error) {
	order, ok := giftCardOrder[sortBy]
	if !ok {
		return nil, fmt.Errorf("postgres: unknown gift card order %q", sortBy)
	}
	return collectPaymentMethods(db.Pool.Query(ctx, `SELECT `+pmColumns+pmFrom+`
		WHERE pm.merchant_account_id = $1 AND pm.buyer_id = $2 AND pm.method = 'gift-card' AND pm.stored
		ORDER BY `+order+` LIMIT `+strconv.Itoa(MaxBuyerPaymentMethods), merchant, buyerID))
}

// UpdatePaymentMethod applies u to the row in one statement and returns
// the row as that statement left it. A card's expiry must reach
// vault-proxy first, inside a transaction that holds the row
// (paymentmethods.Service.Update): this writes only the row.
func (db *DB) UpdatePaymentMethod(ctx context.Context, merchant, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error) {
	if !coreapi.IsUUID(id) {
		return nil, coreapi.ErrNotFound
	}
	var pm *coreapi.PaymentMethod
	err := db.announced(ctx, func(q querier) (e *coreapi.OutboundEvent, err error) {
		pm, err = updatePaymentMethodRow(ctx, q, merchant, id, u)
		return paymentMethodEvent(coreapi.EventPaymentMethodUpdated, pm, err)
	})
	return pm, err
}

// paymentMethodEvent is the outbound event of a write of payment method
// pm that returned err.
func paymentMethodEvent(name string, pm *coreapi.PaymentMethod, err error) (*coreapi.OutboundEvent, error) {
	if err != nil {
		return nil, err
	}
	return &coreapi.OutboundEvent{MerchantAccountID: pm.MerchantAccountID, Name: name, Target: pm, CreatedAt: pm.UpdatedAt}, nil
}

// announcePaymentMethod sends b, a change of payment method id, with a
// read of the payment method as b leaves it, in one round trip, and
// writes outbound event name of it with the transaction's next one. A
// payment method not there is coreapi.ErrNotFound, after b's statements.
func (tx *Tx) announcePaymentMethod(ctx context.Context, b *pgx.Batch, name, merchant, id string) error {
	var pm *coreapi.PaymentMethod
	b.Queue(`SELECT `+pmColumns+pmFrom+`
		WHERE pm.merchant_account_id = $1 AND pm.id = $2`, merchant, id).QueryRow(func(r pgx.Row) (err error) {
		pm, err = scanPaymentMethod(r)
		return err
	})
	if err := tx.tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	e, _ := paymentMethodEvent(name, pm, nil)
	return tx.announce(e)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var _ querier = (*txConn)(nil)

// updatePaymentMethodRow applies u to the row in one statement and returns
// the row as that statement left it.
func updatePaymentMethodRow(ctx context.Context, q querier, merchant, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error) {
	return scanPaymentMethod(q.QueryRow(ctx, `WITH pm AS (UPDATE payment_methods SET
			expiration_date = coalesce($3, expiration_date),
			scheme_transaction_id = CASE WHEN $4 THEN $5 ELSE scheme_transaction_id END,
			scheme_transaction_id_scheme = CASE WHEN $6 THEN $7 ELSE scheme_transaction_id_scheme END,
			updated_at = greatest(now(), updated_at + interval '1 microsecond')
			WHERE merchant_account_id = $1 AND id = $2 RETURNING *)
		SELECT `+pmColumns+` FROM pm`+pmJoins,
		merchant, id, u.ExpirationDate.Ptr(), u.SchemeTransactionID.Set, u.SchemeTransactionID.Ptr(),
		u.SchemeTransactionIDScheme.Set, u.SchemeTransactionIDScheme.Ptr()))
}

// LockPaymentMethod reads a payment method of the merchant account and
// holds its row's lock until the transaction ends.
func (tx *Tx) LockPaymentMethod(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error) {
	if !coreapi.IsUUID(id) {
		return nil, coreapi.ErrNotFound
	}
	return scanPaymentMethod(tx.tx.QueryRow(ctx, `SELECT `+pmColumns+pmFrom+`
		WHERE pm.merchant_account_id = $1 AND pm.id = $2 FOR UPDATE OF pm`, merchant, id))
}

// UpdatePaymentMethod applies u to the row in one statement, within the
// transaction, and returns the row as that statement left it.
func (tx *Tx) UpdatePaymentMethod(ctx context.Context, merchant, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error) {
	if !coreapi.IsUUID(id) {
		return nil, coreapi.ErrNotFound
	}
	pm, err := updatePaymentMethodRow(ctx, tx.tx, merchant, id, u)
	e, err := paymentMethodEvent(coreapi.EventPaymentMethodUpdated, pm, err)
	if err != nil {
		return nil, err
	}
	return pm, tx.announce(e)
}

// DeletePaymentMethod deletes the core record. Its mandates stay, as the
// record of their revocation.
func (db *DB) DeletePaymentMethod(ctx context.Context, merchant, id string) error {
	if !coreapi.IsUUID(id) {
		return coreapi.ErrNotFound
	}
	return db.InTx(ctx, func(tx *Tx) error {
		// Read as it stood, for the event's target, then delete.
		pm, err := tx.LockPaymentMethod(ctx, merchant, id)
		if err != nil {
			return err
		}
		tag, err := tx.tx.Exec(ctx, `DELETE FROM payment_methods WHERE merchant_account_id = $1 AND id = $2`, merchant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return coreapi.ErrNotFound
		}
		e, _ := paymentMethodEvent(coreapi.EventPaymentMethodDeleted, pm, nil)
		e.CreatedAt = time.Now() // a deletion has no updated_at of its own
		return tx.announce(e)
	})
}

// Mandate returns one mandate of the merchant account.
func (db *DB) Mandate(ctx context.Context, merchant, id string) (*coreapi.Mandate, error) {
	m := coreapi.Mandate{ID: id, MerchantAccountID: merchant}
	err := db.Pool.QueryRow(ctx, `SELECT `+mandateColumns+` FROM mandates WHERE merchant_account_id = $1 AND id = $2`, merchant, id).
		Scan(mandateFields(&m)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, coreapi.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// RecordUsage counts one use of a payment method at `at`: usage_count and
// last_used_at always, cit_usage_count and cit_last_used_at as well when
// the use was customer-initiated. last_used_at never moves backwards, so
// uses recorded out of order keep the latest time.
func (db *DB) RecordUsage(ctx context.Context, merchant, id string, cit bool, at time.Time) error {
	if !coreapi.IsUUID(id) {
		return coreapi.ErrNotFound
	}
	tag, err := db.Pool.Exec(ctx, `UPDATE payment_methods SET
		usage_count = usage_count + 1,
		last_used_at = greatest(last_used_at, $4),
		cit_usage_count = cit_usage_count + CASE WHEN $3 THEN 1 ELSE 0 END,
		cit_last_used_at = CASE WHEN $3 THEN greatest(cit_last_used_at, $4) ELSE cit_last_used_at END
		WHERE merchant_account_id = $1 AND id = $2`, merchant, id, cit, at)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return coreapi.ErrNotFound
	}
	return nil
}

// RecordPaymentMethodUse records an approved authorization's use u on
// payment method id (coreapi.PaymentMethodUse), in the database
// transaction that settles it. A payment method deleted since is no
// error: the transaction keeps its own copy of what it paid with.
func (tx *Tx) RecordPaymentMethodUse(ctx context.Context, merchant, id string, u coreapi.PaymentMethodUse) error {
	sti := u.Store && u.CustomerInitiated && u.SchemeTransactionID != ""
	// Nothing reads its result: it goes with the transaction's next
	// round trip (the transition's, in the transactions service).
	var b pgx.Batch
	b.Queue(`UPDATE payment_methods SET
		usage_count = usage_count + 1,
		last_used_at = greatest(last_used_at, $4),
		cit_usage_count = cit_usage_count + CASE WHEN $3 THEN 1 ELSE 0 END,
		cit_last_used_at = CASE WHEN $3 THEN greatest(cit_last_used_at, $4) ELSE cit_last_used_at END,
		stored = stored OR $5,
		scheme_transaction_id = CASE WHEN $6 THEN $7 ELSE scheme_transaction_id END,
		scheme_transaction_id_scheme = CASE WHEN $6 THEN scheme ELSE scheme_transaction_id_scheme END,
		updated_at = CASE WHEN $5 AND NOT stored OR $6 THEN $4 ELSE updated_at END
		WHERE merchant_account_id = $1 AND id = $2`, merchant, id, u.CustomerInitiated, u.At, u.Store, sti, u.SchemeTransactionID)
	tx.tx.later(&b)
	return nil
}

// PaymentMethodPaidWith reports whether a transaction of the merchant
// account was created with payment method id.
func (db *DB) PaymentMethodPaidWith(ctx context.Context, merchant, id string) (bool, error) {
	var used bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM transactions
		WHERE merchant_account_id = $1 AND payment_method_id = $2)`, merchant, id).Scan(&used)
	return used, err
}

// ResolveBuyer resolves the buyer a payment method is stored for, by
// id, by external identifier, or both (which must then name the same
// buyer), within the merchant account. It returns the buyer's id and
// external identifier, or ErrNotFound.
func (db *DB) ResolveBuyer(ctx context.Context, merchant, id, externalIdentifier string) (string, string, error) {
	if id != "" && !coreapi.IsUUID(id) {
		return "", "", coreapi.ErrNotFound
	}
	var bid, ext string
	err := db.Pool.QueryRow(ctx, `SELECT id::text, coalesce(external_identifier, '') FROM buyers
		WHERE merchant_account_id = $1 AND ($2 = '' OR id = nullif($2, '')::uuid) AND ($3 = '' OR external_identifier = $3)
		ORDER BY created_at LIMIT 1`, merchant, id, externalIdentifier).Scan(&bid, &ext)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", coreapi.ErrNotFound
	}
	return bid, ext, err
}
