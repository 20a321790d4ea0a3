package forward_test

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/substitute"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/payorch/vault-proxy/vaulting/vaultingtest"
	"github.com/valyala/fasthttp"
)

// resolveTo answers every name with one address, as a DNS server that
// points a public-looking name inside the network would.
type resolveTo netip.Addr

func (r resolveTo) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.Addr(r)}, nil
}

// A destination refused at connect time (its name resolved to a private
// or metadata address) is audited with the rule that refused it, like a
// refusal before the send.
func TestConnectTimeRefusalIsAuditedWithItsRule(t *testing.T) {
	ctx := context.Background()
	db, audits, svc, caller, token := vaultedCard(t)

	for _, tc := range []struct{ addr, rule string }{
		{"169.254.169.254", "address_link_local"},
		{"10.1.2.3", "address_private"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			client, err := outbound.New(outbound.Policy{Resolver: resolveTo(netip.MustParseAddr(tc.addr))})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse("https://processor.example/pay")
			var resp fasthttp.Response
			e := &forward.Engine{Vaulting: svc}
			_, err = e.Send(ctx, forward.Request{Caller: caller, Action: "forward", Purpose: "vault-forward", Method: "POST", URL: u,
				ContentType: "application/json", Body: []byte(`{"n":"{{ CARD_NUMBER_1 }}"}`), Tokens: []uuid.UUID{token}},
				&resp, func(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
					return client.Do(ctx, req, resp, outbound.CallOptions{Timeout: 5 * time.Second})
				})
			if outbound.Code(err) != outbound.CodeHostNotAllowed {
				t.Fatalf("send: %v, want %s", err, outbound.CodeHostNotAllowed)
			}
			if err := audits.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			var rule string
			if err := db.Pool.QueryRow(ctx, `SELECT coalesce(detail->>'rule', '') FROM audit_events WHERE action = 'forward' AND outcome LIKE 'failure: %' ORDER BY id DESC LIMIT 1`).Scan(&rule); err != nil {
				t.Fatal(err)
			}
			if rule != tc.rule {
				t.Fatalf("the refusal's audit record names rule %q, want %q", rule, tc.rule)
			}
		})
	}
}

// vaultedCard is a vaulting service on a real database and Vault, with its
// audit spool, a caller of merchant m1 and the token of one card vaulted
// for it.
func vaultedCard(t *testing.T) (*postgres.DB, *auditspool.Spool, *vaulting.Service, vaulting.Caller, uuid.UUID) {
	t.Helper()
	p := vaultingtest.New(t, nil)
	caller := vaulting.Caller{MerchantAccountID: "m1", Actor: "test", RequestID: "req-forward"}
	rec, err := p.Service.VaultCard(context.Background(), caller, vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"), ExpirationDate: "12/30"})
	if err != nil {
		t.Fatal(err)
	}
	return p.DB, p.Audits, p.Service, caller, rec.Token
}

// The engine writes the caller's method and URL into the request line, and
// fasthttp writes them verbatim: a method that is not one a card may be
// sent with (or holds CR LF, which would split the request) and a target
// that would break the line (a space, a control or non-ASCII byte in the
// query) are refused, whoever the caller, before any card is opened or
// the send func is called. The allowed methods are taken in any case and
// sent in upper case.
func TestSendWritesOnlyASoundRequestLine(t *testing.T) {
	ctx := context.Background()
	db, audits, svc, caller, token := vaultedCard(t)
	e := &forward.Engine{Vaulting: svc}
	u := func(raw string) *url.URL {
		parsed, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return parsed
	}
	countReveals := func() int {
		t.Helper()
		if err := audits.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'forward'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name, method string
		url          *url.URL
		field        string // of the refusal; "" when sent
		sent         string // the method sent
	}{
		{"CR LF in the method", "POST\r\nX-Smuggled: 1", u("https://p.example/pay"), "method", ""},
		{"a space in the method", "POST /x", u("https://p.example/pay"), "method", ""},
		{"TRACE", "TRACE", u("https://p.example/pay"), "method", ""},
		{"CONNECT", "connect", u("https://p.example/pay"), "method", ""},
		{"empty method", "", u("https://p.example/pay"), "method", ""},
		{"a space in the query", "POST", u("https://p.example/pay?x=1 HTTP/1.0"), "target", ""},
		{"non-ASCII in the query", "POST", u("https://p.example/pay?x=\u00e9"), "target", ""},
		{"a control byte in the query", "POST", &url.URL{Scheme: "https", Host: "p.example", Path: "/pay", RawQuery: "x=\r\nHost: evil.example"}, "target", ""},
		{"lower case", "patch", u("https://p.example/pay?x=1%20a"), "", "PATCH"},
		{"upper case", "DELETE", u("https://p.example/pay"), "", "DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := countReveals()
			var sent string
			var resp fasthttp.Response
			_, err := e.Send(ctx, forward.Request{Caller: caller, Action: "forward", Purpose: "vault-forward", Method: tc.method, URL: tc.url,
				ContentType: "application/json", Body: []byte(`{"n":"{{ CARD_NUMBER_1 }}"}`), Tokens: []uuid.UUID{token}},
				&resp, func(_ context.Context, req *fasthttp.Request, _ *fasthttp.Response) error {
					sent = string(req.Header.Method()) + " " + string(req.RequestURI())
					return nil
				})
			if tc.field == "" {
				if err != nil || !strings.HasPrefix(sent, tc.sent+" ") {
					t.Fatalf("sent %q (%v), want method %s", sent, err, tc.sent)
				}
				return
			}
			var le *forward.RequestLineError
			if !errors.As(err, &le) || le.Field != tc.field {
				t.Fatalf("error %v, want a RequestLineError for %s", err, tc.field)
			}
			if sent != "" {
				t.Fatalf("the send func was called with %q", sent)
			}
			if strings.Contains(err.Error(), "Smuggled") || strings.Contains(err.Error(), "evil.example") {
				t.Fatalf("the error echoes the request: %v", err)
			}
			if n := countReveals(); n != before {
				t.Fatalf("a card was opened for a refused request line (%d audit records)", n-before)
			}
		})
	}
}

// A gift card's number and PIN go only where Options.AllowGiftCards lets
// them (core-api's gift card calls), the PIN only of a gift card, and a
// gift card never fills a card's other fields; a refusal is made before
// anything is sent.
func TestGiftCardPlaceholdersByKindAndPermission(t *testing.T) {
	ctx := context.Background()
	_, _, svc, caller, cardToken := vaultedCard(t)
	gift, err := svc.VaultCard(ctx, caller, vaulting.CardRequest{Kind: vaultproxy.KindGiftCard,
		Number: []byte("6035710000001234"), SecurityCode: []byte("4321")})
	if err != nil {
		t.Fatal(err)
	}
	e := &forward.Engine{Vaulting: svc}
	u, _ := url.Parse("https://processor.example/redeem")
	allow := substitute.Options{AllowGiftCards: true}
	for _, tc := range []struct {
		name  string
		body  string
		token uuid.UUID
		opts  substitute.Options
		sent  string // "" when refused
	}{
		{"number and PIN, allowed", `{"n":"{{ CARD_NUMBER_1 }}","p":"{{ GIFT_CARD_PIN_1 }}"}`, gift.Token, allow, `{"n":"6035710000001234","p":"4321"}`},
		{"number, not allowed (a merchant's forward)", `{"n":"{{ CARD_NUMBER_1 }}"}`, gift.Token, substitute.Options{}, ""},
		{"expiry of a gift card", `{"e":"{{ CARD_EXPIRATION_DATE_1 }}"}`, gift.Token, allow, ""},
		{"PIN of a card", `{"p":"{{ GIFT_CARD_PIN_1 }}"}`, cardToken, allow, ""},
		{"card number of a card, allowed too", `{"n":"{{ CARD_NUMBER_1 }}"}`, cardToken, allow, `{"n":"4111111111111111"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent string
			var resp fasthttp.Response
			_, err := e.Send(ctx, forward.Request{Caller: caller, Action: "detokenize", Purpose: vaulting.PurposeRedemption, Method: "POST", URL: u,
				ContentType: "application/json", Body: []byte(tc.body), Tokens: []uuid.UUID{tc.token}, Options: tc.opts},
				&resp, func(_ context.Context, req *fasthttp.Request, _ *fasthttp.Response) error {
					sent = string(req.Body())
					return nil
				})
			if tc.sent == "" {
				var se *substitute.Error
				if !errors.As(err, &se) || se.Code != "placeholder_not_allowed" || sent != "" {
					t.Fatalf("send = %v, sent %q; want placeholder_not_allowed and nothing sent", err, sent)
				}
				if strings.Contains(se.Message, "6035710000001234") || strings.Contains(se.Message, "4321") {
					t.Fatalf("the refusal quotes the gift card: %s", se.Message)
				}
				return
			}
			if err != nil || sent != tc.sent {
				t.Fatalf("send = %v, sent %q; want %q", err, sent, tc.sent)
			}
		})
	}
}
