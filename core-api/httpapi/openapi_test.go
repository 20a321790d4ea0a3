package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/shared/apierror"
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

// The routes that take an Idempotency-Key share one description of the
// header and of its errors, the way the code checks and answers them.
func TestOpenAPIDescribesIdempotencyKeys(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Components.Parameters["IdempotencyKey"]
	if p == nil || p.Value.Name != idempotency.Header || p.Value.In != "header" || p.Value.Required {
		t.Fatalf("components/parameters/IdempotencyKey = %+v, want the optional %s header", p, idempotency.Header)
	}
	if s := p.Value.Schema.Value; s.MinLength != 1 || s.MaxLength == nil || *s.MaxLength != idempotency.MaxKeyLength {
		t.Errorf("IdempotencyKey length %d..%v, want 1..%d", s.MinLength, s.MaxLength, idempotency.MaxKeyLength)
	}
	if doc.Components.Headers[httpapi.ReplayedHeader] == nil {
		t.Errorf("components/headers/%s is missing", httpapi.ReplayedHeader)
	}
	for name, code := range map[string]string{
		"IdempotencyKeyReused": apierror.CodeIdempotencyKeyReused,
		"ConcurrentRequest":    apierror.CodeConcurrentRequest,
	} {
		r := doc.Components.Responses[name]
		if r == nil {
			t.Errorf("components/responses/%s is missing", name)
			continue
		}
		if b, _ := json.Marshal(r.Value); !strings.Contains(string(b), `"`+code+`"`) {
			t.Errorf("components/responses/%s does not name %s", name, code)
		}
	}
}
