// Package deadline gives a request a context with a deadline that starts
// no timer unless something waits on it.
//
// context.WithTimeout allocates a timer and a cancel context, and stops
// the timer again, for every request. Most requests of a hot path (a
// /vault-forward whose cards, key and config are cached) only ask for the
// deadline (the outbound client reads Deadline and Err) and never wait on
// Done, so the timer is pure cost there: ~0.9 us of the forward's CPU in
// a profile (BENCHMARKS.md, "Vault forward"). This context reads the
// clock in Err instead, and builds the timer context the first time Done
// is asked for, or when a child context or context.AfterFunc needs it.
package deadline

import (
	"context"
	"sync"
	"time"
)

// closed is the Done channel of a context cancelled before anything asked
// for Done.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

type ctx struct {
	parent   context.Context // context.WithoutCancel of the caller's: values only
	deadline time.Time

	mu    sync.Mutex
	timed context.Context // built by the first Done, AfterFunc or child
	stop  context.CancelFunc
	err   error // set once done
}

// WithTimeout returns a context carrying parent's values, never cancelled
// by parent (as context.WithoutCancel), done when timeout has passed or
// cancel is called, whichever is first. It behaves as
// context.WithTimeout(context.WithoutCancel(parent), timeout); cancel
// must be called, as with it.
func WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	c := &ctx{parent: context.WithoutCancel(parent), deadline: time.Now().Add(timeout)}
	return c, c.cancel
}

func (c *ctx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *ctx) Value(key any) any { return c.parent.Value(key) }

func (c *ctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errLocked()
}

func (c *ctx) errLocked() error {
	switch {
	case c.err != nil:
	case c.timed != nil:
		c.err = c.timed.Err()
	case !time.Now().Before(c.deadline):
		c.err = context.DeadlineExceeded
	}
	return c.err
}

func (c *ctx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil && c.errLocked() != nil {
		return closed
	}
	return c.timedLocked().Done()
}

// AfterFunc lets context.AfterFunc, and children made with WithCancel or
// WithTimeout, follow this context without a goroutine each.
func (c *ctx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	if c.timed == nil && c.errLocked() != nil {
		c.mu.Unlock()
		go f() // as context.AfterFunc does for a context already done
		return func() bool { return false }
	}
	t := c.timedLocked()
	c.mu.Unlock()
	return context.AfterFunc(t, f)
}

func (c *ctx) timedLocked() context.Context {
	if c.timed == nil {
		c.timed, c.stop = context.WithDeadline(c.parent, c.deadline)
	}
	return c.timed
}

func (c *ctx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.stop()
	}
	if c.errLocked() == nil {
		c.err = context.Canceled
	}
}

func (c *ctx) String() string { return "deadline.WithTimeout" }
