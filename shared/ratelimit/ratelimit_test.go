package ratelimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/config"
)

// clock is a settable time for the limiters under test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func TestParsePolicy(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Policy
		bad  bool
	}{
		{in: "100:200", want: Policy{Rate: 100, Burst: 200}},
		{in: " 2.5:3 ", want: Policy{Rate: 2.5, Burst: 3}},
		{in: "10", want: Policy{Rate: 10, Burst: 20}},
		{in: "0.1", want: Policy{Rate: 0.1, Burst: 1}},
		{in: "off", want: Policy{}},
		{in: "0", want: Policy{}},
		{in: "", bad: true},
		{in: "-1", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf", bad: true},
		{in: "10:0", bad: true},
		{in: "10:x", bad: true},
		{in: "10:", bad: true},
		{in: "x:10", bad: true},
		{in: "OFF", bad: true},
	} {
		got, err := ParsePolicy(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.bad)
		}
	}
	if New(Policy{}, nil) != nil || NewGuard(Policy{}, nil, nil) != nil {
		t.Error("an off policy made a limiter")
	}
	if s := (Policy{Rate: 2.5, Burst: 3}).String(); s != "2.5:3" {
		t.Errorf("String = %q", s)
	}
}

func TestLimiter(t *testing.T) {
	type step struct {
		key     string
		advance time.Duration // before the request
		allowed bool
		remain  int
		retry   time.Duration // when refused
	}
	for _, c := range []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{name: "burst then refused", policy: Policy{Rate: 1, Burst: 3}, steps: []step{
			{key: "a", allowed: true, remain: 2},
			{key: "a", allowed: true, remain: 1},
			{key: "a", allowed: true, remain: 0},
			{key: "a", allowed: false, remain: 0, retry: time.Second},
			{key: "a", advance: 400 * time.Millisecond, allowed: false, retry: 600 * time.Millisecond},
		}},
		{name: "refill", policy: Policy{Rate: 2, Burst: 2}, steps: []step{
			{key: "a", allowed: true, remain: 1},
			{key: "a", allowed: true, remain: 0},
			{key: "a", allowed: false, retry: 500 * time.Millisecond},
			{key: "a", advance: 500 * time.Millisecond, allowed: true, remain: 0},
			{key: "a", advance: 10 * time.Second, allowed: true, remain: 1}, // never beyond the burst
		}},
		{name: "keys apart", policy: Policy{Rate: 1, Burst: 1}, steps: []step{
			{key: "a", allowed: true},
			{key: "a", allowed: false, retry: time.Second},
			{key: "b", allowed: true},
			{key: "b", allowed: false, retry: time.Second},
		}},
		{name: "refusals spend nothing", policy: Policy{Rate: 1, Burst: 1}, steps: []step{
			{key: "a", allowed: true},
			{key: "a", advance: 500 * time.Millisecond, allowed: false, retry: 500 * time.Millisecond},
			{key: "a", advance: 100 * time.Millisecond, allowed: false, retry: 400 * time.Millisecond},
			{key: "a", advance: 400 * time.Millisecond, allowed: true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			l := New(c.policy, clk.now)
			for i, s := range c.steps {
				clk.advance(s.advance)
				d := l.Take(s.key)
				if d.Allowed != s.allowed || d.Remaining != s.remain || d.Limit != c.policy.Burst {
					t.Errorf("step %d: %+v; want allowed %v, remaining %d, limit %d", i, d, s.allowed, s.remain, c.policy.Burst)
				}
				if !d.Allowed && (d.RetryAfter-s.retry).Abs() > time.Millisecond {
					t.Errorf("step %d: retry after %v; want %v", i, d.RetryAfter, s.retry)
				}
			}
		})
	}
	var none *Limiter
	if d := none.Take("a"); !d.Allowed || none.Len() != 0 {
		t.Error("a nil limiter refused")
	}
}

func TestLimiterEvictsIdleBuckets(t *testing.T) {
	clk := newClock()
	l := New(Policy{Rate: 1, Burst: 5}, clk.now) // full again after 5 s idle
	l.Take("a")
	l.Take("b")
	clk.advance(3 * time.Second)
	l.Take("b")
	if n := l.Len(); n != 2 {
		t.Fatalf("%d buckets; want 2", n)
	}
	clk.advance(2 * time.Second) // a idle 5 s: full, dropped; b idle 2 s: kept
	l.Take("c")
	if n := l.Len(); n != 2 {
		t.Fatalf("%d buckets after a's idle time; want 2 (b, c)", n)
	}
	if _, ok := l.buckets["a"]; ok {
		t.Error("the idle bucket was kept")
	}
	// b kept its state: 5 - 2 spent + 3 refilled, capped at 5, minus this one.
	if d := l.Take("b"); d.Remaining != 4 {
		t.Errorf("b's remaining = %d; want 4", d.Remaining)
	}

	l.max = 3
	for i := range 10 {
		l.Take("k" + strconv.Itoa(i))
		if n := l.Len(); n > 3 {
			t.Fatalf("%d buckets; want at most 3", n)
		}
	}
}

// A credential is the token's signing key, except for the per-token
// issuer's (the dashboard's) tokens, which have a bucket each; addresses
// have buckets apart. Refusals are counted by kind.
func TestGuard(t *testing.T) {
	clk := newClock()
	refused := map[string]int{}
	g := NewGuard(Policy{Rate: 1, Burst: 1}, clk.now, func(kind string) { refused[kind]++ })
	g.PerTokenIssuer = "dashboard"
	api := func(jti string) *auth.Principal { return &auth.Principal{KeyID: "k1", Issuer: "api", TokenID: jti} }
	dash := func(jti string) *auth.Principal {
		return &auth.Principal{KeyID: "k2", Issuer: "dashboard", TokenID: jti}
	}
	for i, c := range []struct {
		p    *auth.Principal
		want bool
	}{
		{api("a"), true},
		{api("b"), false}, // another token of the same key: the key's bucket
		{dash("a"), true}, // the dashboard's tokens: a bucket each
		{dash("b"), true},
		{dash("a"), false},
	} {
		if d := g.Credential(c.p); d.Allowed != c.want {
			t.Errorf("credential %d: allowed %v; want %v", i, d.Allowed, c.want)
		}
	}
	for i, want := range []bool{true, false, false} {
		if d := g.Address("192.0.2.1"); d.Allowed != want {
			t.Errorf("address request %d: allowed %v; want %v", i, d.Allowed, want)
		}
	}
	if refused[BucketCredential] != 2 || refused[BucketAddress] != 2 {
		t.Errorf("refusals = %v", refused)
	}
	if d := g.Address("key k1"); !d.Allowed {
		t.Error("an address bucket shared the credential's")
	}
}

func TestSetHeaders(t *testing.T) {
	for _, c := range []struct {
		d    Decision
		want http.Header
	}{
		{Decision{Allowed: false, Limit: 200, Remaining: 0, Reset: 1990 * time.Millisecond, RetryAfter: 10 * time.Millisecond},
			http.Header{"Retry-After": {"1"}, "Ratelimit-Limit": {"200"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"2"}}},
		{Decision{Allowed: true, Limit: 5, Remaining: 4, Reset: time.Second},
			http.Header{"Ratelimit-Limit": {"5"}, "Ratelimit-Remaining": {"4"}, "Ratelimit-Reset": {"1"}}},
	} {
		h := http.Header{}
		SetHeaders(c.d, h.Set)
		if len(h) != len(c.want) {
			t.Errorf("%+v: headers %v; want %v", c.d, h, c.want)
		}
		for k, v := range c.want {
			if h.Get(k) != v[0] {
				t.Errorf("%+v: %s = %q; want %q", c.d, k, h.Get(k), v[0])
			}
		}
	}
	if e := Refusal(); e.Status != http.StatusTooManyRequests || e.Code != CodeRateLimited {
		t.Errorf("Refusal = %d %s", e.Status, e.Code)
	}
}

func TestLoadPolicy(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Policy
		bad  bool
	}{
		{env: map[string]string{}, want: Policy{Rate: 100, Burst: 200}},
		{env: map[string]string{"X_RATE_LIMIT": "5:10"}, want: Policy{Rate: 5, Burst: 10}},
		{env: map[string]string{"X_RATE_LIMIT": "off"}, want: Policy{}},
		{env: map[string]string{"X_RATE_LIMIT": "fast"}, bad: true},
	} {
		l := config.NewLoader(config.MapLookup(c.env))
		got := LoadPolicy(l, "X_RATE_LIMIT")
		if err := l.Err(); (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("%v: %v, %v; want %v, error %v", c.env, got, err, c.want, c.bad)
		}
	}
}
