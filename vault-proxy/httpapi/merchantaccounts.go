package httpapi

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
	"github.com/valyala/fasthttp"
)

// MerchantAccountStore is what the vault database knows of merchant
// accounts (postgres.DB): what it holds for one, and whether it is closed.
type MerchantAccountStore interface {
	MerchantAccountUsage(ctx context.Context, merchantAccountID string) (map[string]int64, error)
	CloseMerchantAccount(ctx context.Context, merchantAccountID string, attempt uuid.UUID) (map[string]int64, bool, error)
	ReopenMerchantAccount(ctx context.Context, merchantAccountID string) (map[string]int64, bool, error)
	CancelCloseMerchantAccount(ctx context.Context, merchantAccountID string, attempt uuid.UUID) error
}

// MerchantAccounts serves vault-proxy's part in deleting and re-creating a
// merchant account: core-api owns the accounts, but the vault holds secrets
// and an audit trail under their ids, which would pass to a later account
// of the same id if the account were deleted around them. The account is
// the path's, not the merchant header's: these are questions about an
// account, not asked within one.
type MerchantAccounts struct {
	Store MerchantAccountStore
}

// Usage answers GET zone.MerchantAccountUsagePath:
// what the vault holds for the account, without changing anything (for
// core-api's answer to a deletion its own records already refuse).
func (h *MerchantAccounts) Usage(ctx *fasthttp.RequestCtx) error {
	return h.serve(ctx, 30*time.Second, func(rctx context.Context, id string) error {
		counts, err := h.Store.MerchantAccountUsage(rctx, id)
		if err != nil {
			return err
		}
		return WriteJSON(ctx, fasthttp.StatusOK, zone.MerchantAccountUsage{Type: "merchant-account-usage", MerchantAccountID: id, Records: usageRecords(counts)})
	})
}

// closeTimeout bounds a close, a reopen or a cancellation, its wait for
// the account's lock included: core-api waits for the answer inside a
// transaction that holds the account's row.
const closeTimeout = 5 * time.Second

// Close answers POST zone.MerchantAccountClosePath ({"attempt_id": uuid}): it closes an account the vault holds nothing
// for, atomically with that count (postgres.CloseMerchantAccount), and
// says whether it did.
func (h *MerchantAccounts) Close(ctx *fasthttp.RequestCtx) error {
	attempt, err := closureAttempt(ctx)
	if err != nil {
		return err
	}
	return h.closure(ctx, func(rctx context.Context, id string) (map[string]int64, bool, error) {
		return h.Store.CloseMerchantAccount(rctx, id, attempt)
	})
}

// Reopen answers POST zone.MerchantAccountReopenPath:
// a new account has a deleted account's id. It is refused while the vault
// still holds anything under the id (Records says what).
func (h *MerchantAccounts) Reopen(ctx *fasthttp.RequestCtx) error {
	return h.closure(ctx, h.Store.ReopenMerchantAccount)
}

func (h *MerchantAccounts) closure(ctx *fasthttp.RequestCtx, change func(context.Context, string) (map[string]int64, bool, error)) error {
	return h.serve(ctx, closeTimeout, func(rctx context.Context, id string) error {
		counts, closed, err := change(rctx, id)
		if err != nil {
			return err
		}
		return WriteJSON(ctx, fasthttp.StatusOK, zone.MerchantAccountClosure{Type: "merchant-account-closure", MerchantAccountID: id,
			Closed: closed, Records: usageRecords(counts)})
	})
}

// CancelClose answers POST zone.MerchantAccountCancelClosePath
// ({"attempt_id": uuid}, 204): that deletion attempt failed in core-api.
func (h *MerchantAccounts) CancelClose(ctx *fasthttp.RequestCtx) error {
	attempt, err := closureAttempt(ctx)
	if err != nil {
		return err
	}
	return h.serve(ctx, closeTimeout, func(rctx context.Context, id string) error {
		return noContent(ctx, h.Store.CancelCloseMerchantAccount(rctx, id, attempt))
	})
}

// closureAttempt reads the deletion attempt's id from the body.
func closureAttempt(ctx *fasthttp.RequestCtx) (uuid.UUID, error) {
	var in zone.MerchantAccountClosureAttempt
	if err := decodeInternal(ctx, &in); err != nil {
		return uuid.Nil, err
	}
	id, err := uuid.Parse(in.AttemptID)
	if err != nil || len(in.AttemptID) != 36 {
		return uuid.Nil, apierror.BadRequest("invalid attempt_id", apierror.Detail{
			Location: apierror.LocationBody, Pointer: "/attempt_id", Message: "must be a UUID", Type: "type_error.uuid",
		})
	}
	return id, nil
}

func (h *MerchantAccounts) serve(ctx *fasthttp.RequestCtx, timeout time.Duration, do func(context.Context, string) error) error {
	id, _ := ctx.UserValue(zone.MerchantAccountPathParam).(string)
	if !accountid.Valid(id) {
		return apierror.BadRequest("invalid merchant_account_id", apierror.Detail{
			Location: apierror.LocationPath, Pointer: zone.MerchantAccountPathParam, Message: accountid.Mismatch, Type: accountid.MismatchType,
		})
	}
	rctx, cancel := requestContext(ctx, timeout)
	defer cancel()
	return do(rctx, id)
}

func noContent(ctx *fasthttp.RequestCtx, err error) error {
	if err == nil {
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	}
	return err
}

// usageRecords lists every count, sorted by resource.
func usageRecords(counts map[string]int64) []zone.UsageRecord {
	out := make([]zone.UsageRecord, 0, len(counts))
	for resource, n := range counts {
		out = append(out, zone.UsageRecord{Resource: resource, Count: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}
