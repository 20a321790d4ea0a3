// Package loadgen is a constant-rate load generator in the style of wrk2:
// requests are scheduled at fixed intervals and each latency is measured
// from its scheduled start, not from when a worker got round to sending it,
// so a stall shows up in the percentiles instead of being hidden
// (coordinated omission). Results go into an HdrHistogram.
package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Result summarises one run.
type Result struct {
	Sent, Errors   int64
	Duration       time.Duration
	P50, P90, P99  time.Duration
	P999, Max      time.Duration
	AchievedPerSec float64
}

// Run calls do at rate per second for duration with up to workers
// concurrent calls (bounded: the run stops by itself). do must be safe for
// concurrent use.
func Run(ctx context.Context, rate int, duration time.Duration, workers int, do func(context.Context) error) Result {
	interval := time.Second / time.Duration(rate)
	total := int64(duration / interval)
	hist := hdrhistogram.New(1, int64(30*time.Second/time.Microsecond), 3)
	var mu sync.Mutex
	var sent, errs atomic.Int64
	slots := make(chan time.Time, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for scheduled := range slots {
				err := do(ctx)
				lat := time.Since(scheduled)
				sent.Add(1)
				if err != nil {
					errs.Add(1)
				}
				mu.Lock()
				_ = hist.RecordValue(lat.Microseconds())
				mu.Unlock()
			}
		}()
	}
	// The schedule runs on its own OS thread: Go's time.Sleep wakes through
	// the network poller, whose timeout has millisecond resolution on
	// Linux, so at 2,000/s it would send in bursts and put up to a
	// millisecond of its own lag into every latency (measured: a 300 us
	// sleep overslept by ~790 us; a nanosleep with the thread's timer
	// slack at 1 us by ~40 us).
	start := time.Now()
	go func() {
		defer close(slots)
		sleep := precisePacer() // locks this goroutine's thread, which ends with it
		for i := int64(0); i < total; i++ {
			at := start.Add(time.Duration(i) * interval)
			if d := time.Until(at); d > 0 {
				sleep(d)
			}
			if ctx.Err() != nil {
				return
			}
			slots <- at // blocks when every worker is busy; the wait counts against latency
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	us := func(q float64) time.Duration { return time.Duration(hist.ValueAtQuantile(q)) * time.Microsecond }
	return Result{
		Sent: sent.Load(), Errors: errs.Load(), Duration: elapsed,
		P50: us(50), P90: us(90), P99: us(99), P999: us(99.9), Max: time.Duration(hist.Max()) * time.Microsecond,
		AchievedPerSec: float64(sent.Load()) / elapsed.Seconds(),
	}
}
