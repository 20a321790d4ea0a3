package httpapi

import (
	"net/url"

	"github.com/payorch/shared/pagination"
	"github.com/valyala/fasthttp"
)

// parsePage reads a list request's `limit` and `cursor`
// (docs/api-conventions.md, "Pagination") for list, with its cursors bound to the merchant account:
// one signed for another list or account is 400 on `cursor`.
func parsePage(cursors *pagination.Codec, ctx *fasthttp.RequestCtx, list, merchantAccountID string) (pagination.Page, error) {
	q := url.Values{}
	for _, name := range [...]string{"limit", "cursor"} {
		for _, v := range ctx.QueryArgs().PeekMulti(name) {
			q.Add(name, string(v))
		}
	}
	return cursors.ParseRequest(q, list, pagination.Binding(merchantAccountID))
}
