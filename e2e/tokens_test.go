package e2e

import (
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/auth"
)

// TestTokensActInTheMerchantAccountsTheyName: a token minted without
// naming merchant accounts (no merchant_account_ids claim, as every token
// before the claim) acts in the default
// account only: in another it is 403, on core-api and vault-proxy alike.
// Every account is a grant made explicitly, with ["*"].
func TestTokensActInTheMerchantAccountsTheyName(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "other")
	scopes := []string{"buyers.write", "merchant-accounts.read", "vault-forward-configs.read"}
	for _, tc := range []struct {
		name        string
		accounts    []string
		inOther     bool
		listedCount int
	}{
		{"minted without accounts", nil, false, 1},
		{"minted for every account", []string{auth.AllMerchantAccounts}, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := s.TokenFor(t, tc.accounts, scopes...)
			byRoute := []struct {
				c          coreClient
				method, to string
				body       any
				ok         int
			}{
				{newCore(s, tok, "other"), "POST", "/buyers", map[string]any{"display_name": "B"}, 201},
				{newCore(s, tok, "other"), "GET", "/buyers", nil, 200},
				{newCore(s, tok, ""), "GET", "/merchant-accounts/other", nil, 200},
				{coreClient{s: s, c: s.PublicClient, base: s.PublicURL, token: tok, merchant: "other"}, "GET", "/vault-forward/configs", nil, 200},
			}
			for _, r := range byRoute {
				code, raw := r.c.do(t, r.method, r.to, r.body)
				switch {
				case tc.inOther && code != r.ok:
					t.Errorf("%s %s%s in other = %d %s, want %d", r.method, r.c.base, r.to, code, raw, r.ok)
				case !tc.inOther && (code != 403 || apiError(t, raw).Code != "forbidden"):
					t.Errorf("%s %s%s in other = %d %s, want 403 forbidden", r.method, r.c.base, r.to, code, raw)
				}
			}
			// The default account stays reachable, and the list shows what
			// the token may act in.
			newCore(s, tok, "").ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "B"})
			l := newCore(s, tok, "").ok(t, 200, "GET", "/merchant-accounts", nil)
			if items := l["items"].([]any); len(items) != tc.listedCount {
				t.Errorf("the token lists %d merchant accounts, want %d: %v", len(items), tc.listedCount, items)
			}
		})
	}
}
