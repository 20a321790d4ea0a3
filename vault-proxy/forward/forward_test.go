package forward_test

import (
	"context"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/postgres"
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
			e := &forward.Engine{Vault: svc}
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
	rec, err := p.Service.Vault(context.Background(), caller, vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"), ExpirationDate: "12/30"})
	if err != nil {
		t.Fatal(err)
	}
	return p.DB, p.Audits, p.Service, caller, rec.Token
}
