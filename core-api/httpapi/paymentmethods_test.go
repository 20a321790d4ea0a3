package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
)

// A /payment-methods/{id} id that cannot be valid (not a UUID) is 400 with
// a detail at location path, before any look at the database (the Deps
// here have none): docs/api-conventions.md. A well-formed id the merchant
// account does not have is 404 (e2e TestPaymentMethodBadRequests).
func TestPaymentMethodPathIDMustBeAUUID(t *testing.T) {
	const issuer = "test"
	priv, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys := auth.NewKeySet()
	if _, err := keys.Add(&priv.PublicKey, issuer); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	token, err := auth.Mint(priv, issuer, []string{"payment-methods.write"}, time.Hour, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	httpapi.Routes(rt, httpapi.Deps{Log: slog.New(slog.DiscardHandler), Auth: &httpapi.Auth{
		Verifier: v, Exists: func(context.Context, string) (bool, error) { return true, nil },
	}})

	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/payment-methods/abc", ""},
		{http.MethodGet, "/payment-methods/0192f3a4-5b6c-7d8e-9f00", ""}, // too short
		{http.MethodGet, "/payment-methods/0192f3a4-5b6c-7d8e-9f00-112233445566-", ""},
		{http.MethodPut, "/payment-methods/abc", "{}"},
		{http.MethodDelete, "/payment-methods/abc", ""},
		{http.MethodDelete, "/payment-methods/%20", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+token)
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			e, err := apierror.Parse(rec.Body.Bytes())
			if rec.Code != http.StatusBadRequest || err != nil || e.Code != "bad_request" {
				t.Fatalf("= %d %s (%v), want 400 bad_request", rec.Code, rec.Body.Bytes(), err)
			}
			if len(e.Details) != 1 || e.Details[0].Location != apierror.LocationPath || e.Details[0].Pointer != "id" || e.Details[0].Type != "type_error.uuid" {
				t.Fatalf("details %+v, want one at path id", e.Details)
			}
		})
	}
}
