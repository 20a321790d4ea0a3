package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/apierror"
)

// An id that cannot be valid is 400 with a detail where it was sent,
// before any look at the database (the Deps here have none):
// docs/api-conventions.md. A UUID in upper case is not one: ids are
// written in lower case, in the path as in queries and bodies. A
// well-formed id the merchant account does not have is 404 (e2e
// TestPaymentMethodBadRequests).
func TestIDsMustBeLowerCaseUUIDs(t *testing.T) {
	a, token := testAuth(t, "payment-methods.write", "payment-methods.read", "buyers.write", "buyers.read")
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	httpapi.Routes(rt, httpapi.Deps{Log: slog.New(slog.DiscardHandler), Auth: a})

	const upper = "0192F3A4-5B6C-7D8E-9F00-112233445566"
	path := func(pointer string) apierror.Detail {
		return apierror.Detail{Location: apierror.LocationPath, Pointer: pointer, Type: "type_error.uuid"}
	}
	query := apierror.Detail{Location: apierror.LocationQuery, Pointer: "buyer_id", Type: "value_error.uuid"}
	for _, tc := range []struct {
		method, path, body string
		want               apierror.Detail // its message is not compared
	}{
		{http.MethodGet, "/payment-methods/abc", "", path("id")},
		{http.MethodGet, "/payment-methods/0192f3a4-5b6c-7d8e-9f00", "", path("id")}, // too short
		{http.MethodGet, "/payment-methods/0192f3a4-5b6c-7d8e-9f00-112233445566-", "", path("id")},
		{http.MethodGet, "/payment-methods/" + upper, "", path("id")},
		{http.MethodGet, "/payment-methods/0192f3a4-5b6c-7d8e-9f00-11223344556A", "", path("id")}, // one capital
		{http.MethodPut, "/payment-methods/abc", "{}", path("id")},
		{http.MethodPut, "/payment-methods/" + upper, "{}", path("id")},
		{http.MethodDelete, "/payment-methods/abc", "", path("id")},
		{http.MethodDelete, "/payment-methods/%20", "", path("id")},
		{http.MethodDelete, "/payment-methods/" + upper, "", path("id")},
		{http.MethodGet, "/buyers/abc", "", path("buyer_id")},
		{http.MethodGet, "/buyers/" + upper, "", path("buyer_id")},
		{http.MethodPut, "/buyers/" + upper, "{}", path("buyer_id")},
		{http.MethodDelete, "/buyers/" + upper, "", path("buyer_id")},
		{http.MethodGet, "/payment-methods?buyer_id=" + upper, "", query},
		{http.MethodGet, "/buyers/payment-methods?buyer_id=" + upper, "", query},
		{http.MethodGet, "/buyers/gift-cards?buyer_id=" + upper, "", query},
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
			if d := e.Details; len(d) != 1 || d[0].Location != tc.want.Location || d[0].Pointer != tc.want.Pointer || d[0].Type != tc.want.Type {
				t.Fatalf("details %+v, want one like %+v", e.Details, tc.want)
			}
		})
	}
}
