package httpapi

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/valyala/fasthttp"
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
		{"https://API.example.com.:8443/x", "api.example.com:8443", []string{"api.example.com:8443"}, true},
		{"http://api.example.com:080/x", "api.example.com:080", []string{"api.example.com:80"}, false},
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
		ids, ok := parseIDs([]byte(tc.in), tc.max, tc.distinct)
		if ok != tc.ok || len(ids) != tc.n {
			t.Errorf("parseIDs(%q): %d ids, ok=%v", tc.in, len(ids), ok)
		}
	}
}

// forwardRequest returns a request context holding headers, given as
// name, value pairs in the order a client sent them.
func forwardRequest(headers ...string) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	for i := 0; i < len(headers); i += 2 {
		ctx.Request.Header.Add(headers[i], headers[i+1])
	}
	return ctx
}

// parsed is what a test compares of a forwardInput.
type parsed struct {
	URL, RawURL, Method string
	Header              string // the forwarded headers, as fasthttp writes them
	Tokens, Auths       []uuid.UUID
	AuthIDs             []string
	Timeout             time.Duration
	ContentType         string
}

func parsedOf(in *forwardInput) parsed {
	p := parsed{URL: in.url.String(), RawURL: in.rawURL, Method: in.method, Tokens: in.tokens, Auths: in.auths,
		AuthIDs: in.authIDs, Timeout: in.timeout, ContentType: in.ctype}
	if in.header != nil {
		var b strings.Builder
		for k, v := range in.header.All() {
			b.WriteString(string(k) + ": " + string(v) + "\n")
		}
		p.Header = b.String()
	}
	return p
}

func TestParseForward(t *testing.T) {
	a, b := "0b6d2c3e-1f7a-4d2b-9c1e-111111111111", "0b6d2c3e-1f7a-4d2b-9c1e-222222222222"
	ua, ub := uuid.MustParse(a), uuid.MustParse(b)
	pms := a + "," + b
	ok := func(url string, headers ...string) []string {
		return append([]string{HeaderForwardURL, url, HeaderForwardPaymentMethods, pms}, headers...)
	}
	base := parsed{URL: "http://127.0.0.1:8080/v1/payments", RawURL: "http://127.0.0.1:8080/v1/payments", Method: "POST",
		Tokens: []uuid.UUID{ua, ub}, Timeout: DefaultForwardTimeout, ContentType: "application/json"}
	with := func(f func(*parsed)) parsed {
		p := base
		f(&p)
		return p
	}
	detail := func(pointer, msg, typ string) apierror.Detail {
		return apierror.Detail{Location: apierror.LocationHeader, Pointer: pointer, Message: msg, Type: typ}
	}
	badURL := detail(HeaderForwardURL, "must be an absolute http(s) URL", "value_error.url")
	for _, tc := range []struct {
		name    string
		headers []string
		want    parsed
		errs    []apierror.Detail
	}{
		{"the benchmark's request", []string{"Authorization", "Bearer x", "Content-Type", "application/json",
			HeaderForwardURL, base.URL, HeaderForwardPaymentMethods, pms}, base, nil},
		{"header names in any case, values trimmed", []string{"X-VAULT-FORWARD-URL", " " + base.URL + " ", "X-Vault-Forward-Payment-Methods", " " + a + " , " + b + " ",
			"Content-Type", "application/json"}, base, nil},
		{"method, timeout, authentications", ok(base.URL, "Content-Type", "application/json", HeaderForwardMethod, " put ",
			HeaderForwardTimeout, " 60 ", HeaderForwardAuthentications, b+", "+a), with(func(p *parsed) {
			p.Method, p.Timeout, p.Auths, p.AuthIDs = "PUT", 60*time.Second, []uuid.UUID{ub, ua}, []string{b, a}
		}), nil},
		{"forwarded headers", ok(base.URL, "Content-Type", "application/json", "X-Vault-Forward-Header-X-Api-Key", "k1",
			"x-vault-forward-header-idempotency-key", "i-1", "X-Vault-Forward-Header-X-Api-Key", "k2"), with(func(p *parsed) {
			p.Header = "X-Api-Key: k1\nIdempotency-Key: i-1\nX-Api-Key: k2\n"
		}), nil},
		{"no content type", ok(base.URL), with(func(p *parsed) { p.ContentType = "" }), nil},
		{"authority canonicalised", ok("HTTPS://API.Example.COM.:443?b=1#frag"), with(func(p *parsed) {
			p.URL, p.RawURL, p.ContentType = "https://api.example.com/?b=1", "https://api.example.com/?b=1", ""
		}), nil},
		{"default http port dropped, path kept encoded", ok("http://Example.com:80/a%2Fb/c%20d?q=%20x"), with(func(p *parsed) {
			p.URL, p.RawURL, p.ContentType = "http://example.com/a%2Fb/c%20d?q=%20x", "http://example.com/a%2Fb/c%20d?q=%20x", ""
		}), nil},
		{"ipv6 literal", ok("https://[0:0::1]:8443/x"), with(func(p *parsed) {
			p.URL, p.RawURL, p.ContentType = "https://[::1]:8443/x", "https://[::1]:8443/x", ""
		}), nil},
		{"userinfo kept", ok("https://user:pw@example.com/x"), with(func(p *parsed) {
			p.URL, p.RawURL, p.ContentType = "https://user:pw@example.com/x", "https://user:pw@example.com/x", ""
		}), nil},
		{"nothing", nil, parsed{}, []apierror.Detail{
			detail(HeaderForwardURL, "the target URL is required", "value_error.missing"),
			detail(HeaderForwardPaymentMethods, "list 1 to 100 payment method ids", "value_error.missing"),
		}},
		{"empty url", ok(" "), parsed{}, []apierror.Detail{detail(HeaderForwardURL, "the target URL is required", "value_error.missing")}},
		{"relative url", ok("/v1/payments"), parsed{}, []apierror.Detail{badURL}},
		{"no host", ok("https:///x"), parsed{}, []apierror.Detail{badURL}},
		{"opaque url", ok("mailto:a@example.com"), parsed{}, []apierror.Detail{badURL}},
		{"unparsable url", ok("http://exa mple.com/"), parsed{}, []apierror.Detail{badURL}},
		{"bad port", ok("http://example.com:x/"), parsed{}, []apierror.Detail{badURL}},
		{"control character", ok("http://example.com/\x7f"), parsed{}, []apierror.Detail{badURL}},
		{"every header wrong, in the order sent", []string{
			HeaderForwardMethod, "connect", HeaderForwardTimeout, "0", "X-Vault-Forward-Timeout", "61",
			"X-Vault-Forward-Header-Host", "evil", "x-vault-forward-header-x-vault-forward-url", "x",
			"X-Vault-Forward-Header-", "x", "X-Vault-Forward-Foo", "x", HeaderForwardTimeout, "1.5",
			HeaderForwardPaymentMethods, a + ",", HeaderForwardAuthentications, a + "," + a,
		}, parsed{}, []apierror.Detail{
			detail(HeaderForwardMethod, "must be one of GET, POST, PUT, PATCH, DELETE", "value_error.enum"),
			detail(HeaderForwardTimeout, "must be a whole number of seconds from 1 to 60", "value_error.number"),
			detail(HeaderForwardTimeout, "must be a whole number of seconds from 1 to 60", "value_error.number"),
			detail("x-vault-forward-header-host", "this header cannot be forwarded", "value_error.header.forbidden"),
			detail("x-vault-forward-header-x-vault-forward-url", "this header cannot be forwarded", "value_error.header.forbidden"),
			detail("x-vault-forward-header-", "this header cannot be forwarded", "value_error.header.forbidden"),
			detail("x-vault-forward-foo", "unknown x-vault-forward header", "value_error.extra"),
			detail(HeaderForwardTimeout, "must be a whole number of seconds from 1 to 60", "value_error.number"),
			detail(HeaderForwardURL, "the target URL is required", "value_error.missing"),
			detail(HeaderForwardPaymentMethods, "must be 1 to 100 comma-separated payment method ids", "value_error.uuid_list"),
			detail(HeaderForwardAuthentications, "must be 1 to 10 distinct comma-separated authentication method ids", "value_error.uuid_list"),
		}},
		{"too many payment methods", ok(base.URL, HeaderForwardPaymentMethods, strings.Repeat(a+",", 100)+a), parsed{},
			[]apierror.Detail{detail(HeaderForwardPaymentMethods, "must be 1 to 100 comma-separated payment method ids", "value_error.uuid_list")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := parseForward(forwardRequest(tc.headers...))
			if tc.errs != nil {
				want := apierror.BadRequest("the forward request headers are not valid", tc.errs...)
				if in != nil || !reflect.DeepEqual(err, want) {
					t.Fatalf("= %+v, %#v\nwant %#v", in, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := parsedOf(in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("= %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// BenchmarkParseForward parses the headers of the forward benchmark's
// request (e2e BenchmarkForwardVault).
func BenchmarkParseForward(b *testing.B) {
	ctx := forwardRequest("Authorization", "Bearer eyJhbGciOiJFUzUxMiJ9.e30.c2ln", "Content-Type", "application/json",
		HeaderForwardURL, "http://127.0.0.1:41234/v1/payments",
		HeaderForwardPaymentMethods, "0b6d2c3e-1f7a-4d2b-9c1e-111111111111,0b6d2c3e-1f7a-4d2b-9c1e-222222222222")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseForward(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A method stored before creation refused private keys in public fields
// does not echo one: the value is withheld, the key still listed.
func TestAuthMethodOutWithholdsAPrivateKeyInAPublicField(t *testing.T) {
	const privateJWK = `{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}`
	m := &forwardconfig.AuthMethod{
		ID: uuid.New(), ConfigID: uuid.New(), Kind: "mle",
		FieldKeys:    []string{"public_key", "key_id", "algorithm"},
		PublicFields: map[string]string{"public_key": privateJWK, "key_id": "kid-1", "algorithm": "ECDH-ES+A256KW"},
	}
	got := map[string]*string{}
	for _, f := range authMethodOut(m).Fields {
		got[f.Key] = f.Value
	}
	if len(got) != 3 {
		t.Fatalf("fields %v, want all three keys listed", got)
	}
	if v := got["public_key"]; v != nil {
		t.Fatalf("public_key echoed: %q", *v)
	}
	if v := got["key_id"]; v == nil || *v != "kid-1" {
		t.Fatalf("key_id = %v, want kid-1", v)
	}
	if v := got["algorithm"]; v == nil || *v != "ECDH-ES+A256KW" {
		t.Fatalf("algorithm = %v, want ECDH-ES+A256KW", v)
	}
}
