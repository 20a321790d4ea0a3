// Package nodump keeps the card data in vault-proxy's memory out of core
// files and out of reach of other processes of the same user.
//
// vault-proxy holds card numbers in memory between decryption and sending,
// and data keys for as long as they are cached. A core file written when the
// process crashes would put them on disk, where PCI DSS 3.5 forbids them in
// the clear; a debugger or /proc/<pid>/mem reader running as the same user
// would read them live. Zeroing buffers (shared/secret) narrows the window
// but cannot close it; this closes both doors for the process as a whole.
// Swap is the host's part: deploy/production keeps the service's memory out
// of it (MemorySwapMax=0).
package nodump

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Apply makes the calling process non-dumpable (no core file; ptrace and
// /proc/<pid>/mem only for a process holding CAP_SYS_PTRACE) and sets its
// core size limit to zero, hard and soft, so that a later change of the
// kernel's suid_dumpable setting cannot bring core files back. The
// dumpable flag is inherited by threads and kept across fork, so call it
// first thing in main, before anything is decrypted.
func Apply() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("nodump: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return fmt.Errorf("nodump: setrlimit(RLIMIT_CORE, 0): %w", err)
	}
	return nil
}
