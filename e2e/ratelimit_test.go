package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/ratelimit"
)

// Both services limit requests per API credential (and vault-proxy per
// address for requests without a valid token): a burst beyond the bucket
// is 429 rate_limited with Retry-After and the RateLimit headers, refused
// before anything is done, so a refused create stores nothing and a
// refused payment's Idempotency-Key is free for the retry. vault-proxy's
// internal listener (core-api's calls) is not limited.
func TestRateLimit(t *testing.T) {
	policy := ratelimit.Policy{Rate: 2, Burst: 3}
	s := stack.Start(t, stack.WithRateLimit(policy))
	tok := s.Token(t, "buyers.write", "payment-methods.write", "transactions.write", "transactions.read", "vault-forward.write")
	refill := func() {
		time.Sleep(time.Duration(float64(policy.Burst)/policy.Rate*float64(time.Second)) + 100*time.Millisecond)
	}

	do := func(method, url, token, body string, header ...string) (*http.Response, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, url, rd)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := s.PublicClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		s.CheckAPI(t, req, []byte(body), resp, raw) // 429 is in both documents
		return resp, raw
	}
	// refused checks a 429 rate_limited with its headers.
	refused := func(what string, resp *http.Response, raw []byte) {
		t.Helper()
		var e struct {
			Code   string `json:"code"`
			Status int    `json:"status"`
		}
		if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal(raw, &e) != nil || e.Code != "rate_limited" || e.Status != 429 {
			t.Fatalf("%s: %d %s; want 429 rate_limited", what, resp.StatusCode, raw)
		}
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n != 1 {
			t.Errorf("%s: Retry-After %q; want 1 (a request refills in half a second)", what, resp.Header.Get("Retry-After"))
		}
		if l, r := resp.Header.Get("RateLimit-Limit"), resp.Header.Get("RateLimit-Remaining"); l != "3" || r != "0" {
			t.Errorf("%s: RateLimit-Limit %q, RateLimit-Remaining %q; want 3, 0", what, l, r)
		}
		if n, err := strconv.Atoi(resp.Header.Get("RateLimit-Reset")); err != nil || n < 1 || n > 2 {
			t.Errorf("%s: RateLimit-Reset %q; want 1 or 2", what, resp.Header.Get("RateLimit-Reset"))
		}
	}
	// exhaust spends the bucket of token (none: of the address) at base
	// until a request is refused, and checks that answer.
	exhaust := func(base, token string) {
		t.Helper()
		for i := 0; i <= policy.Burst+2; i++ {
			resp, raw := do(http.MethodGet, base+"/buyers", token, "")
			if resp.StatusCode == http.StatusTooManyRequests {
				if i < policy.Burst {
					t.Fatalf("refused after %d requests; the burst is %d", i, policy.Burst)
				}
				refused("a burst at "+base, resp, raw)
				return
			}
		}
		t.Fatalf("%s: no refusal after %d requests", base, policy.Burst+3)
	}
	retryAfter := func(resp *http.Response) {
		n, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		time.Sleep(time.Duration(n)*time.Second + 50*time.Millisecond)
	}

	t.Run("burst", func(t *testing.T) {
		for _, base := range []string{s.PublicURL, s.CoreURL} {
			refill()
			exhaust(base, tok)
		}
		refill()
		exhaust(s.PublicURL, "") // vault-proxy: the address's bucket, apart from the credential's
		if resp, _ := do(http.MethodGet, s.PublicURL+"/buyers", tok, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("the credential was refused with its address's bucket: %d", resp.StatusCode)
		}
	})

	t.Run("a refused create stores nothing", func(t *testing.T) {
		const buyer = `{"external_identifier":"rate-limited-buyer"}`
		for _, base := range []string{s.PublicURL, s.CoreURL} {
			refill()
			exhaust(base, tok)
			resp, raw := do(http.MethodPost, base+"/buyers", tok, buyer)
			refused("POST /buyers", resp, raw)
		}
		if n := countRows(t, s.DBs.CoreDSN, "buyers WHERE external_identifier = 'rate-limited-buyer'"); n != 0 {
			t.Errorf("%d buyers stored by refused requests", n)
		}
	})

	t.Run("a refused payment's idempotency key is retried", func(t *testing.T) {
		refill()
		pm := vaultCard(t, s, tok, "4111111111111111", "123")["id"].(string)
		body := string(mustJSON(t, payment(pm, 1299)))
		for i, base := range []string{s.CoreURL, s.PublicURL} {
			key := "rate-limited-payment-" + strconv.Itoa(i)
			refill()
			exhaust(base, tok)
			resp, raw := do(http.MethodPost, base+"/transactions", tok, body, "Idempotency-Key", key)
			refused("POST /transactions", resp, raw)
			retryAfter(resp)
			resp, raw = do(http.MethodPost, base+"/transactions", tok, body, "Idempotency-Key", key)
			var tx map[string]any
			if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &tx) != nil || resp.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: the retry after the refusal: %d %s", base, resp.StatusCode, raw)
			}
			refill()
			resp, raw = do(http.MethodPost, base+"/transactions", tok, body, "Idempotency-Key", key)
			var again map[string]any
			if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &again) != nil ||
				resp.Header.Get("Idempotent-Replayed") != "true" || again["id"] != tx["id"] {
				t.Fatalf("%s: the key again: %d %s", base, resp.StatusCode, raw)
			}
			if st := mockCardStats(t, s, tx["id"].(string)); st.Charges != 1 {
				t.Errorf("%s: charges %+v; want 1", base, st)
			}
		}
	})

	t.Run("vault-forward", func(t *testing.T) {
		refill()
		exhaust(s.PublicURL, tok)
		resp, raw := do(http.MethodPost, s.PublicURL+"/vault-forward", tok, `{}`)
		refused("POST /vault-forward", resp, raw)
	})

	t.Run("internal listener", func(t *testing.T) {
		refill()
		exhaust(s.PublicURL, tok)
		exhaust(s.PublicURL, "")
		for i := 0; i < 3*policy.Burst; i++ {
			resp, err := s.InternalClient.Get(s.InternalURL + "/internal/merchant-accounts/default/usage")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("internal request %d: %d", i, resp.StatusCode)
			}
		}
	})

	t.Run("refusals are counted", func(t *testing.T) {
		resp, err := http.Get(s.AdminURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`vault_proxy_rate_limited_requests_total{bucket="credential",listener="public"}`,
			`vault_proxy_rate_limited_requests_total{bucket="address",listener="public"}`} {
			if !strings.Contains(string(text), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}
