// Package periodic runs a background job on a schedule until its context
// ends: the one loop of the services' periodic jobs.
package periodic

import (
	"context"
	"time"
)

// Every calls run first after first, then interval after each call
// returns, until ctx ends; a call under way when ctx ends gets the ended
// ctx and is waited for.
func Every(ctx context.Context, first, interval time.Duration, run func(ctx context.Context)) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		run(ctx)
		t.Reset(interval)
	}
}
