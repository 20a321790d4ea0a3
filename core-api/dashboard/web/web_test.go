package web_test

import (
	"strings"
	"testing"

	"github.com/payorch/core-api/dashboard/web"
)

func TestPage(t *testing.T) {
	var b strings.Builder
	site := web.Site{VaultProxyURL: `https://vp.example/"><script>`, Environment: "sandbox"}
	if err := site.WritePage(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, `"><script>`) {
		t.Errorf("the vault-proxy URL is not escaped: %s", page)
	}
	for _, want := range []string{`<script type="module" src="/dashboard/assets/app.js">`, `content="sandbox"`, `<html lang="en">`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "cdn") {
		t.Error("the page loads something from elsewhere")
	}
}

func TestCSP(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"", "connect-src 'self';"},
		{"https://127.0.0.1:8443/", "connect-src 'self' https://127.0.0.1:8443;"},
	} {
		csp := web.Site{VaultProxyURL: c.url}.CSP()
		if !strings.Contains(csp, c.want) || !strings.Contains(csp, "script-src 'self';") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("CSP(%q) = %q", c.url, csp)
		}
	}
}

func TestAsset(t *testing.T) {
	for _, c := range []struct {
		name, ctype string
		ok          bool
	}{
		{"app.js", "text/javascript; charset=utf-8", true},
		{"app.css", "text/css; charset=utf-8", true},
		{"web.go", "", false},
		{"../web.go", "", false},
		{"", "", false},
	} {
		data, ctype, ok := web.Asset(c.name)
		if ok != c.ok || ctype != c.ctype || ok && len(data) == 0 {
			t.Errorf("Asset(%q) = %d bytes, %q, %v", c.name, len(data), ctype, ok)
		}
	}
}
