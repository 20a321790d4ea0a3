package httpapi

import (
	_ "embed"

	"github.com/valyala/fasthttp"
)

// OpenAPIDocument is vault-proxy's OpenAPI 3.1 description (public and
// internal listeners), embedded so the binary serves exactly the document
// it was built with. The end-to-end tests validate every response they
// receive against it.
//
//go:embed openapi.json
var OpenAPIDocument []byte

// OpenAPI answers GET /openapi.json (no token: it holds no data).
func OpenAPI(ctx *fasthttp.RequestCtx) error {
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBody(OpenAPIDocument)
	return nil
}
