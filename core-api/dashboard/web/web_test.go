package web_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/payorch/core-api/connector"
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

// The payment service form's connectors (src/connectors.json) are the
// connectors payment services configure, with their schemas' methods,
// settings and credentials: the API publishes no list, so the page's copy
// is held to the Go declarations here.
func TestConnectorFormsMatchSchemas(t *testing.T) {
	raw, err := os.ReadFile("src/connectors.json")
	if err != nil {
		t.Fatal(err)
	}
	type setting struct{ Name, Kind string }
	var page map[string]struct {
		Methods     []string
		Settings    []setting
		Credentials []string
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatal(err)
	}
	// Every connector core-api registers outside production (app/services.go).
	configurable := []connector.Configurable{connector.MockCard{}, connector.MockBank{}, connector.MockDirect{},
		connector.MockRedirect{}, connector.MockAntiFraud{}}
	if len(page) != len(configurable) {
		t.Errorf("the page knows %d connectors, Go declares %d", len(page), len(configurable))
	}
	for _, c := range configurable {
		got, ok := page[c.Name()]
		if !ok {
			t.Errorf("the page does not know %s", c.Name())
			continue
		}
		sc := c.Schemas()
		var settings []setting
		for _, f := range sc.Settings {
			settings = append(settings, setting{f.Name, string(f.Kind)})
		}
		var creds []string
		for _, f := range sc.Credentials {
			creds = append(creds, f.Name)
		}
		if !slices.Equal(got.Methods, sc.Methods) || !slices.Equal(got.Settings, settings) || !slices.Equal(got.Credentials, creds) {
			t.Errorf("%s: the page has %+v, Go declares methods %v, settings %v, credentials %v", c.Name(), got, sc.Methods, settings, creds)
		}
	}
}
