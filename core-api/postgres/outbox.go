package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	coreapi "github.com/payorch/core-api"
)

// EventRenderer renders an outbound event's payload, its target as the API
// returns the resource (httpapi.EventRenderer). The store holds one so
// that the payload is written in the database transaction of the change,
// from the state that commits, without the store knowing the wire form.
type EventRenderer interface {
	RenderEvent(id string, e *coreapi.OutboundEvent) ([]byte, error)
}

// errNoRenderer: a DB without an EventRenderer cannot write a change,
// since its event would be missing.
var errNoRenderer = errors.New("postgres: no event renderer: outbound events cannot be written")

// queueOutboundEvent queues, in b, the outbox row of e and one delivery
// for each active subscription of its merchant account whose filter
// takes it: one statement, in the batch of the change itself, so the
// event exists if and only if the change commits.
func (db *DB) queueOutboundEvent(b *pgx.Batch, e *coreapi.OutboundEvent) error {
	if db.Events == nil {
		return errNoRenderer
	}
	id := uuid.NewString()
	payload, err := db.Events.RenderEvent(id, e)
	if err != nil {
		return err
	}
	b.Queue(`WITH e AS (INSERT INTO webhook_events (id, merchant_account_id, name, payload, created_at)
			VALUES ($1, $2, $3, $4, $5))
		INSERT INTO webhook_deliveries (event_id, subscription_id, merchant_account_id, status, next_attempt_at, created_at, updated_at)
		SELECT $1, s.id, $2, 'pending', $5, $5, $5 FROM webhook_subscriptions s
		WHERE s.merchant_account_id = $2 AND s.active AND (s.event_names IS NULL OR $3 = ANY (s.event_names))`,
		id, e.MerchantAccountID, e.Name, string(payload), e.CreatedAt)
	return nil
}

// queueTransactionEvent queues the outbound event that transaction event
// te announces, if any, its target t or r.
func (db *DB) queueTransactionEvent(b *pgx.Batch, te *coreapi.TransactionEvent, t *coreapi.Transaction, r *coreapi.Refund) error {
	name, ok := coreapi.TransactionEventName(te.Name)
	if !ok {
		return nil
	}
	var target any = t
	if r != nil && isRefundEvent(name) {
		target = r
	}
	return db.queueOutboundEvent(b, &coreapi.OutboundEvent{MerchantAccountID: te.MerchantAccountID, Name: name,
		Target: target, CreatedAt: te.CreatedAt})
}

func isRefundEvent(name string) bool { return len(name) > 7 && name[:7] == "refund." }

// announceTransaction sends b, a step of a transaction written without
// the resource at hand (a creation, an event alone), with a read of the
// transaction (and refund) as b leaves it, when transaction event e
// announces an outbound event; the event is written with the
// transaction's next round trip.
func (tx *Tx) announceTransaction(ctx context.Context, b *pgx.Batch, e *coreapi.TransactionEvent) error {
	if _, ok := coreapi.TransactionEventName(e.Name); !ok {
		return tx.tx.SendBatch(ctx, b).Close()
	}
	var (
		t *coreapi.Transaction
		r *coreapi.Refund
	)
	b.Queue(`SELECT `+txColumns+txFrom+`
		WHERE t.merchant_account_id = $1 AND t.id = $2`, e.MerchantAccountID, e.TransactionID).
		QueryRow(func(row pgx.Row) (err error) {
			t, err = scanTransaction(row)
			return err
		})
	if e.RefundID != nil {
		if !coreapi.IsUUID(*e.RefundID) {
			return fmt.Errorf("refund: %w", coreapi.ErrNotFound)
		}
		b.Queue(`SELECT `+refundColumns+refundFrom+`
			WHERE o.merchant_account_id = $1 AND o.transaction_id = $2 AND o.id = $3`, e.MerchantAccountID, e.TransactionID, *e.RefundID).
			QueryRow(func(row pgx.Row) (err error) {
				r, err = scanRefund(row)
				return err
			})
	}
	if err := tx.tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	var eb pgx.Batch
	if err := tx.db.queueTransactionEvent(&eb, e, t, r); err != nil {
		return err
	}
	tx.tx.later(&eb)
	return nil
}

// announced runs write, a change of one resource, in a database
// transaction with the outbound event it returns (nil: nothing changed,
// nothing to announce): two round trips, the write with the BEGIN and the
// event with the COMMIT.
func (db *DB) announced(ctx context.Context, write func(q querier) (*coreapi.OutboundEvent, error)) error {
	return db.InTx(ctx, func(tx *Tx) error {
		e, err := write(tx.tx)
		if err != nil || e == nil {
			return err
		}
		return tx.announce(e)
	})
}

// announce writes outbound event e in the transaction, with its next
// round trip: the COMMIT, when nothing else follows.
func (tx *Tx) announce(e *coreapi.OutboundEvent) error {
	var b pgx.Batch
	if err := tx.db.queueOutboundEvent(&b, e); err != nil {
		return err
	}
	tx.tx.later(&b)
	return nil
}
