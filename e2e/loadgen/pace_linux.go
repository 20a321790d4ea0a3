package loadgen

import (
	"runtime"
	"syscall"
	"time"
)

// precisePacer locks the calling goroutine to its OS thread, lowers the
// thread's timer slack to 1 us (prctl PR_SET_TIMERSLACK; the default 50
// us is the kernel's licence to batch wake-ups) and returns a sleep that
// blocks the thread in nanosleep(2) instead of parking on Go's timers.
// Call it from a goroutine of its own: the thread stays locked, and when
// the goroutine returns the runtime ends the thread, slack setting
// included, instead of handing it to other goroutines.
func precisePacer() func(time.Duration) {
	runtime.LockOSThread()
	const prSetTimerSlack = 29
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1000, 0); errno != 0 {
		runtime.UnlockOSThread()
		return time.Sleep
	}
	return func(d time.Duration) {
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
}
