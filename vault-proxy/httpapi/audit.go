package httpapi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/valyala/fasthttp"
)

// AuditLister reads the detokenization audit log.
type AuditLister interface {
	AuditEvents(ctx context.Context, merchantAccountID string, page pagination.Page) ([]vaultproxy.AuditEvent, error)
	// AuditEvent is one event of the merchant account
	// (vaultproxy.ErrNotFound).
	AuditEvent(ctx context.Context, merchantAccountID string, id int64) (*vaultproxy.AuditEvent, error)
}

// AuditFlusher waits until the records written so far are in the
// database (auditspool.Spool).
type AuditFlusher interface {
	Flush(ctx context.Context) error
}

// Audit serves GET /audit-events and GET /audit-events/{id}: the merchant
// account's vault audit log, newest first, and one of its events, under its own scope (audit-events.read) so that a token
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

// auditEventOut is an audit event on the wire, in the list and alone.
func auditEventOut(e *vaultproxy.AuditEvent) auditEvent {
	out := auditEvent{
		Type: "audit-event", ID: strconv.FormatInt(e.ID, 10), OccurredAt: e.OccurredAt.UTC().Format(time.RFC3339Nano),
		Actor: e.Actor, MerchantAccountID: e.MerchantAccountID, Action: e.Action, Tokens: e.Tokens,
		Purpose: e.Purpose, Outcome: e.Outcome, RequestID: e.RequestID, Detail: e.Detail,
	}
	if out.Tokens == nil {
		out.Tokens = []uuid.UUID{}
	}
	return out
}

// readable waits until the records written so far are in the database:
// read your writes, so a reader answered after a forward sees its
// record. Shipping is normally milliseconds behind; a database outage
// makes this wait until the deadline and fail.
func (h *Audit) readable(ctx *fasthttp.RequestCtx) (context.Context, context.CancelFunc, error) {
	rctx, cancel := requestContext(ctx, 30*time.Second)
	if err := h.Spool.Flush(rctx); err != nil {
		cancel()
		return nil, nil, err
	}
	return rctx, cancel, nil
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
	rctx, cancel, err := h.readable(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	events, err := h.Store.AuditEvents(rctx, c.MerchantAccountID, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, events, func(e vaultproxy.AuditEvent) pagination.Key { return pagination.Key{ID: strconv.FormatInt(e.ID, 10)} })
	items := make([]auditEvent, len(env.Items))
	for i := range env.Items {
		items[i] = auditEventOut(&env.Items[i])
	}
	return WriteJSON(ctx, fasthttp.StatusOK, pagination.Envelope[auditEvent]{
		Items: items, Limit: env.Limit, NextCursor: env.NextCursor, PreviousCursor: env.PreviousCursor,
	})
}

// Get answers GET /audit-events/{id}: one event as the list renders it.
// An id is the log's sequence number, a positive decimal integer without
// leading zeros (else 400 at the path); another account's is 404.
func (h *Audit) Get(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, "audit-events.read")
	if err != nil {
		return err
	}
	s, _ := ctx.UserValue("id").(string)
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 || strconv.FormatInt(id, 10) != s {
		return apierror.BadRequest("invalid id", apierror.Detail{
			Location: apierror.LocationPath, Pointer: "id", Message: "must be a positive integer", Type: "type_error.integer",
		})
	}
	rctx, cancel, err := h.readable(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	e, err := h.Store.AuditEvent(rctx, c.MerchantAccountID, id)
	if errors.Is(err, vaultproxy.ErrNotFound) {
		return apierror.NotFound("audit event not found")
	}
	if err != nil {
		return err
	}
	return WriteJSON(ctx, fasthttp.StatusOK, auditEventOut(e))
}
