// Package ratelimit is the per-instance request limit of both services'
// public listeners (docs/api-conventions.md, "Rate limits"): a token bucket
// per API credential (the signing key of a valid bearer token, its kid) and,
// apart from those, one per remote address for requests that carry no valid
// token. A refused request is answered 429 rate_limited before its handler
// runs, so it changes nothing.
//
// The buckets are golang.org/x/time/rate limiters, driven by an injected
// clock. A bucket left idle long enough to refill completely is dropped,
// which loses nothing (a new bucket starts full); the map holds at most
// MaxKeys buckets.
package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/config"
	"golang.org/x/time/rate"
)

// Policy is a bucket's size: Rate requests a second sustained, Burst at
// once. The zero Policy is no limit.
type Policy struct {
	Rate  float64
	Burst int
}

// DefaultPolicy is the services' default (CORE_API_RATE_LIMIT,
// VAULT_PROXY_RATE_LIMIT): 100 requests a second per credential, 200 at
// once.
const DefaultPolicy = "100:200"

// Off reports whether p limits nothing.
func (p Policy) Off() bool { return p.Rate <= 0 || p.Burst <= 0 }

// String is p in ParsePolicy's form.
func (p Policy) String() string {
	if p.Off() {
		return "off"
	}
	return strconv.FormatFloat(p.Rate, 'f', -1, 64) + ":" + strconv.Itoa(p.Burst)
}

var errPolicy = errors.New(`must be "off", "0", RATE or RATE:BURST (requests a second, and at once), such as 100:200`)

// ParsePolicy reads "RATE:BURST" (requests a second, a positive decimal,
// and the bucket's size, a positive integer), "RATE" (the burst is twice
// the rate, at least 1), or "off" / "0" (no limit).
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Policy{}, nil
	}
	rateText, burstText, hasBurst := strings.Cut(s, ":")
	r, err := strconv.ParseFloat(rateText, 64)
	if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 || r > 1e6 {
		return Policy{}, errPolicy
	}
	burst := max(1, int(math.Ceil(2*r)))
	if hasBurst {
		if burst, err = strconv.Atoi(burstText); err != nil || burst < 1 || burst > 1e7 {
			return Policy{}, errPolicy
		}
	}
	return Policy{Rate: r, Burst: burst}, nil
}

// MaxKeys bounds the buckets one Limiter holds. When it is reached and no
// bucket is idle, an arbitrary one is dropped: its key starts afresh with a
// full bucket, a small gift to a client among MaxKeys others.
const MaxKeys = 100_000

// Limiter is a token bucket per key. Safe for concurrent use; a nil
// *Limiter allows everything.
type Limiter struct {
	policy Policy
	now    func() time.Time
	idle   time.Duration // how long an unused bucket takes to refill completely
	max    int

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns a Limiter of p reading the time from now (time.Now if nil),
// or nil when p is Off.
func New(p Policy, now func() time.Time) *Limiter {
	if p.Off() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	idle := time.Duration(float64(p.Burst) / p.Rate * float64(time.Second))
	return &Limiter{policy: p, now: now, idle: max(idle, time.Second), max: MaxKeys, buckets: map[string]*bucket{}}
}

// Decision is what Take decided, with what the rate limit headers say.
type Decision struct {
	Allowed    bool
	Limit      int           // the bucket's size (Policy.Burst)
	Remaining  int           // requests left now
	Reset      time.Duration // until the bucket is full again
	RetryAfter time.Duration // until one request is allowed (when refused)
}

// Take spends one request of key's bucket, if it has one.
func (l *Limiter) Take(key string) Decision {
	if l == nil {
		return Decision{Allowed: true}
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.max {
			for k := range l.buckets { // an arbitrary one: see MaxKeys
				delete(l.buckets, k)
				break
			}
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.policy.Rate), l.policy.Burst)}
		l.buckets[key] = b
	}
	b.seen = now
	allowed := b.lim.AllowN(now, 1)
	tokens := b.lim.TokensAt(now)
	d := Decision{Allowed: allowed, Limit: l.policy.Burst, Remaining: max(0, int(math.Floor(tokens))),
		Reset: l.seconds(float64(l.policy.Burst) - tokens)}
	if !allowed {
		d.RetryAfter = l.seconds(1 - tokens)
	}
	return d
}

// seconds is how long the bucket takes to gain n tokens.
func (l *Limiter) seconds(n float64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(n / l.policy.Rate * float64(time.Second))
}

// sweep drops the buckets idle for l.idle, at most once per l.idle: they
// are full, as a new one would be.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.idle {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if now.Sub(b.seen) >= l.idle {
			delete(l.buckets, k)
		}
	}
}

// Len is the number of buckets held.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// CodeRateLimited is the error code of a request refused by a Limiter.
const CodeRateLimited = "rate_limited"

var errRateLimited = apierror.New(http.StatusTooManyRequests, CodeRateLimited,
	"too many requests; retry after the seconds in Retry-After")

// Refusal is the answer to a refused request; SetHeaders adds its headers.
func Refusal() *apierror.Error { return errRateLimited }

// SetHeaders sets d's headers with set: Retry-After (when refused) and the
// IETF rate limit fields RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (draft-ietf-httpapi-ratelimit-headers in its form of
// three separate fields), each in whole requests or seconds, rounded up.
func SetHeaders(d Decision, set func(key, value string)) {
	if !d.Allowed {
		set("Retry-After", strconv.FormatInt(ceilSeconds(d.RetryAfter), 10))
	}
	set("RateLimit-Limit", strconv.Itoa(d.Limit))
	set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
}

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

// Bucket kinds, the label of the refusals' counter.
const (
	BucketCredential = "credential"
	BucketAddress    = "address"
)

// Guard is the limit of one listener: a bucket per credential and, apart
// from those, one per remote address.
type Guard struct {
	Credentials *Limiter
	Addresses   *Limiter
	// PerTokenIssuer names the issuer whose tokens each have a bucket of
	// their own, keyed by their jti: the dashboard's, whose one key signs
	// the tokens of every signed-in user. "": none.
	PerTokenIssuer string
	// Refused, if set, is told of each refusal (a metric).
	Refused func(bucket string)
}

// NewGuard returns the Guard of p (the same policy for both kinds of
// bucket), or nil when p is Off.
func NewGuard(p Policy, now func() time.Time, refused func(bucket string)) *Guard {
	if p.Off() {
		return nil
	}
	return &Guard{Credentials: New(p, now), Addresses: New(p, now), Refused: refused}
}

// Credential takes one request from the bucket of p's credential: its
// signing key (kid), or the token itself for PerTokenIssuer's.
func (g *Guard) Credential(p *auth.Principal) Decision {
	key := "key " + p.KeyID
	if g.PerTokenIssuer != "" && p.Issuer == g.PerTokenIssuer {
		key = "token " + p.KeyID + " " + p.TokenID
	}
	return g.take(g.Credentials, BucketCredential, key)
}

// Address takes one request from the bucket of the remote address addr.
func (g *Guard) Address(addr string) Decision { return g.take(g.Addresses, BucketAddress, addr) }

func (g *Guard) take(l *Limiter, kind, key string) Decision {
	d := l.Take(key)
	if !d.Allowed && g.Refused != nil {
		g.Refused(kind)
	}
	return d
}

// LoadPolicy reads the Policy in variable name (ParsePolicy's form;
// default DefaultPolicy).
func LoadPolicy(l *config.Loader, name string) Policy {
	text := l.String(name, config.Default(DefaultPolicy))
	p, err := ParsePolicy(text)
	if err != nil {
		l.Invalid(name, err.Error()+fmt.Sprintf(" (got %q)", text))
	}
	return p
}
