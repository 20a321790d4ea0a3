package outbound

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/shared/netguard"
	"github.com/valyala/fasthttp"
)

func TestParseAuthority(t *testing.T) {
	for _, tt := range []struct {
		in    string
		https bool
		want  rule
		host  string
		port  uint16
		auth  string // canonical authority
	}{
		{in: "api.processor.example", https: true, host: "api.processor.example", port: 443, auth: "api.processor.example"},
		{in: "API.Processor.Example.", https: true, host: "api.processor.example", port: 443, auth: "api.processor.example"},
		{in: "api.processor.example:443", https: true, host: "api.processor.example", port: 443, auth: "api.processor.example"},
		{in: "api.processor.example:8443", https: true, host: "api.processor.example", port: 8443, auth: "api.processor.example:8443"},
		{in: "api.processor.example:", https: false, host: "api.processor.example", port: 80, auth: "api.processor.example"},
		{in: "xn--bcher-kva.example", https: true, host: "xn--bcher-kva.example", port: 443, auth: "xn--bcher-kva.example"},
		{in: "_srv.example", https: true, host: "_srv.example", port: 443, auth: "_srv.example"},
		{in: "1.2.3.example", https: true, host: "1.2.3.example", port: 443, auth: "1.2.3.example"},
		{in: "cafe.be", https: true, host: "cafe.be", port: 443, auth: "cafe.be"}, // hex-looking letters are fine
		{in: "127.0.0.1:9999", host: "127.0.0.1", port: 9999, auth: "127.0.0.1:9999"},
		{in: "[::1]:9999", host: "::1", port: 9999, auth: "[::1]:9999"},
		{in: "[2001:DB8:0:0::1]", https: true, host: "2001:db8::1", port: 443, auth: "[2001:db8::1]"},
		{in: "[::ffff:127.0.0.1]", host: "::ffff:127.0.0.1", port: 80, auth: "[::ffff:127.0.0.1]"},

		{in: "", want: ruleURLEmptyHost},
		{in: ":80", want: ruleURLEmptyHost},
		{in: "2130706433", want: ruleURLNonCanonicalIP},
		{in: "0177.0.0.1", want: ruleURLNonCanonicalIP},
		{in: "0x7f.1", want: ruleURLNonCanonicalIP},
		{in: "0x7f000001", want: ruleURLNonCanonicalIP},
		{in: "127.1", want: ruleURLNonCanonicalIP},
		{in: "127.0.1", want: ruleURLNonCanonicalIP},
		{in: "127.0.0.01", want: ruleURLNonCanonicalIP},
		{in: "1.2.3.4.5", want: ruleURLNonCanonicalIP},
		{in: "256.0.0.1", want: ruleURLNonCanonicalIP},
		{in: "example.0x1f", want: ruleURLNonCanonicalIP},
		{in: "example.123", want: ruleURLNonCanonicalIP},
		{in: "0x", want: ruleURLNonCanonicalIP},
		{in: "localhost..", want: ruleURLHostChars},
		{in: ".example", want: ruleURLHostChars},
		{in: "a..example", want: ruleURLHostChars},
		{in: "-a.example", want: ruleURLHostChars},
		{in: "a b.example", want: ruleURLHostChars},
		{in: "a%2e.example", want: ruleURLHostChars},
		{in: "a@b.example", want: ruleURLHostChars},
		{in: "a\\b.example", want: ruleURLHostChars},
		{in: "::1", want: ruleURLHostChars},
		{in: "[::1", want: ruleURLHostChars},
		{in: "[::1]x", want: ruleURLHostChars},
		{in: "[127.0.0.1]", want: ruleURLHostChars},
		{in: "[fe80::1%eth0]", want: ruleURLZone},
		{in: "[fe80::1%25eth0]", want: ruleURLZone},
		{in: "b\u00fccher.example", want: ruleURLNonASCIIHost},
		{in: "\uff11\uff12\uff17.\uff10.\uff10.\uff11", want: ruleURLNonASCIIHost},
		{in: strings.Repeat("a", 64) + ".example", want: ruleURLHostChars},
		{in: strings.Repeat("a.", 127) + "ab", want: ruleURLHostChars},
		{in: "example.com:0", want: ruleURLPort},
		{in: "example.com:65536", want: ruleURLPort},
		{in: "example.com:99999", want: ruleURLPort},
		{in: "example.com:080", want: ruleURLPort},
		{in: "example.com:+80", want: ruleURLPort},
		{in: "example.com:8o", want: ruleURLPort},
		{in: "example.com:80:80", want: ruleURLHostChars},
	} {
		var d destination
		got := parseAuthority(tt.in, tt.https, &d)
		if got != tt.want {
			t.Errorf("parseAuthority(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		if got != ruleOK {
			continue
		}
		if d.host != tt.host || d.port != tt.port || d.authority() != tt.auth {
			t.Errorf("parseAuthority(%q) = host %q port %d authority %q, want %q %d %q", tt.in, d.host, d.port, d.authority(), tt.host, tt.port, tt.auth)
		}
		if !d.sameAuthority(tt.auth) {
			t.Errorf("sameAuthority(%q) false for its own canonical form", tt.auth)
		}
	}
}

// TestCheckName: a destination's name is judged by netguard's name rules
// (netguard's tests hold the table), its IP literal by the address rules.
func TestCheckName(t *testing.T) {
	for _, tt := range []struct {
		host     string
		loopback bool
		want     rule
	}{
		{"api.processor.example", false, ruleOK},
		{"localhost", false, guardRule(netguard.NameLocalhost)},
		{"localhost", true, ruleOK},
		{"metadata.google.internal", true, guardRule(netguard.NameMetadata)},
		{"vault.internal", false, guardRule(netguard.NameReserved)},
		{"127.0.0.1", false, ruleOK}, // IP literals are judged by checkAddr
	} {
		var d destination
		if r := parseAuthority(tt.host, true, &d); r != ruleOK {
			t.Fatalf("parseAuthority(%q): %v", tt.host, r)
		}
		if got := checkName(&d, tt.loopback); got != tt.want {
			t.Errorf("checkName(%q, %v) = %v, want %v", tt.host, tt.loopback, got, tt.want)
		}
	}
}

// Error.Rule is netguard's word for its refusals, and only its address
// rules are reported as refused addresses.
func TestGuardRules(t *testing.T) {
	if guardRule(netguard.Allowed) != ruleOK {
		t.Fatal("an allowed destination is a refusal")
	}
	for v := netguard.NameLocalhost; v <= netguard.AddrZone; v++ {
		r := guardRule(v)
		if r.String() != v.String() || r.isAddressRule() != v.IsAddress() {
			t.Errorf("verdict %v: rule %v, address rule %v", v, r, r.isAddressRule())
		}
	}
	for r := ruleOK; r < ruleGuard; r++ {
		if r.isAddressRule() {
			t.Errorf("%v is not netguard's, yet an address rule", r)
		}
	}
}

func TestMatchEntry(t *testing.T) {
	for _, tt := range []struct {
		entry, url string
		want       bool
	}{
		{"api.processor.example", "https://api.processor.example/", true},
		{"API.processor.example.", "https://api.processor.example/x", true},
		{"api.processor.example", "http://api.processor.example/", true},
		{"api.processor.example", "https://api.processor.example:8443/", false},
		{"api.processor.example:8443", "https://api.processor.example:8443/", true},
		{"api.processor.example:443", "https://api.processor.example/", true},
		{"api.processor.example:443", "http://api.processor.example/", false},
		{"processor.example", "https://api.processor.example/", false},
		{"api.processor.example", "https://processor.example/", false},
		{"127.0.0.1:9999", "http://127.0.0.1:9999/", true},
		{"127.0.0.1", "http://127.0.0.1:9999/", false},
		{"127.000.0.1:9999", "http://127.0.0.1:9999/", false},
		{"[::1]:9999", "http://[::1]:9999/", true},
		{"[0:0::1]:9999", "http://[::1]:9999/", true},
		{"::1", "http://[::1]/", false},
		{"[::1]", "http://127.0.0.1/", false},
		{"", "http://127.0.0.1/", false},
		{":80", "http://127.0.0.1/", false},
		{"api.processor.example:0443", "https://api.processor.example/", false},
	} {
		var u fasthttp.URI
		if err := u.Parse(nil, []byte(tt.url)); err != nil {
			t.Fatal(err)
		}
		https, _ := parseScheme(string(u.Scheme()))
		var d destination
		if r := parseAuthority(string(u.Host()), https, &d); r != ruleOK {
			t.Fatalf("%s: %v", tt.url, r)
		}
		if got := matchEntry(tt.entry, &d); got != tt.want {
			t.Errorf("matchEntry(%q, %s) = %v, want %v", tt.entry, tt.url, got, tt.want)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"API.Processor.Example.":    "api.processor.example",
		"api.processor.example:443": "api.processor.example:443",
		"127.0.0.1:9999":            "127.0.0.1:9999",
		"[2001:DB8::0:1]:8443":      "[2001:db8::1]:8443",
		"[::1]":                     "[::1]",
		"localhost":                 "localhost", // name rules apply per forward, not here
	} {
		got, err := NormalizeHost(in)
		if err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2130706433", "127.1", "http://x", "x/y", "a b", "[fe80::1%eth0]", "x:0", "b\u00fccher.example", "x:99999"} {
		if got, err := NormalizeHost(in); err == nil {
			t.Errorf("NormalizeHost(%q) = %q, want an error", in, got)
		} else if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("NormalizeHost(%q): %v is not ErrInvalidURL", in, err)
		}
	}
	if _, err := New(Policy{AllowedHosts: []string{"0x7f.1"}}); err == nil {
		t.Error("New accepted a malformed allowed host")
	}
}

func TestCheckURLCrossCheck(t *testing.T) {
	c := mustNew(t, Policy{})
	for _, raw := range []string{
		"https://api.processor.example/v1/charges?x=1",
		"https://api.processor.example:8443/",
		"http://93.184.216.34/",
		"https://[2606:2800:220:1:248:1893:25c8:1946]/",
		"https://api.processor.example?x=1",
	} {
		if err := c.CheckURL(raw, CallOptions{}); err != nil {
			t.Errorf("CheckURL(%q): %v", raw, err)
		}
	}
	for _, raw := range []string{
		"https://allowed.example\\@evil.example/",
		"https://evil.example#@allowed.example/",
		"https://evil.example?@allowed.example/",
		"https:/\\evil.example/",
		"https://evil.example%00.allowed.example/",
		"https://api.processor.example/a b",
		"https://api.processor.example/\x00",
		"https://api.processor.example/\u00e9",
		"//api.processor.example/",
		"mailto:a@b.example",
	} {
		err := c.CheckURL(raw, CallOptions{AllowedHosts: []string{"allowed.example"}})
		if err == nil {
			t.Errorf("CheckURL(%q) accepted", raw)
		}
	}
}

func TestErrorType(t *testing.T) {
	e := refused(guardRule(netguard.AddrLinkLocal))
	if !errors.Is(e, ErrHostNotAllowed) || errors.Is(e, ErrTimeout) {
		t.Error("errors.Is does not match on Code")
	}
	if e.Status() != http.StatusForbidden || e.Rule != "address_link_local" || Code(e) != CodeHostNotAllowed {
		t.Errorf("status %d rule %q code %q", e.Status(), e.Rule, Code(e))
	}
	if Code(errors.New("x")) != CodeFailed {
		t.Error("Code of a foreign error")
	}
	wrapped := newError(CodeTimeout, ErrTimeout.Message, ruleOK, fasthttp.ErrTimeout)
	if !errors.Is(wrapped, fasthttp.ErrTimeout) || wrapped.Status() != http.StatusGatewayTimeout {
		t.Error("Unwrap / Status")
	}
	for r := ruleOK; r <= ruleDialMismatch; r++ {
		if r.String() == "unknown" {
			t.Errorf("rule %d has no name", r)
		}
	}
	statuses := map[string]int{
		CodeInvalidURL: 400, CodeHostNotAllowed: 403, CodeRequestTooLarge: 413, CodeTimeout: 504,
		CodeTLSFailed: 502, CodeConnectionRefused: 502, CodeResponseTooLarge: 502, CodeFailed: 502,
	}
	for code, want := range statuses {
		if got := (&Error{Code: code}).Status(); got != want {
			t.Errorf("Status(%s) = %d, want %d", code, got, want)
		}
	}
}

// FuzzParseAuthority: never panics; whatever is accepted has a canonical
// authority that parses back to the same destination, is accepted by
// fasthttp as the same host, and obeys the strict IPv4 rule.
func FuzzParseAuthority(f *testing.F) {
	for _, s := range []string{
		"api.processor.example", "127.0.0.1:80", "[::1]:443", "2130706433", "0x7f.1", "127.1",
		"[fe80::1%25eth0]", "localhost.", "A.B.C:65535", "[::ffff:127.0.0.1]", "1.2.3.4.5", "x:0",
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, in string, https bool) {
		var d destination
		if parseAuthority(in, https, &d) != ruleOK {
			return
		}
		auth := d.authority()
		var d2 destination
		if r := parseAuthority(auth, https, &d2); r != ruleOK || d2 != d {
			t.Fatalf("%q -> %q -> %+v (%v), want %+v", in, auth, d2, r, d)
		}
		if !d.sameAuthority(auth) {
			t.Fatalf("sameAuthority(%q) false", auth)
		}
		if !d.ip.IsValid() && looksNumeric(d.host[strings.LastIndexByte(d.host, '.')+1:]) {
			t.Fatalf("%q accepted as a name but ends in a number", in)
		}
		var u fasthttp.URI
		scheme := "http://"
		if https {
			scheme = "https://"
		}
		if err := u.Parse(nil, []byte(scheme+auth+"/")); err != nil || string(u.Host()) != auth {
			t.Fatalf("fasthttp sees %q (%v) for canonical %q", u.Host(), err, auth)
		}
	})
}

// FuzzCheckURL: never panics, and an accepted URL names a host that the
// strict parser accepts and that is not an IP in a forbidden range.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://api.processor.example/v1?x=1", "http://127.0.0.1/", "https://a@b/", "http://[::1]/",
		"http://0x7f.1/", "https://x\\@y/", "ftp://x/", "http:///x", "https://[64:ff9b::7f00:1]/",
	} {
		f.Add(s)
	}
	c, err := New(Policy{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if c.CheckURL(raw, CallOptions{}) != nil {
			return
		}
		var u fasthttp.URI
		if err := u.Parse(nil, []byte(raw)); err != nil {
			t.Fatalf("accepted %q that fasthttp cannot parse: %v", raw, err)
		}
		https, _ := parseScheme(string(u.Scheme()))
		var d destination
		if r := parseAuthority(string(u.Host()), https, &d); r != ruleOK {
			t.Fatalf("accepted %q with host %q: %v", raw, u.Host(), r)
		}
		if d.ip.IsValid() && checkAddr(d.ip, false) != ruleOK {
			t.Fatalf("accepted %q reaching %v", raw, d.ip)
		}
		if checkName(&d, false) != ruleOK {
			t.Fatalf("accepted %q with forbidden name %q", raw, d.host)
		}
	})
}
