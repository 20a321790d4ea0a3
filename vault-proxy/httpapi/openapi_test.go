package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/valyala/fasthttp"
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
	for _, name := range []string{"Error", "ErrorDetail", "PaymentMethod", "Health", "Ready", "AuditEvent", "AuditEventPage",
		"ForwardConfig", "ForwardConfigPage", "AuthenticationMethod", "CardMetadata", "DetokenizeRequest", "DetokenizeResponse",
		"VaultedRecordPage", "VaultedRecord"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("components/schemas/%s is missing", name)
		}
	}
	for path, item := range doc.Paths.Map() {
		internal := strings.HasPrefix(path, "/internal/")
		for method, op := range item.Operations() {
			for code, r := range op.Responses.Map() {
				isError := len(code) == 3 && (code[0] == '4' || code[0] == '5') && path != "/readyz" // readiness answers 503 with its own body
				if isError && !strings.HasPrefix(r.Ref, "#/components/responses/") {
					t.Errorf("%s %s: response %s is not a shared error response", method, path, code)
				}
			}
			tagged := len(op.Tags) == 1 && op.Tags[0] == "internal"
			if internal != tagged {
				t.Errorf("%s %s: internal routes, and only they, are tagged internal (tags %v)", method, path, op.Tags)
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	var ctx fasthttp.RequestCtx
	if err := httpapi.OpenAPI(&ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Header.ContentType()) != "application/json" ||
		string(ctx.Response.Body()) != string(httpapi.OpenAPIDocument) {
		t.Fatalf("got %d %q", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
	}
}
