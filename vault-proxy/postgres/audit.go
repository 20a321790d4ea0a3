package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/uuidtext"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
)

// AuditCheckpoint returns the last sequence number of spool stored in
// audit_events (0 for a new spool): auditspool.Sink.
func (db *DB) AuditCheckpoint(ctx context.Context, spool uuid.UUID) (uint64, error) {
	var seq int64
	err := db.Pool.QueryRow(ctx, `SELECT shipped_seq FROM audit_spool_checkpoints WHERE spool_id = $1`, spool).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return uint64(seq), err
}

// ShipAudit stores a spool's batch and moves its checkpoint from b.Prev to
// b.Last in one statement, so one round trip commits both or neither; when
// the checkpoint is not at b.Prev nothing is stored
// (auditspool.ErrCheckpointMoved). The records travel as the JSON array
// the spool holds and PostgreSQL takes them apart: vault-proxy neither
// decodes nor re-encodes them. Each keeps the time it was spooled; ids
// follow the spool's order.
//
// The parameters go to pgconn as text, as they are: through pgx's type
// map the batch (up to 500 records, ~250 KiB) would be copied into a
// parameter buffer that pgx drops after every statement over 256 bytes,
// a fresh heap allocation per batch whose collection the request path
// pays for.
func (db *DB) ShipAudit(ctx context.Context, spool uuid.UUID, b auditspool.Batch) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// Prepared once per connection (pgx keeps it by name): an unnamed
	// statement would be parsed and planned again for every batch.
	if _, err := conn.Conn().Prepare(ctx, shipAuditStmt, shipAuditSQL); err != nil {
		return err
	}
	var id [36]byte
	var prev, last [20]byte
	res := conn.Conn().PgConn().ExecPrepared(ctx, shipAuditStmt,
		[][]byte{uuidtext.Append(id[:0], spool), strconv.AppendUint(prev[:0], b.Prev, 10), strconv.AppendUint(last[:0], b.Last, 10), b.Records},
		nil, nil).Read()
	if res.Err != nil {
		return res.Err
	}
	if res.CommandTag.RowsAffected() != int64(b.Count()) {
		return auditspool.ErrCheckpointMoved
	}
	return nil
}

const shipAuditStmt = "payorch_ship_audit"

// The parameters' types come from the statement: $1 is a spool id (uuid),
// $2 and $3 sequence numbers (bigint), $4 the batch (jsonb).
const shipAuditSQL = `
	WITH checkpoint AS (
		INSERT INTO audit_spool_checkpoints AS c (spool_id, shipped_seq) VALUES ($1, $3)
		ON CONFLICT (spool_id) DO UPDATE SET shipped_seq = EXCLUDED.shipped_seq, updated_at = now()
		WHERE c.shipped_seq = $2
		RETURNING 1
	)
	INSERT INTO audit_events (occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail)
	SELECT (r->>'at')::timestamptz, r->>'actor', r->>'merchant_account_id', r->>'action',
	       ARRAY(SELECT jsonb_array_elements_text(r->'tokens'))::uuid[],
	       coalesce(r->>'purpose', ''), r->>'outcome', coalesce(r->>'request_id', ''), coalesce(r->'detail', '{}')
	FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS u(r, n)
	WHERE EXISTS (SELECT FROM checkpoint)
	ORDER BY n`

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

// auditEventsPage is one page of a merchant account's events, newest
// first; the index audit_events_merchant_id (migration 006) answers it.
const auditEventsPage = `
	SELECT id, occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail
	FROM audit_events
	WHERE merchant_account_id = $1 AND ($2 = 0 OR id < $2)
	ORDER BY id DESC LIMIT $3`

// AuditEvents lists a merchant account's events newest first, before the
// given id (0 for the newest page).
func (db *DB) AuditEvents(ctx context.Context, merchantAccountID string, beforeID int64, limit int) ([]vaultproxy.AuditEvent, error) {
	rows, err := db.Pool.Query(ctx, auditEventsPage, merchantAccountID, beforeID, limit)
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
