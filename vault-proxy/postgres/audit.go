package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	vaultproxy "github.com/payorch/vault-proxy"
)

// Record writes an audit event (vaultproxy.AuditLog) and returns once it
// is committed (or failed): a caller that has been answered can read it.
//
// Records from concurrent requests are group-committed: one writer
// goroutine inserts whatever has queued while the previous batch was in
// flight (up to auditMaxBatch) with one statement in one round trip. The
// queue is bounded (auditQueue); when it is full Record blocks
// (backpressure), it never drops a record. Each batch commits with
// synchronous_commit off for that transaction only: PostgreSQL
// acknowledges it once it is in the WAL buffers, and its WAL writer
// flushes it within 3 x wal_writer_delay (600 ms by default) instead of
// every commit waiting for an fsync of its own. A committed record is
// visible at once and survives a crash of vault-proxy; only a crash of
// PostgreSQL itself (or its machine) inside that window can lose the
// newest records, never corrupt the table (SECURITY.md, "Audit log
// durability").
func (db *DB) Record(ctx context.Context, e vaultproxy.AuditEvent) error {
	detail := []byte("{}")
	if e.Detail != nil {
		var err error
		if detail, err = json.Marshal(e.Detail); err != nil {
			return err
		}
	}
	r := &auditReq{e: e, detail: string(detail), err: make(chan error, 1)}
	if db.audit == nil || !db.audit.enqueue(r) {
		return db.insertAudit(ctx, []*auditReq{r})
	}
	return <-r.err
}

const (
	auditQueue    = 4096 // records waiting for the writer before Record blocks
	auditMaxBatch = 256  // records per statement
	auditTimeout  = 30 * time.Second
)

type auditReq struct {
	e      vaultproxy.AuditEvent
	detail string
	err    chan error
}

// auditWriter group-commits audit records (see Record).
type auditWriter struct {
	db     *DB
	mu     sync.RWMutex // held for reading while enqueuing, for writing by close
	closed bool
	ch     chan *auditReq
	done   chan struct{}
}

func newAuditWriter(db *DB) *auditWriter {
	w := &auditWriter{db: db, ch: make(chan *auditReq, auditQueue), done: make(chan struct{})}
	go w.run()
	return w
}

// enqueue hands r to the writer, blocking while the queue is full. It
// reports false once the writer is closed (the caller then inserts r
// itself).
func (w *auditWriter) enqueue(r *auditReq) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return false
	}
	w.ch <- r
	return true
}

func (w *auditWriter) run() {
	defer close(w.done)
	batch := make([]*auditReq, 0, auditMaxBatch)
	for r := range w.ch {
		batch = append(batch[:0], r)
	fill:
		for len(batch) < auditMaxBatch {
			select {
			case r, ok := <-w.ch:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
		err := w.db.insertAudit(ctx, batch)
		cancel()
		for _, r := range batch {
			r.err <- err
		}
		clear(batch)
	}
}

// close stops taking records and waits until every queued one is written.
func (w *auditWriter) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
}

// insertAudit writes a batch with one INSERT ... SELECT FROM unnest, in
// order, pipelined after the set_config in one implicit transaction.
func (db *DB) insertAudit(ctx context.Context, batch []*auditReq) error {
	n := len(batch)
	actor, merchant, action, tokens := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	purpose, outcome, reqID, detail := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	var sb strings.Builder
	for i, r := range batch {
		e := r.e
		actor[i], merchant[i], action[i], purpose[i], outcome[i], reqID[i], detail[i] =
			e.Actor, e.MerchantAccountID, e.Action, e.Purpose, e.Outcome, e.RequestID, r.detail
		sb.Reset()
		sb.WriteByte('{')
		for j, t := range e.Tokens {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(t.String())
		}
		sb.WriteByte('}')
		tokens[i] = sb.String()
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`
		INSERT INTO audit_events (actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail)
		SELECT a, m, act, t::uuid[], p, o, r, d::jsonb
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
		     WITH ORDINALITY AS u(a, m, act, t, p, o, r, d, n)
		ORDER BY n`,
		actor, merchant, action, tokens, purpose, outcome, reqID, detail)
	return db.Pool.SendBatch(ctx, b).Close()
}

// uuidArray passes tokens to pgx as raw 16-byte values: a uuid.UUID is a
// driver.Valuer, which pgx would format to text and parse back per
// element.
func uuidArray(ids []uuid.UUID) [][16]byte {
	out := make([][16]byte, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// AuditEvents lists a merchant account's events newest first, before the
// given id (0 for the newest page).
func (db *DB) AuditEvents(ctx context.Context, merchantAccountID string, beforeID int64, limit int) ([]vaultproxy.AuditEvent, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT id, occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail
		FROM audit_events
		WHERE merchant_account_id = $1 AND ($2 = 0 OR id < $2)
		ORDER BY id DESC LIMIT $3`, merchantAccountID, beforeID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (vaultproxy.AuditEvent, error) {
		var e vaultproxy.AuditEvent
		var detail []byte
		var at time.Time
		err := r.Scan(&e.ID, &at, &e.Actor, &e.MerchantAccountID, &e.Action, &e.Tokens, &e.Purpose, &e.Outcome, &e.RequestID, &detail)
		e.OccurredAt = at
		if err == nil && len(detail) > 0 {
			err = json.Unmarshal(detail, &e.Detail)
		}
		return e, err
	})
}
