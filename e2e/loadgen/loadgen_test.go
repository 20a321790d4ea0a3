package loadgen

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Run sends exactly rate x duration calls, counts the failed ones, keeps
// the schedule and reports ordered percentiles.
func TestRunKeepsTheScheduleAndCountsErrors(t *testing.T) {
	var calls atomic.Int64
	errBoom := errors.New("boom")
	r := Run(context.Background(), 1000, 300*time.Millisecond, 8, func(context.Context) error {
		if calls.Add(1)%10 == 0 {
			return errBoom
		}
		return nil
	})
	if r.Sent != 300 || calls.Load() != 300 {
		t.Fatalf("sent %d (do called %d times), want 300", r.Sent, calls.Load())
	}
	if r.Errors != 30 {
		t.Errorf("errors %d, want 30", r.Errors)
	}
	// The last call is scheduled at 299 ms: a run much longer than that
	// means the pacer fell behind (a machine shared with -race tests
	// allows some slack).
	if r.Duration < 299*time.Millisecond || r.Duration > 600*time.Millisecond {
		t.Errorf("run took %v, want about 300 ms", r.Duration)
	}
	if !(r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.P999 && r.P999 <= r.Max) || r.Max <= 0 {
		t.Errorf("percentiles out of order: %+v", r)
	}
}

// A cancelled context stops the schedule: no call is made after it.
func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	r := Run(ctx, 1000, time.Second, 4, func(context.Context) error { calls.Add(1); return nil })
	if r.Sent != 0 || calls.Load() != 0 {
		t.Fatalf("sent %d after cancel, want 0", r.Sent)
	}
}
