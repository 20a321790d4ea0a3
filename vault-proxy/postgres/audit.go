package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	vaultproxy "github.com/payorch/vault-proxy"
)

// Record writes an audit event (vaultproxy.AuditLog).
func (db *DB) Record(ctx context.Context, e vaultproxy.AuditEvent) error {
	detail, err := json.Marshal(e.Detail)
	if err != nil {
		return err
	}
	if e.Detail == nil {
		detail = []byte("{}")
	}
	_, err = db.Pool.Exec(ctx, `
		INSERT INTO audit_events (actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.Actor, e.MerchantAccountID, e.Action, e.Tokens, e.Purpose, e.Outcome, e.RequestID, detail)
	return err
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
