package webhooks

import (
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := Backoff{First: 5 * time.Second, Max: 6 * time.Hour, Window: RetryWindow, Rand: func() float64 { return 0.999999 }}
	low := b
	low.Rand = func() float64 { return 0 }
	cases := []struct {
		attempt int
		at      time.Time
		max     time.Duration // the delay with the largest draw
		ok      bool
	}{
		{1, created, 5 * time.Second, true},
		{2, created.Add(5 * time.Second), 10 * time.Second, true},
		{5, created.Add(time.Minute), 80 * time.Second, true},
		{20, created.Add(24 * time.Hour), 6 * time.Hour, true},          // capped
		{30, created.Add(RetryWindow - time.Minute), time.Minute, true}, // clipped to the window's end
		{31, created.Add(RetryWindow), 0, false},                        // over: failed
		{40, created.Add(RetryWindow + time.Hour), 0, false},            // over: failed
	}
	for _, c := range cases {
		next, ok := b.Next(c.attempt, created, c.at)
		if ok != c.ok {
			t.Fatalf("attempt %d at %s: ok %v, want %v", c.attempt, c.at, ok, c.ok)
		}
		if !ok {
			continue
		}
		if d := next.Sub(c.at); d > c.max || d < c.max-time.Second {
			t.Errorf("attempt %d: delay %s, want about %s", c.attempt, d, c.max)
		}
		// Jitter: the smallest draw waits half as long (unless clipped).
		if lnext, _ := low.Next(c.attempt, created, c.at); c.attempt < 30 && lnext.Sub(c.at) != c.max/2 {
			t.Errorf("attempt %d: the smallest draw waits %s, want %s", c.attempt, lnext.Sub(c.at), c.max/2)
		}
	}
}

func TestSignTwoSecretsDuringRotation(t *testing.T) {
	at := time.Unix(1700000000, 0)
	s1, s2 := NewSecret(), NewSecret()
	one, err := Sign([]string{s1}, "msg_1", at, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	both, err := Sign([]string{s2, s1}, "msg_1", at, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(both, " ")
	if len(parts) != 2 || parts[1] != one || !strings.HasPrefix(parts[0], "v1,") {
		t.Fatalf("signatures %q; want the new secret's then %q", both, one)
	}
	if _, err := Sign([]string{"whsec_!!"}, "m", at, nil); err == nil {
		t.Fatal("a malformed secret signed")
	}
}
