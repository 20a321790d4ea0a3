// Package web serves the merchant dashboard's single-page app: a page and
// its assets, all embedded in core-api (no CDN). dist/app.js is built from
// src/ by esbuild (npm run build) and committed, so building core-api
// needs no Node.js; `make dashboard-check` rebuilds it and fails when the
// committed file differs (docs/dashboard.md).
package web

import (
	"embed"
	"html/template"
	"net/http"
	"strings"
)

//go:embed dist/app.js static/app.css
var assets embed.FS

var page = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="payorch-vault-proxy" content="{{.VaultProxyURL}}">
<title>payorch dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/app.css">
</head>
<body>
<div id="app"></div>
<script type="module" src="/dashboard/assets/app.js"></script>
</body>
</html>
`))

// Handler serves the page at / and the assets under /dashboard/assets/.
type Handler struct {
	// VaultProxyURL is vault-proxy's public base URL, which the page calls
	// directly (never through core-api) for what it sends there.
	VaultProxyURL string
}

// securityHeaders lock the page to its own scripts and styles, and to
// calling core-api and vault-proxy only.
func (h Handler) securityHeaders(w http.ResponseWriter) {
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'"
	if h.VaultProxyURL != "" {
		csp += " " + h.VaultProxyURL
	}
	csp += "; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// Page serves the app's one HTML page.
func (h Handler) Page(w http.ResponseWriter, r *http.Request) error {
	h.securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	return page.Execute(w, struct{ VaultProxyURL string }{strings.TrimRight(h.VaultProxyURL, "/")})
}

// Asset serves app.js or app.css; anything else is false.
func (h Handler) Asset(w http.ResponseWriter, name string) (bool, error) {
	var path, ctype string
	switch name {
	case "app.js":
		path, ctype = "dist/app.js", "text/javascript; charset=utf-8"
	case "app.css":
		path, ctype = "static/app.css", "text/css; charset=utf-8"
	default:
		return false, nil
	}
	b, err := assets.ReadFile(path)
	if err != nil {
		return false, err
	}
	h.securityHeaders(w)
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	_, err = w.Write(b)
	return true, err
}
