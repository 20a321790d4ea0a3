package deadline_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/deadline"
)

type key struct{}

// reference is what deadline.WithTimeout must behave as.
func reference(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), d)
}

// impls are the two, for tests and benchmarks that run both.
var impls = []struct {
	name string
	new  func(context.Context, time.Duration) (context.Context, context.CancelFunc)
}{{"deadline", deadline.WithTimeout}, {"reference", reference}}

func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// Every case runs against deadline.WithTimeout and the standard library's
// equivalent, and both must show the same Err, Cause and Done.
func TestBehavesAsWithTimeoutOfWithoutCancel(t *testing.T) {
	const short = 20 * time.Millisecond
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		steps   func(ctx context.Context, cancel context.CancelFunc)
		wantErr error
	}{
		{"fresh", time.Hour, func(context.Context, context.CancelFunc) {}, nil},
		{"deadline passed, Done never asked", short, func(context.Context, context.CancelFunc) { time.Sleep(2 * short) }, context.DeadlineExceeded},
		{"waited on Done until the deadline", short, func(ctx context.Context, _ context.CancelFunc) { <-ctx.Done() }, context.DeadlineExceeded},
		{"cancelled before Done was asked", time.Hour, func(_ context.Context, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"cancelled after Done was asked", time.Hour, func(ctx context.Context, cancel context.CancelFunc) { _ = ctx.Done(); cancel() }, context.Canceled},
		{"cancelled after the deadline passed", short, func(_ context.Context, cancel context.CancelFunc) { time.Sleep(2 * short); cancel() }, context.DeadlineExceeded},
		{"cancelled twice", time.Hour, func(_ context.Context, cancel context.CancelFunc) { cancel(); cancel() }, context.Canceled},
	} {
		for _, impl := range impls {
			t.Run(tc.name+"/"+impl.name, func(t *testing.T) {
				parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
				ctx, cancel := impl.new(parent, tc.timeout)
				defer cancel()
				cancelParent() // never reaches ctx
				tc.steps(ctx, cancel)
				if err := ctx.Err(); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("Err = %v, want %v", err, tc.wantErr)
				}
				if cause := context.Cause(ctx); cause != ctx.Err() {
					t.Fatalf("Cause = %v, Err = %v", cause, ctx.Err())
				}
				if isDone(ctx) != (tc.wantErr != nil) {
					t.Fatalf("Done closed = %v with Err %v", isDone(ctx), ctx.Err())
				}
				if d, ok := ctx.Deadline(); !ok || time.Until(d) > tc.timeout {
					t.Fatalf("Deadline = %v, %v", d, ok)
				}
				if v := ctx.Value(key{}); v != "v" {
					t.Fatalf("Value = %v", v)
				}
			})
		}
	}
}

// Children and context.AfterFunc follow the context: cancelled with it, and
// done at its deadline.
func TestChildrenFollow(t *testing.T) {
	ctx, cancel := deadline.WithTimeout(context.Background(), time.Hour)
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the child was not cancelled")
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the AfterFunc did not run")
	}
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child Err = %v", child.Err())
	}

	ctx, cancel = deadline.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	child, cancelChild = context.WithTimeout(ctx, time.Hour)
	defer cancelChild()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the child outlived its parent's deadline")
	}
	if !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("child Err = %v", child.Err())
	}

	// A context already done: the child is born done, AfterFunc runs.
	ctx, cancel = deadline.WithTimeout(context.Background(), time.Hour)
	cancel()
	child, cancelChild = context.WithCancel(ctx)
	defer cancelChild()
	if !isDone(child) {
		t.Fatal("a child of a cancelled context is not done")
	}
	ran = make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the AfterFunc of a done context did not run")
	}
}

// Done, Err, children and cancel from many goroutines at once (-race).
func TestConcurrentUse(t *testing.T) {
	for range 50 {
		ctx, cancel := deadline.WithTimeout(context.Background(), time.Millisecond)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				switch i % 4 {
				case 0:
					<-ctx.Done()
				case 1:
					for ctx.Err() == nil {
						time.Sleep(100 * time.Microsecond)
					}
				case 2:
					c, cc := context.WithCancel(ctx)
					<-c.Done()
					cc()
				case 3:
					cancel()
				}
			})
		}
		wg.Wait()
		if ctx.Err() == nil || !isDone(ctx) {
			t.Fatalf("Err = %v", ctx.Err())
		}
	}
}

// The point of the package: no timer, hence far less work, when only the
// deadline and Err are read.
func BenchmarkWithTimeout(b *testing.B) {
	parent := context.Background()
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := impl.new(parent, time.Minute)
				if _, ok := ctx.Deadline(); !ok || ctx.Err() != nil {
					b.Fatal("no deadline")
				}
				cancel()
			}
		})
	}
}
