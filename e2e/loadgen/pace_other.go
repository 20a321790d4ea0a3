//go:build !linux

package loadgen

import "time"

// precisePacer is time.Sleep where there is no nanosleep with a settable
// timer slack.
func precisePacer() func(time.Duration) { return time.Sleep }
