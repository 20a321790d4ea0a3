package httpapi_test

import (
	"testing"
	"time"

	"github.com/payorch/core-api/httpapi"
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
