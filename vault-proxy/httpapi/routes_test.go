package httpapi_test

import (
	"log/slog"
	"testing"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/valyala/fasthttp"
)

// internalRouter is the internal listener's router, its handlers without
// the stores a request that passes their first checks would need.
func internalRouter() *httpapi.Router {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	httpapi.InternalRoutes(rt, httpapi.InternalHandlers{
		Cards: &httpapi.Cards{}, Detokenize: &httpapi.Detokenize{}, Reconciliation: &httpapi.Reconciliation{},
		MerchantAccounts: &httpapi.MerchantAccounts{Store: countsFor{"acme": {}}},
	})
	return rt
}

// Every route shared/zone declares is served on the internal listener:
// core-api's client, tested against the same declarations, finds each.
func TestInternalRoutesAreTheZones(t *testing.T) {
	rt := internalRouter()
	const token = "0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"
	for _, r := range []struct{ method, path string }{
		{fasthttp.MethodGet, zone.CardPathPrefix + token},
		{fasthttp.MethodPut, zone.CardPathPrefix + token},
		{fasthttp.MethodDelete, zone.CardPathPrefix + token},
		{fasthttp.MethodDelete, zone.SecurityCodeHold(token, token)},
		{fasthttp.MethodPost, zone.DetokenizePath},
		{fasthttp.MethodGet, zone.ReconcileRecordsPath},
		{fasthttp.MethodDelete, zone.ReconcileRecordPathPrefix + token},
		{fasthttp.MethodGet, zone.MerchantAccountPath(zone.MerchantAccountUsagePath, "acme")},
		{fasthttp.MethodPost, zone.MerchantAccountPath(zone.MerchantAccountClosePath, "acme")},
		{fasthttp.MethodPost, zone.MerchantAccountPath(zone.MerchantAccountCancelClosePath, "acme")},
		{fasthttp.MethodPost, zone.MerchantAccountPath(zone.MerchantAccountReopenPath, "acme")},
		{fasthttp.MethodGet, zone.ReadyPath},
	} {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			status, body := serveInternal(rt, r.method, r.path, "")
			if e, err := apierror.Parse(body); err == nil && (e.Message == "route not found" || status == fasthttp.StatusMethodNotAllowed) {
				t.Fatalf("= %d %s: not routed", status, body)
			}
		})
	}
	if status, _ := serveInternal(rt, fasthttp.MethodGet, "/payment-methods", ""); status != fasthttp.StatusNotFound {
		t.Fatalf("a public route on the internal listener = %d", status)
	}
}
