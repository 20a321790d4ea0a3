package httpapi

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/pagination"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/valyala/fasthttp"
)

// AuditLister reads the detokenization audit log.
type AuditLister interface {
	AuditEvents(ctx context.Context, merchantAccountID string, page pagination.Page) ([]vaultproxy.AuditEvent, error)
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
	Store   AuditLister
	Spool   AuditFlusher
	Auth    *Authenticator
	Cursors *pagination.Codec // the list's cursors
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

// List answers GET /audit-events?limit=&cursor=, newest first. The log
// is append-only and its ids are a sequence, so an id is a stable keyset
// boundary.
func (h *Audit) List(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, "audit-events.read")
	if err != nil {
		return err
	}
	page, err := parsePage(h.Cursors, ctx, "audit-events", c.MerchantAccountID)
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, 30*time.Second)
	defer cancel()
	// Read your writes: a reader answered after a forward sees its record.
	// Shipping is normally milliseconds behind; a database outage makes
	// this wait until the deadline and fail.
	if err := h.Spool.Flush(rctx); err != nil {
		return err
	}
	events, err := h.Store.AuditEvents(rctx, c.MerchantAccountID, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, events, func(e vaultproxy.AuditEvent) pagination.Key { return pagination.Key{ID: strconv.FormatInt(e.ID, 10)} })
	items := make([]auditEvent, len(env.Items))
	for i, e := range env.Items {
		items[i] = auditEvent{
			Type: "audit-event", ID: strconv.FormatInt(e.ID, 10), OccurredAt: e.OccurredAt.UTC().Format(time.RFC3339Nano),
			Actor: e.Actor, MerchantAccountID: e.MerchantAccountID, Action: e.Action, Tokens: e.Tokens,
			Purpose: e.Purpose, Outcome: e.Outcome, RequestID: e.RequestID, Detail: e.Detail,
		}
		if items[i].Tokens == nil {
			items[i].Tokens = []uuid.UUID{}
		}
	}
	return WriteJSON(ctx, fasthttp.StatusOK, pagination.Envelope[auditEvent]{
		Items: items, Limit: env.Limit, NextCursor: env.NextCursor, PreviousCursor: env.PreviousCursor,
	})
}
