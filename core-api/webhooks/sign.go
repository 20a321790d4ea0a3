package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Sign is the webhook-signature header of a delivery per Standard
// Webhooks: "v1,<base64 HMAC-SHA256 of id.timestamp.body>" for each
// secret, space-separated (two during a rotation's grace period).
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	parts := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
		if err != nil || len(key) == 0 {
			return "", errors.New("webhooks: a signing secret is not whsec_ and base64")
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
		mac.Write([]byte{'.'})
		mac.Write(body)
		parts = append(parts, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(parts, " "), nil
}

// RetryWindow is how long a delivery is retried, from its event
// (SPEC.md, "Limits").
const RetryWindow = 7 * 24 * time.Hour

// Backoff schedules retries: exponential from First, doubling to at most
// Max, each delay drawn in [d/2, d] (jitter, so endpoints that failed
// together do not come back together), never past Window from the event.
type Backoff struct {
	First  time.Duration
	Max    time.Duration
	Window time.Duration
	Rand   func() float64 // in [0, 1); nil: math/rand/v2
}

// DefaultBackoff is 5 s doubling to 6 h over 7 days: some 35 attempts.
var DefaultBackoff = Backoff{First: 5 * time.Second, Max: 6 * time.Hour, Window: RetryWindow}

// Next is when to try again after attempt (1-based) failed at now, for an
// event of created; ok false once the window is over: the delivery has
// failed.
func (b Backoff) Next(attempt int, created, now time.Time) (next time.Time, ok bool) {
	d := b.First
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	d = d/2 + time.Duration(r()*float64(d/2))
	next = now.Add(d)
	end := created.Add(b.Window)
	if !now.Before(end) {
		return time.Time{}, false
	}
	if next.After(end) {
		next = end // one last attempt at the window's end
	}
	return next, true
}
