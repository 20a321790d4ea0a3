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

// countsFor is a MerchantAccountStore that counts for one account and
// closes nothing; closing itself is tested against the real database
// (postgres, e2e). These tests are of the routes' input and output.
type countsFor map[string]map[string]int64

func (c countsFor) MerchantAccountUsage(_ context.Context, id string) (map[string]int64, error) {
	if id == "broken" {
		return nil, errors.New("database down")
	}
	return c[id], nil
}

func (c countsFor) CloseMerchantAccount(_ context.Context, id string, _ uuid.UUID) (map[string]int64, bool, error) {
	return c[id], false, nil
}

func (c countsFor) ReopenMerchantAccount(context.Context, string) (map[string]int64, bool, error) {
	return nil, false, errors.New("not in this test")
}

func (c countsFor) CancelCloseMerchantAccount(context.Context, string, uuid.UUID) error { return nil }

func TestMerchantAccountUsage(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	store := countsFor{"acme": {"vault-forward-configs": 1, "payment-methods": 0, "network-tokens": 2}}
	rt.Handle(fasthttp.MethodGet, zone.MerchantAccountUsagePath, (&httpapi.MerchantAccounts{Store: store}).Usage)

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
			status, body := serveInternal(rt, fasthttp.MethodGet, tc.path, "")
			if status != tc.status {
				t.Fatalf("= %d %s, want %d", status, body, tc.status)
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

// The closure routes take the deletion attempt's id, and refuse a body
// that does not give exactly that, before the store is asked.
func TestMerchantAccountClosureRoutesRefuseBadBodies(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	h := &httpapi.MerchantAccounts{Store: countsFor{"acme": {"vault-forward-configs": 1}}}
	rt.Handle(fasthttp.MethodPost, zone.MerchantAccountClosePath, h.Close)
	rt.Handle(fasthttp.MethodPost, zone.MerchantAccountCancelClosePath, h.CancelClose)
	attempt := `{"attempt_id":"` + uuid.NewString() + `"}`

	for _, tc := range []struct {
		name, path, body string
		status           int
		pointer          string // of the one detail, if any
	}{
		{"close", "/internal/merchant-accounts/acme/close", attempt, fasthttp.StatusOK, ""},
		{"cancel", "/internal/merchant-accounts/acme/cancel-close", attempt, fasthttp.StatusNoContent, ""},
		{"no body", "/internal/merchant-accounts/acme/close", "", fasthttp.StatusBadRequest, ""},
		{"not an object", "/internal/merchant-accounts/acme/close", `["x"]`, fasthttp.StatusBadRequest, ""},
		{"an unknown field", "/internal/merchant-accounts/acme/cancel-close", `{"attempt_id":"` + uuid.NewString() + `","id":"x"}`, fasthttp.StatusBadRequest, ""},
		{"no attempt id", "/internal/merchant-accounts/acme/close", `{}`, fasthttp.StatusBadRequest, "/attempt_id"},
		{"an attempt id that is not a UUID", "/internal/merchant-accounts/acme/cancel-close", `{"attempt_id":"first"}`, fasthttp.StatusBadRequest, "/attempt_id"},
		{"an id that cannot be an account", "/internal/merchant-accounts/Acme%20Corp/close", attempt, fasthttp.StatusBadRequest, "merchant_account_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := serveInternal(rt, fasthttp.MethodPost, tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("= %d %s, want %d", status, body, tc.status)
			}
			switch tc.status {
			case fasthttp.StatusOK:
				var got zone.MerchantAccountClosure
				if err := json.Unmarshal(body, &got); err != nil || got.Type != "merchant-account-closure" || got.MerchantAccountID != "acme" ||
					got.Closed || len(got.Records) != 1 || got.Records[0].Count != 1 {
					t.Fatalf("= %s (%v), want acme not closed, with its config counted", body, err)
				}
			case fasthttp.StatusBadRequest:
				e, err := apierror.Parse(body)
				if err != nil || e.Code != apierror.CodeBadRequest || (tc.pointer != "" && (len(e.Details) != 1 || e.Details[0].Pointer != tc.pointer)) {
					t.Fatalf("= %s (%v), want bad_request with a detail on %q", body, err, tc.pointer)
				}
			}
		})
	}
}

// serveInternal runs one request through rt, as the internal listener
// would, with header's name and value pairs, and returns the answer's
// status and body.
func serveInternal(rt *httpapi.Router, method, path, body string, header ...string) (int, []byte) {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.SetBodyString(body)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	rt.Handler()(&ctx)
	return ctx.Response.StatusCode(), ctx.Response.Body()
}
