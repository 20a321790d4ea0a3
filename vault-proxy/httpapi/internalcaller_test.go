package httpapi_test

import (
	"strings"
	"testing"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
	"github.com/valyala/fasthttp"
)

// TestInternalRoutesNeedTheMerchantHeader: core-api names the merchant
// account on every call to the internal listener. A call without it is
// refused before anything is read for it, rather than served in the
// account "default": a caller that lost the header must not act in
// another merchant's account.
func TestInternalRoutesNeedTheMerchantHeader(t *testing.T) {
	rt := internalRouter() // the header is checked before the vault is reached

	// A token that is not a UUID is 404 and an empty detokenize body 400
	// on the body, both after the header was accepted.
	routes := []struct {
		method, path string
		accepted     int
	}{
		{fasthttp.MethodGet, zone.CardPathPrefix + "not-a-token", fasthttp.StatusNotFound},
		{fasthttp.MethodPut, zone.CardPathPrefix + "not-a-token", fasthttp.StatusNotFound},
		{fasthttp.MethodDelete, zone.CardPathPrefix + "not-a-token", fasthttp.StatusNotFound},
		{fasthttp.MethodDelete, zone.SecurityCodeHold("not-a-token", "0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"), fasthttp.StatusNotFound},
		{fasthttp.MethodPost, zone.DetokenizePath, fasthttp.StatusBadRequest},
	}
	for _, r := range routes {
		for _, tc := range []struct {
			name   string
			header []string
		}{
			{"no header", nil},
			{"empty header", []string{accountid.Header, ""}},
		} {
			t.Run(r.method+" "+r.path+" "+tc.name, func(t *testing.T) {
				status, body := serveInternal(rt, r.method, r.path, "", tc.header...)
				e, err := apierror.Parse(body)
				if status != fasthttp.StatusBadRequest || err != nil || e.Code != apierror.CodeBadRequest || len(e.Details) != 1 ||
					e.Details[0] != (apierror.Detail{Location: apierror.LocationHeader, Pointer: accountid.Header,
						Message: e.Details[0].Message, Type: "value_error.missing"}) {
					t.Fatalf("= %d %s (%v), want 400 with a value_error.missing detail on the header", status, body, err)
				}
			})
		}
		t.Run(r.method+" "+r.path+" with the header", func(t *testing.T) {
			status, body := serveInternal(rt, r.method, r.path, "", accountid.Header, "acme")
			if e, _ := apierror.Parse(body); status != r.accepted || (e != nil && len(e.Details) > 0 && e.Details[0].Pointer == accountid.Header) {
				t.Fatalf("= %d %s, want %d past the header", status, body, r.accepted)
			}
		})
	}
}

// A transaction id too long to be one is refused at the path, in the
// error shape, before any hold is looked for.
func TestForgetChallengeSecurityCodeRefusesALongTransactionID(t *testing.T) {
	const token = "0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"
	status, body := serveInternal(internalRouter(), fasthttp.MethodDelete, zone.SecurityCodeHold(token, strings.Repeat("7", 101)), "",
		accountid.Header, "acme")
	e, err := apierror.Parse(body)
	if status != fasthttp.StatusBadRequest || err != nil || len(e.Details) != 1 ||
		e.Details[0].Location != apierror.LocationPath || e.Details[0].Pointer != "transaction_id" {
		t.Fatalf("= %d %s (%v), want 400 at the path's transaction_id", status, body, err)
	}
}
