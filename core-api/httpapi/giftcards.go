package httpapi

import (
	"net/http"
	"slices"
	"strings"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/apierror"
)

// GET /buyers/gift-cards?buyer_id=|buyer_external_identifier=&sort_by=
//
// A buyer's stored gift cards (method "gift-card", vaulted through
// vault-proxy with number and PIN), at most 100, as {"items": [...]}
// without cursors. sort_by (default last_used_at) puts the most recent or
// most frequent first, never-used cards last, ties by id.
//
// Decisions: sub_bin (digits 7-9) is always null: the vault's metadata has
// only the first 6 and last 4, and core-api never sees the number, so it
// cannot be derived here; adding it would mean widening the zone contract.
// currency is null (vault-proxy takes no currency for a gift card).
// balance is the gift card connector's (transactions.GiftCardBalances:
// each card at once, bounded); one it could not give is null with its
// balance_error_code.
func (h *paymentMethods) giftCards(w http.ResponseWriter, r *http.Request) error {
	c, err := h.Auth.Authorize(r, scopePaymentMethodsRead)
	if err != nil {
		return err
	}
	sortBy := coreapi.SortLastUsedAt
	if vs, ok := r.URL.Query()["sort_by"]; ok {
		if len(vs) != 1 || !slices.Contains(coreapi.GiftCardSorts, vs[0]) {
			return apierror.BadRequest("invalid query", queryDetail("sort_by", "must be one of "+strings.Join(coreapi.GiftCardSorts, ", "), "value_error.const"))
		}
		sortBy = vs[0]
	}
	id, ext, err := buyerQuery(r)
	if err != nil {
		return err
	}
	rows, err := h.PaymentMethods.GiftCards(r.Context(), c.MerchantAccountID, id, ext, sortBy)
	if err != nil {
		return buyerQueryError(id, err)
	}
	balances := make([]coreapi.GiftCardBalance, len(rows))
	if h.Transactions != nil {
		balances = h.Transactions.GiftCardBalances(r.Context(), c.MerchantAccountID, rows)
	}
	items := make([]giftCardJSON, len(rows))
	for i := range rows {
		items[i] = giftCardView(&rows[i], balances[i])
	}
	return WriteJSON(w, http.StatusOK, map[string]any{"items": items})
}

type giftCardJSON struct {
	Type              string  `json:"type"`
	ID                string  `json:"id"`
	MerchantAccountID string  `json:"merchant_account_id"`
	BIN               *string `json:"bin"`
	SubBIN            *string `json:"sub_bin"`
	Last4             string  `json:"last4"`
	Currency          *string `json:"currency"`
	ExpirationDate    *string `json:"expiration_date"`
	Balance           *int64  `json:"balance"`
	BalanceErrorCode  *string `json:"balance_error_code"`
	usageJSON
}

func giftCardView(pm *coreapi.PaymentMethod, b coreapi.GiftCardBalance) giftCardJSON {
	bin := pm.BIN
	if len(bin) > 6 {
		bin = bin[:6]
	}
	v := giftCardJSON{Type: "gift-card", ID: pm.ID, MerchantAccountID: pm.MerchantAccountID, BIN: orNull(bin),
		Last4: pm.Label, Currency: orNull(pm.Currency), ExpirationDate: orNull(pm.ExpirationDate),
		Balance: b.Balance, BalanceErrorCode: orNull(b.ErrorCode), usageJSON: usageView(pm.Usage)}
	if v.Balance == nil && v.BalanceErrorCode == nil {
		v.BalanceErrorCode = orNull(transactions.BalanceUnavailable)
	}
	return v
}
