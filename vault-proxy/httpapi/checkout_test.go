package httpapi_test

import (
	"testing"

	"github.com/payorch/vault-proxy/httpapi"
)

// An allowed origin goes into the field page's frame-ancestors and is
// compared with the origin browsers give postMessage: only a plain origin,
// in the browser's form, is taken.
func TestNormalizeOrigin(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"https://shop.example", "https://shop.example", true},
		{"https://Shop.Example:443/", "https://shop.example", true},
		{"https://shop.example:8443", "https://shop.example:8443", true},
		{"http://localhost:8080", "http://localhost:8080", true},
		{"http://127.0.0.1", "http://127.0.0.1", true},
		{"http://shop.example", "", false}, // http only on loopback
		{"https://shop.example/checkout", "", false},
		{"https://shop.example?x=1", "", false},
		{"https://*.shop.example", "", false},
		{"https://user@shop.example", "", false},
		{"https://a.example; script-src *", "", false},
		{"javascript:alert(1)", "", false},
		{"data:text/html,x", "", false},
		{"shop.example", "", false},
		{"", "", false},
	} {
		got, ok := httpapi.NormalizeOrigin(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
