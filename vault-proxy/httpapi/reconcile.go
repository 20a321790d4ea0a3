package httpapi

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
)

// RecordLister lists vaulted records for the reconciliation (postgres.DB).
type RecordLister interface {
	VaultedRecords(ctx context.Context, q vaultproxy.RecordQuery) ([]vaultproxy.RecordRef, error)
}

// Reconciliation serves core-api's vault reconciliation (its
// reconcile-vault job): core-api holds the payment methods, so it is core-api
// that finds a vaulted record no payment method holds (a creation
// interrupted between the vault and core-api), and asks for it to be
// shredded. vault-proxy does not take core-api's word for a record's age:
// it lists and shreds only records vaulted at least MinAge ago, by the
// database's clock, so that neither a bug in core-api nor a compromised
// core-api can use this route to shred cards as they arrive (core-api's
// own deletions go through DELETE zone.CardPath, audited as deletions).
type Reconciliation struct {
	Store  RecordLister
	Cards  *Cards
	MinAge time.Duration
}

// List answers GET zone.ReconcileRecordsPath: one page, in token order, of
// the records of every merchant account (or of one) vaulted before
// created_before and at least MinAge ago. Ids and kinds only: nothing of
// a record's contents, not even display data.
func (h *Reconciliation) List(ctx *fasthttp.RequestCtx) error {
	q, err := h.query(ctx.QueryArgs())
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, 30*time.Second)
	defer cancel()
	limit := q.Limit
	q.Limit++ // one more: whether there is a next page
	recs, err := h.Store.VaultedRecords(rctx, q)
	if err != nil {
		return err
	}
	page := zone.VaultedRecordPage{Type: "vaulted-record-page", Items: make([]zone.VaultedRecord, 0, min(len(recs), limit))}
	if len(recs) > limit {
		recs = recs[:limit]
		next := recs[limit-1].Token.String()
		page.NextAfter = &next
	}
	for _, r := range recs {
		page.Items = append(page.Items, zone.VaultedRecord{Type: "vaulted-record", ID: r.Token.String(),
			MerchantAccountID: r.MerchantAccountID, Kind: string(r.Kind), CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano)})
	}
	return WriteJSON(ctx, fasthttp.StatusOK, page)
}

// query reads List's query parameters; every bad one is a detail of one
// 400.
func (h *Reconciliation) query(args *fasthttp.Args) (vaultproxy.RecordQuery, error) {
	q := vaultproxy.RecordQuery{MinAge: h.MinAge, Limit: zone.DefaultReconcileLimit}
	var details []apierror.Detail
	bad := func(param, message, typ string) {
		details = append(details, apierror.Detail{Location: apierror.LocationQuery, Pointer: param, Message: message, Type: typ})
	}
	// one is the parameter's value, if it is given exactly once.
	one := func(param string) (string, bool) {
		switch vs := args.PeekMulti(param); len(vs) {
		case 0:
			return "", false
		case 1:
			return string(vs[0]), true
		}
		bad(param, "must be given at most once", "value_error.duplicate")
		return "", false
	}
	if !args.Has(zone.CreatedBeforeParam) {
		bad(zone.CreatedBeforeParam, "is required", "value_error.missing")
	} else if v, ok := one(zone.CreatedBeforeParam); ok {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			bad(zone.CreatedBeforeParam, "must be an RFC 3339 timestamp", "type_error.datetime")
		}
		q.CreatedBefore = t
	}
	if v, ok := one(zone.AfterParam); ok {
		id, err := uuid.Parse(v)
		if err != nil || v != id.String() {
			bad(zone.AfterParam, "must be a UUID", "type_error.uuid")
		}
		q.After = id
	}
	if v, ok := one(zone.LimitParam); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > zone.MaxReconcileLimit {
			bad(zone.LimitParam, "must be an integer from 1 to "+strconv.Itoa(zone.MaxReconcileLimit), "value_error.number.range")
		}
		q.Limit = n
	}
	if v, ok := one(zone.MerchantAccountParam); ok {
		if !accountid.Valid(v) {
			bad(zone.MerchantAccountParam, accountid.Mismatch, accountid.MismatchType)
		}
		q.MerchantAccountID = v
	}
	if len(details) > 0 {
		return q, apierror.BadRequest("invalid query", details...)
	}
	return q, nil
}

// Shred answers DELETE zone.ReconcileRecordPath (the merchant account in
// accountid.Header, as for zone.CardPath): the record is crypto-shredded
// as DELETE zone.CardPath shreds a card, only if it was vaulted at least
// MinAge ago (422 otherwise, and nothing changes), and audited as
// vaulting.ActionReconcileShred either way. The age is checked before any
// of the record's network tokens is touched: they are deleted at their
// token service only once the vault has refused the shred for them.
func (h *Reconciliation) Shred(ctx *fasthttp.RequestCtx) error {
	rctx, c, t, cancel, err := internalTarget(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	shred := func(ctx context.Context, c vaulting.Caller, t uuid.UUID) error {
		return h.Cards.Vaulting.ShredUnclaimed(ctx, c, t, h.MinAge)
	}
	return noContent(ctx, h.Cards.shred(rctx, c, t, shred, false))
}
