package testsupport

import (
	"testing"
	"time"
)

// Eventually polls cond every millisecond for up to two seconds and fails
// the test, naming what, if it never holds: for what a background
// goroutine does soon after the call under test returns.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
	}
}
