// Package web holds the merchant dashboard's single-page app: its page
// and assets, all embedded in core-api (no CDN); httpapi serves them.
// dist/app.js is built from src/ by esbuild (npm run build) and
// committed, so building core-api needs no Node.js; `make
// dashboard-check` rebuilds it and fails when the committed file differs
// (docs/dashboard.md).
package web

import (
	"embed"
	"html/template"
	"io"
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
<meta name="payorch-environment" content="{{.Environment}}">
<title>payorch dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/app.css">
</head>
<body>
<div id="app"></div>
<script type="module" src="/dashboard/assets/app.js"></script>
</body>
</html>
`))

// Site is one instance's dashboard.
type Site struct {
	// VaultProxyURL is vault-proxy's public base URL, which the page calls
	// directly (never through core-api) for what it sends there.
	VaultProxyURL string
	// Environment (sandbox, development, production) decides which pages
	// exist: the 3-D Secure scenarios only outside production.
	Environment string
}

// CSP is the page's Content-Security-Policy: its own script and style
// only, and calls to core-api and vault-proxy only.
func (s Site) CSP() string {
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'"
	if u := strings.TrimRight(s.VaultProxyURL, "/"); u != "" {
		csp += " " + u
	}
	return csp + "; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// WritePage writes the app's one HTML page.
func (s Site) WritePage(w io.Writer) error {
	return page.Execute(w, Site{VaultProxyURL: strings.TrimRight(s.VaultProxyURL, "/"), Environment: s.Environment})
}

// Asset returns app.js or app.css with its content type; ok is false for
// any other name.
func Asset(name string) (data []byte, contentType string, ok bool) {
	var path string
	switch name {
	case "app.js":
		path, contentType = "dist/app.js", "text/javascript; charset=utf-8"
	case "app.css":
		path, contentType = "static/app.css", "text/css; charset=utf-8"
	default:
		return nil, "", false
	}
	data, err := assets.ReadFile(path)
	if err != nil {
		return nil, "", false // cannot happen: both are embedded
	}
	return data, contentType, true
}
