package httpapi

import (
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/accountid/accountidtest"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/valyala/fasthttp"
)

// TestMerchantAccount: the header's id is checked by accountid's rule
// (whose own tests hold it to accountid.Pattern), and an invalid one is the
// documented 400.
func TestMerchantAccount(t *testing.T) {
	pattern := regexp.MustCompile(accountid.Pattern)
	for _, m := range append(accountidtest.Cases, "") {
		var ctx fasthttp.RequestCtx
		if m != "" {
			ctx.Request.Header.Set(accountid.Header, m)
		}
		got, err := MerchantAccount(&ctx)
		switch {
		case m == "":
			if got != "default" || err != nil {
				t.Errorf("no header: %q, %v", got, err)
			}
		case pattern.MatchString(m):
			if got != m || err != nil {
				t.Errorf("%q: %q, %v", m, got, err)
			}
		default:
			want := apierror.BadRequest("invalid merchant account id", apierror.Detail{
				Location: apierror.LocationHeader, Pointer: accountid.Header, Message: "must match ^[a-z0-9][a-z0-9_-]{0,63}$", Type: "value_error.str.regex",
			})
			if got != "" || !reflect.DeepEqual(err, want) {
				t.Errorf("%q: %q, %#v", m, got, err)
			}
		}
	}
}

// benchAuthenticator verifies a token like the forward benchmark's: the
// vault-forward.write scope, every merchant account, signed ES512; it returns
// the Authorization header too.
func benchAuthenticator(tb testing.TB, now time.Time) (*Authenticator, string) {
	tb.Helper()
	key, err := auth.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	ks := auth.NewKeySet()
	if _, err := ks.Add(&key.PublicKey, "merchant-acme"); err != nil {
		tb.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: ks})
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := auth.Mint(key, "merchant-acme", []string{ScopeForwardWrite}, time.Hour, now, []string{auth.AllMerchantAccounts})
	if err != nil {
		tb.Fatal(err)
	}
	return &Authenticator{Verifier: v, Now: func() time.Time { return now }}, "Bearer " + tok
}

// BenchmarkAuthorize measures the bearer check of every forward request, the
// token already verified once (the cache's steady state).
func BenchmarkAuthorize(b *testing.B) {
	now := time.Now()
	a, header := benchAuthenticator(b, now)
	for _, merchant := range []string{"", "acme-eu_1"} {
		name := "merchant=" + merchant
		if merchant == "" {
			name = "merchant=default"
		}
		b.Run(name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.Set("Authorization", header)
			if merchant != "" {
				ctx.Request.Header.Set(accountid.Header, merchant)
			}
			if _, err := a.Authorize(&ctx, ScopeForwardWrite); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authorize(&ctx, ScopeForwardWrite); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
