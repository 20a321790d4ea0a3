package httpapi

import (
	"net/url"
	"testing"
)

func TestCanonicalHostAndHostListed(t *testing.T) {
	for _, tc := range []struct {
		raw, host string
		entries   []string
		listed    bool
	}{
		{"https://API.Example.com:443/x", "api.example.com", []string{"api.example.com"}, true},
		{"https://api.example.com./x", "api.example.com", []string{"api.example.com"}, true},
		{"https://api.example.com:8443/x", "api.example.com:8443", []string{"api.example.com"}, false},
		{"https://api.example.com:8443/x", "api.example.com:8443", []string{"api.example.com:8443"}, true},
		{"http://api.example.com/x", "api.example.com", []string{"api.example.com:443"}, false},
		{"http://api.example.com:80/x", "api.example.com", []string{"api.example.com:80"}, true},
		{"https://127.0.0.1:9999/", "127.0.0.1:9999", []string{"127.0.0.1:9999"}, true},
		{"https://127.0.0.1:9998/", "127.0.0.1:9998", []string{"127.0.0.1:9999"}, false},
		{"https://[::1]:9999/", "[::1]:9999", []string{"[::1]:9999"}, true},
		{"https://[0:0::1]/", "[::1]", []string{"[::1]"}, true},
		{"https://evil.example/", "evil.example", []string{"api.example.com", "example"}, false},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		canonicalHost(u)
		if u.Host != tc.host {
			t.Errorf("%s: host %q, want %q", tc.raw, u.Host, tc.host)
		}
		if got := hostListed(tc.entries, u); got != tc.listed {
			t.Errorf("%s in %v: %v, want %v", tc.raw, tc.entries, got, tc.listed)
		}
	}
}

func TestParseIDs(t *testing.T) {
	a, b := "0b6d2c3e-1f7a-4d2b-9c1e-111111111111", "0b6d2c3e-1f7a-4d2b-9c1e-222222222222"
	for _, tc := range []struct {
		in       string
		max      int
		distinct bool
		n        int
		ok       bool
	}{
		{a, 100, false, 1, true},
		{a + ", " + b, 100, false, 2, true},
		{a + "," + a, 100, false, 2, true},
		{a + "," + a, 10, true, 0, false},
		{"", 100, false, 0, false},
		{a + ",", 100, false, 0, false},
		{"{" + a + "}", 100, false, 0, false},
		{a + "," + b, 1, false, 0, false},
	} {
		ids, ok := parseIDs(tc.in, tc.max, tc.distinct)
		if ok != tc.ok || len(ids) != tc.n {
			t.Errorf("parseIDs(%q): %d ids, ok=%v", tc.in, len(ids), ok)
		}
	}
}
