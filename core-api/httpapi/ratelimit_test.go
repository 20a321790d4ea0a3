package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/ratelimit"
)

func TestRateLimiter(t *testing.T) {
	l := &httpapi.RateLimiter{Limit: 2, Window: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", time.Second, true},
		{"a", 2 * time.Second, false}, // third in the window
		{"b", 3 * time.Second, true},  // each key has its own count
		{"a", time.Minute, true},      // a new window
	} {
		if got := l.Allow(c.key, t0.Add(c.at)); got != c.want {
			t.Errorf("Allow(%s, +%v) = %v; want %v", c.key, c.at, got, c.want)
		}
	}
	var none *httpapi.RateLimiter
	if !none.Allow("a", t0) {
		t.Error("a nil limiter refused")
	}
}

// The router's request limit: a bucket per signing key for valid tokens,
// one per address for failing ones, none for requests without a token or
// for probes; a refused request never reaches its handler.
func TestRouterRateLimit(t *testing.T) {
	a, token := testAuth(t, "buyers.read")
	_, otherKey := testAuth(t, "buyers.read") // another key, unknown to a's verifier
	// The clock is read by the server's goroutines.
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	var refusedMu sync.Mutex
	var refused []string
	rt := httpapi.NewRouter(logging.New(io.Discard, slog.LevelInfo))
	rt.SetRateLimit(ratelimit.NewGuard(ratelimit.Policy{Rate: 1, Burst: 2}, func() time.Time { return time.Unix(0, now.Load()) },
		func(bucket string) { refusedMu.Lock(); refused = append(refused, bucket); refusedMu.Unlock() }), a.Verifier)
	var served atomic.Int64
	ok := func(w http.ResponseWriter, _ *http.Request) error {
		served.Add(1)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	rt.Handle("GET /things", ok)
	rt.Handle("GET /healthz", ok)
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)

	do := func(path, authorization string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for i, c := range []struct {
		path, authorization string
		want                int
	}{
		{"/things", "Bearer " + token, 204},
		{"/things", "Bearer " + token, 204},
		{"/things", "Bearer " + token, 429},    // the key's burst is spent
		{"/things", "Bearer " + otherKey, 204}, // fails verification: the address's bucket
		{"/things", "Bearer forged", 204},
		{"/things", "Bearer forged", 429},
		{"/nowhere", "Bearer forged", 429}, // unmatched routes too
		{"/things", "", 204},               // no token: vault-proxy limits those
		{"/things", "", 204},
		{"/things", "", 204},
		{"/healthz", "Bearer " + token, 204}, // probes never
	} {
		if got := do(c.path, c.authorization).StatusCode; got != c.want {
			t.Errorf("request %d (%s): %d; want %d", i, c.path, got, c.want)
		}
	}
	if n := served.Load(); n != 8 {
		t.Errorf("handlers ran %d times; want 8 (none for a refusal)", n)
	}
	refusedMu.Lock()
	if len(refused) != 3 || refused[0] != ratelimit.BucketCredential || refused[1] != ratelimit.BucketAddress {
		t.Errorf("refusals counted %v", refused)
	}
	refusedMu.Unlock()

	resp := do("/things", "Bearer "+token)
	var body struct {
		Type, Code, RequestID string
		Status                int
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil || body.Type != "error" || body.Code != "rate_limited" || body.Status != 429 {
		t.Errorf("refusal body %s", raw)
	}
	for k, want := range map[string]string{"Retry-After": "1", "RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "2"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q; want %q", k, got, want)
		}
	}

	now.Add(int64(time.Second)) // one request refilled
	if got := do("/things", "Bearer "+token).StatusCode; got != 204 {
		t.Errorf("after a second: %d; want 204", got)
	}
}
