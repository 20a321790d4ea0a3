package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPIDocument is core-api's OpenAPI 3.1 description, embedded so the
// binary serves exactly the document it was built with. The end-to-end
// tests validate every response they receive against it, so a handler and
// the document cannot drift apart unnoticed.
//
//go:embed openapi.json
var OpenAPIDocument []byte

// serveOpenAPI answers GET /openapi.json (no token: it holds no data).
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(OpenAPIDocument)
	return err
}
