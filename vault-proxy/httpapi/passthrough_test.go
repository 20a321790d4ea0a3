package httpapi_test

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/valyala/fasthttp"
)

// fakeCore is a real HTTP server on loopback standing in for core-api: it
// keeps a copy of each request it receives.
type fakeCore struct {
	mu   sync.Mutex
	reqs []*fasthttp.Request
}

func startFakeCore(t *testing.T) (*fakeCore, *httpapi.Core) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeCore{}
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			var r fasthttp.Request
			ctx.Request.CopyTo(&r)
			fc.mu.Lock()
			fc.reqs = append(fc.reqs, &r)
			fc.mu.Unlock()
			ctx.SetStatusCode(fasthttp.StatusOK)
			ctx.SetBodyString(`{}`)
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	core, err := httpapi.NewCore("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return fc, core
}

func (fc *fakeCore) received() []*fasthttp.Request {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]*fasthttp.Request(nil), fc.reqs...)
}

func passCtx(method, uri, body string, headers ...string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req.SetBodyString(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return &ctx
}

// Only the headers core-api reads cross into the non-PCI zone; method, raw
// path, query and body arrive as sent.
func TestPassSendsOnlyTheHeadersCoreReads(t *testing.T) {
	fc, core := startFakeCore(t)
	ctx := passCtx("PATCH", "/buyers/a%2Fb?limit=5&cursor=x", `{"display_name":"Ada"}`,
		"Authorization", "Bearer t", accountid.Header, "m1", "Idempotency-Key", "k1", "Accept", "application/json",
		"Content-Type", "application/json", "X-Card", "4111111111111111", "Cookie", "session=1", "User-Agent", "ua")
	if err := core.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got := fc.received()
	if len(got) != 1 {
		t.Fatalf("core-api received %d requests", len(got))
	}
	r := got[0]
	if string(r.Header.Method()) != "PATCH" || string(r.Header.RequestURI()) != "/buyers/a%2Fb?limit=5&cursor=x" || string(r.Body()) != `{"display_name":"Ada"}` {
		t.Fatalf("passed on as %s %s %s", r.Header.Method(), r.Header.RequestURI(), r.Body())
	}
	for h, want := range map[string]string{"Authorization": "Bearer t", accountid.Header: "m1", "Idempotency-Key": "k1",
		"Accept": "application/json", "Content-Type": "application/json", "X-Card": "", "Cookie": "", "User-Agent": "vault-proxy"} {
		if v := string(r.Header.Peek(h)); v != want {
			t.Errorf("header %s reached core-api as %q, want %q", h, v, want)
		}
	}
	if strings.Contains(r.String(), "4111111111111111") {
		t.Fatal("the card number in a header reached core-api")
	}
}

// A card number in the path or the query, in any spelling core-api would
// decode to one, is a 400 naming where it is (never the value), and
// nothing reaches core-api.
func TestPassRefusesCardNumbersInTheURL(t *testing.T) {
	fc, core := startFakeCore(t)
	const pan = "4111111111111111"
	for _, tc := range []struct {
		name, uri, location, pointer string
	}{
		{"in the path", "/buyers/" + pan, apierror.LocationPath, ""},
		{"percent-encoded in the path", "/buyers/%34111111111111111", apierror.LocationPath, ""},
		{"a query value", "/buyers?external_identifier=" + pan, apierror.LocationQuery, "external_identifier"},
		{"percent-encoded digits", "/payment-methods?buyer_external_identifier=%34%31%31%31111111111111", apierror.LocationQuery, "buyer_external_identifier"},
		{"grouped with plus signs", "/buyers?q=4111+1111+1111+1111", apierror.LocationQuery, "q"},
		{"grouped with encoded spaces", "/buyers?q=4111%201111%201111%201111", apierror.LocationQuery, "q"},
		{"behind a malformed escape", "/buyers?q=%zz" + pan, apierror.LocationQuery, "q"},
		{"as a parameter name", "/buyers?" + pan + "=1", apierror.LocationQuery, ""},
		{"a 12-digit card", "/buyers?ref=600000000007", apierror.LocationQuery, "ref"},
		{"between hex letters in the path", "/merchant-accounts/a4111111111111111a", apierror.LocationPath, ""},
		{"grouped with underscores in the path", "/merchant-accounts/4111_1111_1111_1111", apierror.LocationPath, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := passCtx("GET", tc.uri, "")
			e := apierror.As(core.Pass(ctx))
			if e == nil || e.Status != 400 || len(e.Details) != 1 {
				t.Fatalf("got %+v, want one 400 detail", e)
			}
			d := e.Details[0]
			if d.Location != tc.location || d.Pointer != tc.pointer || d.Type != "value_error.card_data" {
				t.Fatalf("detail %+v, want %s %q", d, tc.location, tc.pointer)
			}
			if strings.Contains(e.Message+d.Message+d.Pointer, "1111") {
				t.Fatalf("the error repeats the number: %+v", e)
			}
		})
	}
	// Numbers that are not card numbers pass: a failed Luhn check, a
	// UUID, an 11-digit reference.
	for _, uri := range []string{"/buyers?external_identifier=4111111111111112", "/buyers/0b9e0a3c-1111-4111-8111-111111111111", "/buyers?ref=41111111111"} {
		if err := core.Pass(passCtx("GET", uri, "")); err != nil {
			t.Errorf("%s: %v", uri, err)
		}
	}
	if n := len(fc.received()); n != 3 {
		t.Fatalf("core-api received %d requests, want only the 3 without a card number", n)
	}
}

// A card number in a JSON body is a 400 naming where it is, and nothing
// reaches core-api. A phone number or a card network's transaction id
// (zone.DigitFields) is refused only when its digits are a card number of
// a known scheme (IIN range, length and Luhn check): such values are
// Luhn-valid one time in ten. Any other field keeps the stricter rule.
func TestPassRefusesCardNumbersInTheBody(t *testing.T) {
	fc, core := startFakeCore(t)
	for _, tc := range []struct {
		name, method, uri, body, pointer string
	}{
		{"a visa number as a transaction id", "PUT", "/payment-methods/pm1", `{"scheme_transaction_id":"4111111111111111"}`, "/scheme_transaction_id"},
		{"an amex number as a phone number", "POST", "/buyers", `{"display_name":"Ada","billing_details":{"phone_number":"+378282246310005"}}`, "/billing_details/phone_number"},
		{"a grouped card number in a phone number", "POST", "/buyers", `{"billing_details":{"phone_number":"+1 4111 1111 1111 1111"}}`, "/billing_details/phone_number"},
		{"a 13-digit visa number as a phone number", "POST", "/buyers", `{"billing_details":{"phone_number":"+4222222222222"}}`, "/billing_details/phone_number"},
		{"a card number in a transaction id's text", "PUT", "/payment-methods/pm1", `{"scheme_transaction_id":"txn 5555-5555-5555-4444"}`, "/scheme_transaction_id"},
		{"an array under a digit field", "POST", "/buyers", `{"metadata":{"phone_number":["600000000007"]}}`, "/metadata/phone_number/0"},
		{"an object under a digit field", "POST", "/buyers", `{"phone_number":{"n":"600000000007"}}`, "/phone_number/n"},
		{"a number of no scheme in another field", "POST", "/buyers", `{"external_identifier":"412345678901233"}`, "/external_identifier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apierror.As(core.Pass(passCtx(tc.method, tc.uri, tc.body)))
			if e == nil || e.Status != 400 || len(e.Details) != 1 {
				t.Fatalf("got %+v, want one 400 detail", e)
			}
			if d := e.Details[0]; d.Location != apierror.LocationBody || d.Pointer != tc.pointer || d.Type != "value_error.card_data" {
				t.Fatalf("detail %+v, want %q", d, tc.pointer)
			}
		})
	}
	if n := len(fc.received()); n != 0 {
		t.Fatalf("core-api received %d requests", n)
	}
	// Luhn-valid digits of no known scheme pass: a 15-digit transaction id
	// (Visa's cards have 13, 16 or 19 digits), phone numbers.
	for _, body := range []string{
		`{"scheme_transaction_id":"412345678901233"}`,
		`{"billing_details":{"phone_number":"+600000000007"}}`,
		`{"billing_details":{"phone_number":"+819012345677"}}`,
		`{"billing_details":{"phone_number":"+442071234567"}}`,
	} {
		if err := core.Pass(passCtx("PUT", "/payment-methods/pm1", body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	if n := len(fc.received()); n != 4 {
		t.Fatalf("core-api received %d requests, want the 4 legitimate ones", n)
	}
}
