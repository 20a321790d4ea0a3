package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// txColumns is the select list scanTransaction reads: a transaction (t),
// its buyer's external identifier (b) and its payment service's summary
// (ps, deleted or not: the record stays what processed it).
const txColumns = `t.id::text, t.merchant_account_id, t.status, t.amount, t.authorized_amount, t.captured_amount,
	t.refunded_amount, t.capture_pending_amount, t.refund_pending_amount, t.intent, t.currency, t.country,
	t.payment_method_id::text, t.payment_method_method, t.payment_method_scheme, t.payment_method_label,
	t.payment_method_approval_url, t.buyer_id::text, b.external_identifier, t.payment_service_id::text,
	t.payment_service_transaction_id, t.void_reference::text, t.error_code, t.raw_response_code,
	t.raw_response_description, t.avs_response_code, t.cvv_response_code, t.scheme_transaction_id,
	t.payment_source, t.merchant_initiated, t.is_subsequent_payment, t.installment_count, t.cart_items,
	t.external_identifier, t.metadata, t.created_at, t.updated_at, t.authorized_at, t.captured_at, t.voided_at, t.store,
	ps.connector, ps.display_name, t.qr_code, t.approval_expires_at, t.three_d_secure, t.anti_fraud_decision`

const txFrom = ` FROM transactions t` + txJoins

// txJoins adds what txColumns reads besides the row itself to a relation
// named t (the table, or an INSERT's RETURNING *).
const txJoins = `
	LEFT JOIN buyers b ON b.merchant_account_id = t.merchant_account_id AND b.id = t.buyer_id
	LEFT JOIN payment_services ps ON ps.merchant_account_id = t.merchant_account_id AND ps.id = t.payment_service_id`

func scanTransaction(row pgx.Row) (*coreapi.Transaction, error) {
	var (
		t            coreapi.Transaction
		cart, meta   []byte
		pm           = &t.PaymentMethod
		status       string
		installments *int32
		psConnector  *string
		psName       *string
		tds          []byte
	)
	err := row.Scan(&t.ID, &t.MerchantAccountID, &status, &t.Amount, &t.AuthorizedAmount, &t.CapturedAmount,
		&t.RefundedAmount, &t.CapturePendingAmount, &t.RefundPendingAmount, &t.Intent, &t.Currency, &t.Country,
		&pm.ID, &pm.Method, &pm.Scheme, &pm.Label,
		&pm.ApprovalURL, &t.BuyerID, &t.BuyerExternalIdentifier, &t.PaymentServiceID,
		&t.PaymentServiceTransactionID, &t.VoidReference, &t.ErrorCode, &t.RawResponseCode,
		&t.RawResponseDescription, &t.AVSResponseCode, &t.CVVResponseCode, &t.SchemeTransactionID,
		&t.PaymentSource, &t.MerchantInitiated, &t.IsSubsequentPayment, &installments, &cart,
		&t.ExternalIdentifier, &meta, &t.CreatedAt, &t.UpdatedAt, &t.AuthorizedAt, &t.CapturedAt, &t.VoidedAt, &t.Store,
		&psConnector, &psName, &t.QRCode, &t.ApprovalExpiresAt, &tds, &t.AntiFraudDecision)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("transaction: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	t.Status, t.InstallmentCount = coreapi.TransactionStatus(status), installments
	if t.PaymentServiceID != nil && psConnector != nil {
		t.PaymentService = &coreapi.PaymentServiceSummary{ID: *t.PaymentServiceID, Connector: *psConnector, DisplayName: psName}
	}
	if err := unmarshalNullable(cart, &t.CartItems); err != nil {
		return nil, fmt.Errorf("transaction %s: cart_items: %w", t.ID, err)
	}
	if err := unmarshalNullable(meta, &t.Metadata); err != nil {
		return nil, fmt.Errorf("transaction %s: metadata: %w", t.ID, err)
	}
	if err := unmarshalNullable(tds, &t.ThreeDSecure); err != nil {
		return nil, fmt.Errorf("transaction %s: three_d_secure: %w", t.ID, err)
	}
	return &t, nil
}

// threeDSecureJSON is the jsonb parameter of a 3-D Secure summary: NULL
// for none.
func threeDSecureJSON(tds *coreapi.ThreeDSecure) []byte {
	if tds == nil {
		return nil
	}
	b, _ := json.Marshal(tds) // strings and an integer: cannot fail
	return b
}

// unmarshalNullable decodes a jsonb column into v, leaving v alone for
// NULL.
func unmarshalNullable(b []byte, v any) error {
	if b == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}

// marshalNullable is the jsonb parameter for v: NULL when v is empty.
func marshalNullable[T any](v []T) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	return json.Marshal(v)
}

// CreateTransaction stores t, in processing, with its creation event, in
// one statement, and its outbound event (transaction.created) in the same
// database transaction: two round trips, the statement with the BEGIN and
// the outbound event with the COMMIT. Its id and times are set from the
// database. A merchant account deleted meanwhile is
// coreapi.ErrMerchantAccountNotFound.
func (db *DB) CreateTransaction(ctx context.Context, t *coreapi.Transaction) error {
	cart, err := marshalNullable(t.CartItems)
	if err != nil {
		return err
	}
	var meta []byte
	if len(t.Metadata) > 0 {
		if meta, err = json.Marshal(t.Metadata); err != nil {
			return err
		}
	}
	pm := t.PaymentMethod
	err = db.InTx(ctx, func(tx *Tx) error {
		row := tx.tx.QueryRow(ctx, `WITH t AS (
			INSERT INTO transactions (merchant_account_id, status, intent, amount, currency, country,
				payment_method_id, payment_method_method, payment_method_scheme, payment_method_label,
				buyer_id, payment_service_id, payment_source, merchant_initiated, is_subsequent_payment,
				installment_count, cart_items, external_identifier, metadata, store)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $21)
			RETURNING *),
		e AS (INSERT INTO transaction_events (merchant_account_id, transaction_id, name, status_after, amount, created_at)
			SELECT merchant_account_id, id, $20, status, 0, created_at FROM t)
		SELECT `+txColumns+` FROM t`+txJoins,
			t.MerchantAccountID, string(coreapi.TransactionProcessing), t.Intent, t.Amount, t.Currency, t.Country,
			pm.ID, pm.Method, pm.Scheme, pm.Label,
			t.BuyerID, t.PaymentServiceID, t.PaymentSource, t.MerchantInitiated, t.IsSubsequentPayment,
			t.InstallmentCount, cart, t.ExternalIdentifier, meta, coreapi.EventTransactionCreated, t.Store,
		)
		// The row as the API reads it, for the outbound event's target.
		created, err := scanTransaction(row)
		if err != nil {
			return err
		}
		t.ID, t.CreatedAt, t.UpdatedAt = created.ID, created.CreatedAt, created.UpdatedAt
		t.TransactionState = coreapi.TransactionState{Status: coreapi.TransactionProcessing, Amount: t.Amount}
		var b pgx.Batch
		err = tx.db.queueTransactionEvent(&b, &coreapi.TransactionEvent{Name: coreapi.EventTransactionCreated,
			MerchantAccountID: created.MerchantAccountID, CreatedAt: created.CreatedAt}, created, nil)
		if err != nil {
			return err
		}
		tx.tx.later(&b) // with the COMMIT
		return nil
	})
	if merchantAccountGone(err) {
		return coreapi.ErrMerchantAccountNotFound
	}
	return err
}

// Transaction returns transaction id of the merchant account.
func (db *DB) Transaction(ctx context.Context, merchant, id string) (*coreapi.Transaction, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("transaction: %w", coreapi.ErrNotFound)
	}
	return scanTransaction(db.Pool.QueryRow(ctx, `SELECT `+txColumns+txFrom+`
		WHERE t.merchant_account_id = $1 AND t.id = $2`, merchant, id))
}

// LockTransaction reads transaction id of the merchant account and holds
// its row's lock until the transaction ends: every change of its status
// and amounts is made under it. now is the database's clock once the lock
// is held, for the times of the change.
func (tx *Tx) LockTransaction(ctx context.Context, merchant, id string) (t *coreapi.Transaction, now time.Time, err error) {
	if !coreapi.IsUUID(id) {
		return nil, now, fmt.Errorf("transaction: %w", coreapi.ErrNotFound)
	}
	// One round trip; the clock is read by the second statement, which
	// runs once the first holds the lock.
	var b pgx.Batch
	b.Queue(`SELECT `+txColumns+txFrom+`
		WHERE t.merchant_account_id = $1 AND t.id = $2 FOR UPDATE OF t`, merchant, id).
		QueryRow(func(r pgx.Row) error {
			t, err = scanTransaction(r)
			return err
		})
	b.Queue(`SELECT clock_timestamp()`).QueryRow(func(r pgx.Row) error { return r.Scan(&now) })
	if err := tx.tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, now, err
	}
	return t, now, nil
}

// opColumns is the select list scanOperation reads from a capture or
// refund (o), its connector's reference named ref.
const opColumns = `o.id::text, o.merchant_account_id, o.transaction_id::text, o.amount, o.status, o.ref,
	o.error_code, o.raw_response_code, o.raw_response_description, o.created_at, o.updated_at`

func scanOperation(o *coreapi.OperationRecord, extra ...any) []any {
	return append([]any{&o.ID, &o.MerchantAccountID, &o.TransactionID, &o.Amount, &o.Status, &o.PaymentServiceReference,
		&o.ErrorCode, &o.RawResponseCode, &o.RawResponseDescription, &o.CreatedAt, &o.UpdatedAt}, extra...)
}

// captureFrom names captures o, with its reference as ref.
const captureFrom = ` FROM (SELECT *, payment_service_capture_id AS ref FROM captures) o`

// refundColumns and refundFrom read refunds as opColumns reads captures.
const (
	refundColumns = opColumns + `, o.currency, o.reason, o.external_identifier`
	refundFrom    = ` FROM (SELECT *, payment_service_refund_id AS ref FROM refunds) o`
)

func scanRefund(row pgx.Row) (*coreapi.Refund, error) {
	var r coreapi.Refund
	err := row.Scan(scanOperation(&r.OperationRecord, &r.Currency, &r.Reason, &r.ExternalIdentifier)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("refund: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Capture reads capture id of a transaction. Its changes are made under
// the transaction's lock (LockTransaction), which covers it.
func (tx *Tx) Capture(ctx context.Context, merchant, transactionID, id string) (*coreapi.Capture, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("capture: %w", coreapi.ErrNotFound)
	}
	var c coreapi.Capture
	err := tx.tx.QueryRow(ctx, `SELECT `+opColumns+captureFrom+`
		WHERE o.merchant_account_id = $1 AND o.transaction_id = $2 AND o.id = $3`, merchant, transactionID, id).
		Scan(scanOperation(&c.OperationRecord)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("capture: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// Refund reads refund id of a transaction, as Capture reads a capture.
func (tx *Tx) Refund(ctx context.Context, merchant, transactionID, id string) (*coreapi.Refund, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("refund: %w", coreapi.ErrNotFound)
	}
	return scanRefund(tx.tx.QueryRow(ctx, `SELECT `+refundColumns+refundFrom+`
		WHERE o.merchant_account_id = $1 AND o.transaction_id = $2 AND o.id = $3`, merchant, transactionID, id))
}

// Refund returns refund id of the merchant account.
func (db *DB) Refund(ctx context.Context, merchant, id string) (*coreapi.Refund, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("refund: %w", coreapi.ErrNotFound)
	}
	return scanRefund(db.Pool.QueryRow(ctx, `SELECT `+refundColumns+refundFrom+`
		WHERE o.merchant_account_id = $1 AND o.id = $2`, merchant, id))
}

// RecordTransition writes a step of the state machine within the
// transaction that holds the row's lock (LockTransaction): the
// transaction's new state, the capture or refund it made or settled, and
// its event, with its outbound event. Nothing reads what they return
// before the transaction ends, so they go with its next round trip, the
// COMMIT in the transactions service. The database's CHECK on the amounts
// repeats the state machine's invariants.
func (tx *Tx) RecordTransition(ctx context.Context, tr coreapi.Transition) error {
	t := tr.Transaction
	var b pgx.Batch
	queueChecked(&b, fmt.Errorf("transaction: %w", coreapi.ErrNotFound), `WITH u AS (UPDATE transactions SET status = $3,
			authorized_amount = $4, captured_amount = $5, refunded_amount = $6,
			capture_pending_amount = $7, refund_pending_amount = $8, payment_method_approval_url = $9,
			payment_service_transaction_id = $10, void_reference = $11, error_code = $12, raw_response_code = $13,
			raw_response_description = $14, avs_response_code = $15, cvv_response_code = $16, scheme_transaction_id = $17,
			updated_at = $18, authorized_at = $19, captured_at = $20, voided_at = $21, qr_code = $22, approval_expires_at = $23,
			three_d_secure = $24, anti_fraud_decision = $25
		WHERE merchant_account_id = $1 AND id = $2 RETURNING 1)
		SELECT 1 / (count(*) = 1)::int FROM u`,
		t.MerchantAccountID, t.ID, string(t.Status), t.AuthorizedAmount, t.CapturedAmount, t.RefundedAmount,
		t.CapturePendingAmount, t.RefundPendingAmount, t.PaymentMethod.ApprovalURL,
		t.PaymentServiceTransactionID, t.VoidReference, t.ErrorCode, t.RawResponseCode,
		t.RawResponseDescription, t.AVSResponseCode, t.CVVResponseCode, t.SchemeTransactionID,
		t.UpdatedAt, t.AuthorizedAt, t.CapturedAt, t.VoidedAt, t.QRCode, t.ApprovalExpiresAt, threeDSecureJSON(t.ThreeDSecure),
		t.AntiFraudDecision,
	)
	if c := tr.Capture; c != nil {
		queueOperation(&b, "captures", "payment_service_capture_id", &c.OperationRecord, nil, nil)
	}
	if r := tr.Refund; r != nil {
		queueOperation(&b, "refunds", "payment_service_refund_id", &r.OperationRecord,
			[]string{"currency", "reason", "external_identifier"}, []any{r.Currency, r.Reason, r.ExternalIdentifier})
	}
	if err := queueEvent(&b, tr.Event); err != nil {
		return err
	}
	if err := tx.db.queueTransactionEvent(&b, tr.Event, t, tr.Refund); err != nil {
		return err
	}
	tx.tx.later(&b)
	return nil
}

// queueEvent queues the insert of e, with the notification it records.
func queueEvent(b *pgx.Batch, e *coreapi.TransactionEvent) error {
	var conn, nid, body *string
	var headers []byte
	if n := e.Notification; n != nil {
		var err error
		if headers, err = json.Marshal(n.Headers); err != nil {
			return err
		}
		conn, nid, body = &n.Connector, &n.ID, &n.Body
	}
	b.Queue(`INSERT INTO transaction_events (merchant_account_id, transaction_id, name, status_before, status_after,
			amount, capture_id, refund_id, raw_response_code, raw_response_description, created_at,
			notification_connector, notification_id, raw_headers, raw_body)
		VALUES ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id::text`,
		e.MerchantAccountID, e.TransactionID, e.Name, string(e.StatusBefore), string(e.StatusAfter),
		e.Amount, e.CaptureID, e.RefundID, e.RawResponseCode, e.RawResponseDescription, e.CreatedAt,
		conn, nid, headers, body,
	).QueryRow(func(r pgx.Row) error { return r.Scan(&e.ID) })
	return nil
}

// RecordEvent writes e alone, with its outbound event if it announces
// one.
func (tx *Tx) RecordEvent(ctx context.Context, e *coreapi.TransactionEvent) error {
	var b pgx.Batch
	if err := queueEvent(&b, e); err != nil {
		return err
	}
	return tx.announceTransaction(ctx, &b, e)
}

// NotificationRecorded reports whether an event of transaction
// transactionID records notification id of connector.
func (tx *Tx) NotificationRecorded(ctx context.Context, merchant, transactionID, connector, id string) (bool, error) {
	var found bool
	err := tx.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM transaction_events WHERE merchant_account_id = $1
		AND transaction_id = $2 AND notification_connector = $3 AND notification_id = $4)`,
		merchant, transactionID, connector, id).Scan(&found)
	return found, err
}

// queueOperation queues the insert of a new capture or refund (table),
// or the settlement of a stored one: only its status, the connector's
// answer and updated_at change. cols and vals are the table's own columns,
// written by the insert only.
func queueOperation(b *pgx.Batch, table, refCol string, o *coreapi.OperationRecord, cols []string, vals []any) {
	names := append([]string{"id", "merchant_account_id", "transaction_id", "amount", "status", refCol,
		"error_code", "raw_response_code", "raw_response_description", "created_at", "updated_at"}, cols...)
	args := append([]any{o.ID, o.MerchantAccountID, o.TransactionID, o.Amount, string(o.Status), o.PaymentServiceReference,
		o.ErrorCode, o.RawResponseCode, o.RawResponseDescription, o.CreatedAt, o.UpdatedAt}, vals...)
	params := make([]string, len(names))
	for i := range params {
		params[i] = "$" + strconv.Itoa(i+1)
	}
	queueChecked(b, fmt.Errorf("%s %s: %w", table, o.ID, coreapi.ErrNotFound),
		`WITH o AS (INSERT INTO `+table+` (`+strings.Join(names, ", ")+`) VALUES (`+strings.Join(params, ", ")+`)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, `+refCol+` = excluded.`+refCol+`,
			error_code = excluded.error_code, raw_response_code = excluded.raw_response_code,
			raw_response_description = excluded.raw_response_description, updated_at = excluded.updated_at
		WHERE `+table+`.merchant_account_id = excluded.merchant_account_id AND `+table+`.transaction_id = excluded.transaction_id
		RETURNING 1)
		SELECT 1 / (count(*) = 1)::int FROM o`,
		args...)
}

// ListTransactions returns up to page.FetchLimit() transactions of the
// merchant account matching f, in the page's query order (see
// pagination.Build). A filter on an id that is not a UUID matches
// nothing.
func (db *DB) ListTransactions(ctx context.Context, merchant string, f coreapi.TransactionFilter, page pagination.Page) ([]coreapi.Transaction, error) {
	sql, args, ok := transactionListQuery(merchant, f, page)
	if !ok {
		return []coreapi.Transaction{}, nil
	}
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.Transaction, error) {
		t, err := scanTransaction(r)
		if err != nil {
			return coreapi.Transaction{}, err
		}
		return *t, nil
	})
}

func transactionListQuery(m string, f coreapi.TransactionFilter, page pagination.Page) (sql string, args []any, ok bool) {
	args = []any{m}
	sql = `SELECT ` + txColumns + txFrom + ` WHERE t.merchant_account_id = $1`
	where := func(cond string, v any) {
		args = append(args, v)
		sql += " AND " + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args)))
	}
	for _, id := range []struct{ col, v string }{
		{"t.buyer_id", f.BuyerID}, {"t.payment_method_id", f.PaymentMethodID}, {"t.payment_service_id", f.PaymentServiceID},
	} {
		if id.v == "" {
			continue
		}
		if !coreapi.IsUUID(id.v) {
			return "", nil, false
		}
		where(id.col+" = $?::uuid", id.v)
	}
	if len(f.Statuses) > 0 {
		s := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			s[i] = string(st)
		}
		where("t.status = ANY($?::text[])", s)
	}
	if f.ExternalIdentifier != "" {
		where("t.external_identifier = $?", f.ExternalIdentifier)
	}
	if f.CreatedAtGTE != nil {
		where("t.created_at >= $?", *f.CreatedAtGTE)
	}
	if f.CreatedAtLTE != nil {
		where("t.created_at <= $?", *f.CreatedAtLTE)
	}
	if f.AmountGTE != nil {
		where("t.amount >= $?", *f.AmountGTE)
	}
	if f.AmountLTE != nil {
		where("t.amount <= $?", *f.AmountLTE)
	}
	sql, args = keysetPage(sql, args, "t", page)
	return sql, args, true
}

// keysetPage completes a list query (sql, with its arguments args) over
// the rows of alias, newest first by (created_at, id), for page: the
// keyset predicate, the order and the limit.
func keysetPage(sql string, args []any, alias string, page pagination.Page) (string, []any) {
	// Qualified: a bare "id" in ORDER BY would name the id::text output
	// column, and the sort would not follow the index.
	where, order, kargs := page.Keyset(alias+".created_at", alias+".id", len(args)+1)
	if where != "" {
		sql += " AND " + where
		args = append(args, kargs...)
	}
	return sql + " ORDER BY " + order + " LIMIT " + strconv.Itoa(page.FetchLimit()), args
}

// transactionEventColumns and scanTransactionEvent read a transaction
// event: the list and the single read share them, so both answer the
// same record.
const transactionEventColumns = `e.id::text, e.merchant_account_id, e.transaction_id::text, e.name, coalesce(e.status_before, ''),
		e.status_after, e.amount, e.capture_id::text, e.refund_id::text, e.raw_response_code, e.raw_response_description, e.created_at,
		e.notification_connector, e.notification_id, e.raw_headers, e.raw_body
		FROM transaction_events e WHERE e.merchant_account_id = $1 AND e.transaction_id = $2`

func scanTransactionEvent(r pgx.Row) (coreapi.TransactionEvent, error) {
	var e coreapi.TransactionEvent
	var before, after string
	var conn, nid, body *string
	var headers []byte
	err := r.Scan(&e.ID, &e.MerchantAccountID, &e.TransactionID, &e.Name, &before,
		&after, &e.Amount, &e.CaptureID, &e.RefundID, &e.RawResponseCode, &e.RawResponseDescription, &e.CreatedAt,
		&conn, &nid, &headers, &body)
	e.StatusBefore, e.StatusAfter = coreapi.TransactionStatus(before), coreapi.TransactionStatus(after)
	if err == nil && nid != nil {
		e.Notification = &coreapi.Notification{ID: *nid, Connector: deref(conn), Body: deref(body)}
		err = unmarshalNullable(headers, &e.Notification.Headers)
	}
	return e, err
}

// ListTransactionEvents returns up to page.FetchLimit() events of
// transaction transactionID of the merchant account, in the page's query
// order.
func (db *DB) ListTransactionEvents(ctx context.Context, merchant, transactionID string, page pagination.Page) ([]coreapi.TransactionEvent, error) {
	if !coreapi.IsUUID(transactionID) {
		return []coreapi.TransactionEvent{}, nil
	}
	sql, args := keysetPage(`SELECT `+transactionEventColumns, []any{merchant, transactionID}, "e", page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.TransactionEvent, error) { return scanTransactionEvent(r) })
}

// TransactionEvent returns event id of transaction transactionID of the
// merchant account; any other is coreapi.ErrNotFound.
func (db *DB) TransactionEvent(ctx context.Context, merchant, transactionID, id string) (*coreapi.TransactionEvent, error) {
	if !coreapi.IsUUID(transactionID) || !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("transaction event: %w", coreapi.ErrNotFound)
	}
	e, err := scanTransactionEvent(db.Pool.QueryRow(ctx, `SELECT `+transactionEventColumns+` AND e.id = $3`, merchant, transactionID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("transaction event: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// ListRefunds returns up to page.FetchLimit() refunds of transaction
// transactionID of the merchant account, in the page's query order.
func (db *DB) ListRefunds(ctx context.Context, merchant, transactionID string, page pagination.Page) ([]coreapi.Refund, error) {
	if !coreapi.IsUUID(transactionID) {
		return []coreapi.Refund{}, nil
	}
	sql, args := keysetPage(`SELECT `+refundColumns+refundFrom+` WHERE o.merchant_account_id = $1 AND o.transaction_id = $2`,
		[]any{merchant, transactionID}, "o", page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.Refund, error) {
		rf, err := scanRefund(r)
		if err != nil {
			return coreapi.Refund{}, err
		}
		return *rf, nil
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
