package httpapi

import (
	"context"
	"github.com/payorch/shared/zone"
	"sort"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/valyala/fasthttp"
)

// MerchantAccountUsagePath is the internal route core-api asks before it
// deletes a merchant account.
const MerchantAccountUsagePath = "/internal/merchant-accounts/{merchant_account_id}/usage"

// UsageCounter counts what the vault holds for a merchant account, by
// resource name (postgres.DB.MerchantAccountUsage).
type UsageCounter interface {
	MerchantAccountUsage(ctx context.Context, merchantAccountID string) (map[string]int64, error)
}

// MerchantAccounts serves vault-proxy's part in deleting a merchant
// account: core-api owns the accounts, but the vault holds secrets under
// their ids (forwarding credentials, cards, network tokens), which would
// pass to a later account of the same id if the account were deleted
// around them.
type MerchantAccounts struct {
	Store UsageCounter
}

// Usage answers GET /internal/merchant-accounts/{merchant_account_id}/usage.
// The account is the path's, not the merchant header's: the question is
// about an account, not asked within one.
func (h *MerchantAccounts) Usage(ctx *fasthttp.RequestCtx) error {
	id, _ := ctx.UserValue("merchant_account_id").(string)
	if !merchantID.MatchString(id) {
		return apierror.BadRequest("invalid merchant_account_id", apierror.Detail{
			Location: apierror.LocationPath, Pointer: "merchant_account_id", Message: "must match " + merchantID.String(), Type: "value_error.str.regex",
		})
	}
	rctx, cancel := requestContext(ctx, 30*time.Second)
	defer cancel()
	counts, err := h.Store.MerchantAccountUsage(rctx, id)
	if err != nil {
		return err
	}
	out := zone.MerchantAccountUsage{Type: "merchant-account-usage", MerchantAccountID: id, Records: make([]zone.UsageRecord, 0, len(counts))}
	for resource, n := range counts {
		out.Records = append(out.Records, zone.UsageRecord{Resource: resource, Count: n})
	}
	sort.Slice(out.Records, func(i, j int) bool { return out.Records[i].Resource < out.Records[j].Resource })
	return WriteJSON(ctx, fasthttp.StatusOK, out)
}
