package httpapi

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/valyala/fasthttp"
)

// merchantIDCases are merchant account header values around every edge of
// `^[a-z0-9][a-z0-9_-]{0,63}$`.
var merchantIDCases = []string{
	"a", "0", "acme", "acme-eu_1", "a-", "a_", "0-_",
	strings.Repeat("a", 64), strings.Repeat("a", 65), "a" + strings.Repeat("-", 63), "a" + strings.Repeat("-", 64),
	"-a", "_a", "A", "aB", "acme corp", " acme", "acme ", "acme\n", "\nacme", "acme\x00", "ac.me", "ac/me",
	"é", "aé", "a\xff", "a`", "a{", "a@", "a[", "a:", "a/",
}

func TestMerchantAccount(t *testing.T) {
	for _, m := range append(merchantIDCases, "") {
		var ctx fasthttp.RequestCtx
		if m != "" {
			ctx.Request.Header.Set(MerchantHeader, m)
		}
		got, err := MerchantAccount(&ctx)
		switch {
		case m == "":
			if got != "default" || err != nil {
				t.Errorf("no header: %q, %v", got, err)
			}
		case merchantID.MatchString(m):
			if got != m || err != nil {
				t.Errorf("%q: %q, %v", m, got, err)
			}
		default:
			want := apierror.BadRequest("invalid merchant account id", apierror.Detail{
				Location: apierror.LocationHeader, Pointer: MerchantHeader, Message: "must match ^[a-z0-9][a-z0-9_-]{0,63}$", Type: "value_error.str.regex",
			})
			if got != "" || !reflect.DeepEqual(err, want) {
				t.Errorf("%q: %q, %#v", m, got, err)
			}
		}
	}
}

func TestValidMerchantIDIsTheRegexp(t *testing.T) {
	for _, m := range append(merchantIDCases, "") {
		agreesWithRegexp(t, m)
	}
}

// agreesWithRegexp checks both forms validMerchantID takes: header bytes
// and path strings.
func agreesWithRegexp(t *testing.T, m string) {
	t.Helper()
	want := merchantID.MatchString(m)
	if got := validMerchantID([]byte(m)); got != want {
		t.Errorf("%q as bytes: %v, the regexp says %v", m, got, want)
	}
	if got := validMerchantID(m); got != want {
		t.Errorf("%q as a string: %v, the regexp says %v", m, got, want)
	}
}

func FuzzValidMerchantID(f *testing.F) {
	for _, m := range merchantIDCases {
		f.Add(m)
	}
	f.Fuzz(agreesWithRegexp)
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
				ctx.Request.Header.Set(MerchantHeader, merchant)
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
