package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/payorch/shared/accountid"
)

// Authorizing a request whose token and merchant account are cached
// allocates only the Principal's copy the verifier hands out: the merchant
// header is read by its canonical key, not canonicalized again (into a
// new string) on every request, whether the request carries it or not.
func TestAuthorizeAllocations(t *testing.T) {
	a, token := testAuth(t, "buyers.read")
	for _, merchant := range []string{"", "default"} {
		req := httptest.NewRequest(http.MethodGet, "/buyers", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if merchant != "" {
			req.Header.Set(accountid.Header, merchant)
		}
		if c, err := a.Authorize(req, "buyers.read"); err != nil || c.MerchantAccountID != "default" {
			t.Fatalf("Authorize = %+v, %v", c, err)
		}
		// Averaged over many runs: under the race detector sync.Pool drops
		// some of what it is given back, which raceAllocs allows for.
		if n := testing.AllocsPerRun(1000, func() { _, _ = a.Authorize(req, "buyers.read") }); n > 1+raceAllocs {
			t.Errorf("header %q: %v allocations, want 1", merchant, n)
		}
	}
}

// BenchmarkAuthorize: a request with a cached token and no merchant
// header, as e2e's list benchmark sends.
func BenchmarkAuthorize(b *testing.B) {
	a, token := testAuth(b, "buyers.read")
	req := httptest.NewRequest(http.MethodGet, "/buyers", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if _, err := a.Authorize(req, "buyers.read"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = a.Authorize(req, "buyers.read")
	}
}
