package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// mandateColumns is the select list mandateFields scans.
const mandateColumns = `payment_method_id::text, connector, payment_service_id::text, scheme, status, created_at, updated_at, revoked_at, recurring_token_at`

func mandateFields(m *coreapi.Mandate) []any {
	return []any{&m.PaymentMethodID, &m.Connector, &m.PaymentServiceID, &m.Scheme, &m.Status, &m.CreatedAt, &m.UpdatedAt, &m.RevokedAt, &m.RecurringTokenAt}
}

// queueMandateCreated queues the first event of a new mandate, written
// with it.
func queueMandateCreated(b *pgx.Batch, pm *coreapi.PaymentMethod, m *coreapi.Mandate) {
	b.Queue(`INSERT INTO mandate_events (merchant_account_id, mandate_id, payment_method_id, name, status_after, created_at)
		VALUES ($1, $2, $3, $4, $5, now())`, pm.MerchantAccountID, m.ID, pm.ID, coreapi.MandateEventCreated, m.Status)
}

// AddMandate records mandate m, just set up for payment method pm, with
// its created event, in one database transaction: a bank debit sets up
// the mandate of an account stored without one. The same mandate
// recorded already (two debits racing to set it up get the same one from
// the processor) is no error, and its event is written once. A payment
// method deleted meanwhile is coreapi.ErrNotFound, and nothing is
// written. m's timestamps are set from the database.
func (db *DB) AddMandate(ctx context.Context, pm *coreapi.PaymentMethod, m *coreapi.Mandate) error {
	return db.InTx(ctx, func(tx *Tx) error {
		// Locked: a deletion waits, and then revokes the newest mandate,
		// this one.
		var one int
		err := tx.tx.QueryRow(ctx, `SELECT 1 FROM payment_methods WHERE merchant_account_id = $1 AND id = $2 FOR SHARE`,
			pm.MerchantAccountID, pm.ID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return coreapi.ErrNotFound
		}
		if err != nil {
			return err
		}
		err = tx.tx.QueryRow(ctx, `INSERT INTO mandates (id, merchant_account_id, payment_method_id, connector, payment_service_id, scheme, status)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING RETURNING created_at, updated_at`,
			m.ID, pm.MerchantAccountID, pm.ID, m.Connector, m.PaymentServiceID, pm.Scheme, m.Status).Scan(&m.CreatedAt, &m.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return tx.tx.QueryRow(ctx, `SELECT `+mandateColumns+` FROM mandates WHERE merchant_account_id = $1 AND id = $2`,
				pm.MerchantAccountID, m.ID).Scan(mandateFields(m)...)
		}
		if err != nil {
			return err
		}
		var b pgx.Batch
		queueMandateCreated(&b, pm, m)
		return tx.announcePaymentMethod(ctx, &b, coreapi.EventMandateCreated, pm.MerchantAccountID, pm.ID)
	})
}

// ChangeMandate changes mandate id of the merchant account under its row
// lock, in one database transaction: change is given the mandate and the
// database's clock and returns the mandate after it and the event that
// records it, which are written together (no name: nothing is written,
// and ev is nil). With notification nt, a
// notification already recorded on the mandate (same connector and id)
// is a duplicate: change is not called, nothing is written, and dup is
// true. A mandate the account does not have is coreapi.ErrNotFound.
func (db *DB) ChangeMandate(ctx context.Context, merchant, id string, nt *coreapi.Notification,
	change func(m coreapi.Mandate, now time.Time) (coreapi.Mandate, string)) (ev *coreapi.MandateEvent, dup bool, err error) {
	err = db.InTx(ctx, func(tx *Tx) error {
		m := coreapi.Mandate{ID: id, MerchantAccountID: merchant}
		var now time.Time
		err := tx.tx.QueryRow(ctx, `SELECT `+mandateColumns+`, clock_timestamp() FROM mandates
			WHERE merchant_account_id = $1 AND id = $2 FOR UPDATE`, merchant, id).Scan(append(mandateFields(&m), &now)...)
		if errors.Is(err, pgx.ErrNoRows) {
			return coreapi.ErrNotFound
		}
		if err != nil {
			return err
		}
		var conn, nid, body *string
		var headers []byte
		if nt != nil {
			if err := tx.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mandate_events WHERE merchant_account_id = $1
				AND mandate_id = $2 AND notification_connector = $3 AND notification_id = $4)`,
				merchant, id, nt.Connector, nt.ID).Scan(&dup); err != nil || dup {
				return err
			}
			if headers, err = json.Marshal(nt.Headers); err != nil {
				return err
			}
			conn, nid, body = &nt.Connector, &nt.ID, &nt.Body
		}
		next, name := change(m, now)
		if name == "" {
			return nil
		}
		ev = &coreapi.MandateEvent{MerchantAccountID: merchant, MandateID: id, PaymentMethodID: m.PaymentMethodID, Name: name,
			StatusBefore: m.Status, StatusAfter: next.Status, Notification: nt, CreatedAt: now}
		var b pgx.Batch
		b.Queue(`UPDATE mandates SET status = $3, updated_at = $4, revoked_at = $5, recurring_token_at = $6
			WHERE merchant_account_id = $1 AND id = $2`, merchant, id, next.Status, next.UpdatedAt, next.RevokedAt, next.RecurringTokenAt)
		b.Queue(`INSERT INTO mandate_events (merchant_account_id, mandate_id, payment_method_id, name, status_before, status_after,
				notification_connector, notification_id, raw_headers, raw_body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id::text`,
			merchant, id, m.PaymentMethodID, name, m.Status, next.Status, conn, nid, headers, body, now,
		).QueryRow(func(r pgx.Row) error { return r.Scan(&ev.ID) })
		// The mandate is announced as part of its payment method, the
		// resource the API shows it in; one whose payment method was
		// deleted has no resource left to announce (the writes before
		// the read stand).
		err = tx.announcePaymentMethod(ctx, &b, coreapi.EventMandateUpdated, merchant, m.PaymentMethodID)
		if errors.Is(err, coreapi.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil || dup {
		return nil, dup, err
	}
	return ev, false, nil
}

// ListMandateEvents returns up to page.FetchLimit() events of mandate id
// in the page's query order; one the merchant account does not have is
// coreapi.ErrNotFound (also once its payment method is deleted, the
// mandate stays).
func (db *DB) ListMandateEvents(ctx context.Context, merchant, id string, page pagination.Page) ([]coreapi.MandateEvent, error) {
	var found bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mandates WHERE merchant_account_id = $1 AND id = $2)`,
		merchant, id).Scan(&found); err != nil {
		return nil, err
	}
	if !found {
		return nil, coreapi.ErrNotFound
	}
	sql, args := keysetPage(`SELECT e.id::text, e.merchant_account_id, e.mandate_id, e.payment_method_id::text, e.name,
		coalesce(e.status_before, ''), e.status_after, e.created_at, e.notification_connector, e.notification_id, e.raw_headers, e.raw_body
		FROM mandate_events e WHERE e.merchant_account_id = $1 AND e.mandate_id = $2`, []any{merchant, id}, "e", page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.MandateEvent, error) {
		var e coreapi.MandateEvent
		var conn, nid, body *string
		var headers []byte
		err := r.Scan(&e.ID, &e.MerchantAccountID, &e.MandateID, &e.PaymentMethodID, &e.Name, &e.StatusBefore, &e.StatusAfter,
			&e.CreatedAt, &conn, &nid, &headers, &body)
		if err == nil && nid != nil {
			e.Notification = &coreapi.Notification{ID: *nid, Connector: deref(conn), Body: deref(body)}
			err = unmarshalNullable(headers, &e.Notification.Headers)
		}
		return e, err
	})
}
