package periodic_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payorch/shared/periodic"
)

// Every runs the job repeatedly and returns once its context ends.
func TestEveryRunsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		periodic.Every(ctx, time.Millisecond, time.Millisecond, func(context.Context) {
			if runs.Add(1) == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3 (none after the cancel)", n)
	}
}
