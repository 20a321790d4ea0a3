package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/payorch/shared/zone"
	"log/slog"
	"net"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/valyala/fasthttp"
)

// countsFor is a MerchantAccountStore that counts for one account; closing
// is tested against the real database (e2e).
type countsFor map[string]map[string]int64

func (c countsFor) MerchantAccountUsage(_ context.Context, id string) (map[string]int64, error) {
	if id == "broken" {
		return nil, errors.New("database down")
	}
	return c[id], nil
}

func (c countsFor) CloseMerchantAccount(context.Context, string, uuid.UUID) (map[string]int64, bool, error) {
	return nil, false, errors.New("not in this test")
}

func (c countsFor) ReopenMerchantAccount(context.Context, string) (map[string]int64, bool, error) {
	return nil, false, errors.New("not in this test")
}

func (c countsFor) CancelCloseMerchantAccount(context.Context, string, uuid.UUID) error {
	return errors.New("not in this test")
}

func TestMerchantAccountUsage(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	store := countsFor{"acme": {"vault-forward-configs": 1, "payment-methods": 0, "network-tokens": 2}}
	rt.Handle(fasthttp.MethodGet, httpapi.MerchantAccountUsagePath, (&httpapi.MerchantAccounts{Store: store}).Usage)

	for _, tc := range []struct {
		name, path string
		status     int
		want       *zone.MerchantAccountUsage // for 200
		code       string                     // for errors
	}{
		{"every count, sorted by resource", "/internal/merchant-accounts/acme/usage", fasthttp.StatusOK, &zone.MerchantAccountUsage{
			Type: "merchant-account-usage", MerchantAccountID: "acme", Records: []zone.UsageRecord{
				{Resource: "network-tokens", Count: 2}, {Resource: "payment-methods", Count: 0}, {Resource: "vault-forward-configs", Count: 1}}}, ""},
		{"an id that cannot be an account", "/internal/merchant-accounts/Acme%20Corp/usage", fasthttp.StatusBadRequest, nil, apierror.CodeBadRequest},
		{"the store fails", "/internal/merchant-accounts/broken/usage", fasthttp.StatusInternalServerError, nil, apierror.CodeServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req fasthttp.Request
			req.SetRequestURI(tc.path)
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
			rt.Handler()(&ctx)

			body := ctx.Response.Body()
			if ctx.Response.StatusCode() != tc.status {
				t.Fatalf("= %d %s, want %d", ctx.Response.StatusCode(), body, tc.status)
			}
			if tc.want == nil {
				if e, err := apierror.Parse(body); err != nil || e.Code != tc.code {
					t.Fatalf("error body %s (%v), want code %s", body, err, tc.code)
				}
				return
			}
			var got zone.MerchantAccountUsage
			if err := json.Unmarshal(body, &got); err != nil || !reflect.DeepEqual(&got, tc.want) {
				t.Fatalf("= %s (%v), want %+v", body, err, tc.want)
			}
		})
	}
}
