package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payorch/core-api/httpapi"
)

// The embedded document is a valid OpenAPI 3.1 document (kin-openapi's
// loader and validator; it is a test-only dependency of this module).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpapi.OpenAPIDocument)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	for _, name := range []string{"Error", "ErrorDetail", "Buyer", "BillingDetails", "Address", "BuyerSummary",
		"BuyerPage", "PaymentMethod", "PaymentMethodPage", "GiftCardSummary", "MerchantAccount", "MerchantAccountPage", "Health", "Ready"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("components/schemas/%s is missing", name)
		}
	}
	// Every operation documents its errors with the shared Error responses.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code, r := range op.Responses.Map() {
				isError := len(code) == 3 && (code[0] == '4' || code[0] == '5') && path != "/readyz" // readiness answers 503 with its own body
				if isError && !strings.HasPrefix(r.Ref, "#/components/responses/") {
					t.Errorf("%s %s: response %s is not a shared error response", method, path, code)
				}
			}
		}
	}
}

// GET /openapi.json serves the embedded bytes, without a token.
func TestOpenAPIServed(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	httpapi.Routes(rt, httpapi.Deps{})
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || string(body) != string(httpapi.OpenAPIDocument) {
		t.Fatalf("GET /openapi.json = %d %q, %d bytes", rec.Code, rec.Header().Get("Content-Type"), len(body))
	}
}
