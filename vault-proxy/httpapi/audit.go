package httpapi

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/valyala/fasthttp"
)

// AuditLister reads the detokenization audit log.
type AuditLister interface {
	AuditEvents(ctx context.Context, merchantAccountID string, beforeID int64, limit int) ([]vaultproxy.AuditEvent, error)
}

// AuditFlusher waits until the records written so far are in the
// database (auditspool.Spool).
type AuditFlusher interface {
	Flush(ctx context.Context) error
}

// Audit serves GET /audit-events: the merchant account's vault audit log,
// newest first, under its own scope (audit-events.read) so that a token
// that may vault cards cannot read who detokenized them.
type Audit struct {
	Store AuditLister
	Spool AuditFlusher
	Auth  *Authenticator
}

type auditEvent struct {
	Type              string         `json:"type"`
	ID                string         `json:"id"`
	OccurredAt        string         `json:"occurred_at"`
	Actor             string         `json:"actor"`
	MerchantAccountID string         `json:"merchant_account_id"`
	Action            string         `json:"action"`
	Tokens            []uuid.UUID    `json:"payment_method_ids"`
	Purpose           string         `json:"purpose"`
	Outcome           string         `json:"outcome"`
	RequestID         string         `json:"request_id"`
	Detail            map[string]any `json:"detail"`
}

// List answers GET /audit-events?limit=&cursor=. The cursor is the id of
// the last event seen; the log is append-only, so an id is a stable
// keyset boundary.
func (h *Audit) List(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, "audit-events.read")
	if err != nil {
		return err
	}
	limit := 20
	if v := ctx.QueryArgs().Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > 100 {
			return apierror.BadRequest("limit must be an integer from 1 to 100", apierror.Detail{Location: apierror.LocationQuery, Pointer: "limit", Message: "must be 1..100", Type: "value_error.number"})
		}
		limit = n
	}
	var before int64
	if v := ctx.QueryArgs().Peek("cursor"); len(v) > 0 {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 1 {
			return apierror.BadRequest("invalid cursor", apierror.Detail{Location: apierror.LocationQuery, Pointer: "cursor", Message: "not a cursor from this list", Type: "value_error.cursor"})
		}
		before = n
	}
	rctx, cancel := requestContext(ctx, 30*time.Second)
	defer cancel()
	// Read your writes: a reader answered after a forward sees its record.
	// Shipping is normally milliseconds behind; a database outage makes
	// this wait until the deadline and fail.
	if err := h.Spool.Flush(rctx); err != nil {
		return err
	}
	events, err := h.Store.AuditEvents(rctx, c.MerchantAccountID, before, limit+1)
	if err != nil {
		return err
	}
	var next any
	if len(events) > limit {
		events = events[:limit]
		next = strconv.FormatInt(events[limit-1].ID, 10)
	}
	items := make([]auditEvent, len(events))
	for i, e := range events {
		items[i] = auditEvent{
			Type: "audit-event", ID: strconv.FormatInt(e.ID, 10), OccurredAt: e.OccurredAt.UTC().Format(time.RFC3339Nano),
			Actor: e.Actor, MerchantAccountID: e.MerchantAccountID, Action: e.Action, Tokens: e.Tokens,
			Purpose: e.Purpose, Outcome: e.Outcome, RequestID: e.RequestID, Detail: e.Detail,
		}
		if items[i].Tokens == nil {
			items[i].Tokens = []uuid.UUID{}
		}
	}
	return WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"items": items, "limit": limit, "next_cursor": next, "previous_cursor": nil})
}
