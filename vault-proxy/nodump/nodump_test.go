//go:build linux

package nodump_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/payorch/vault-proxy/nodump"
	"golang.org/x/sys/unix"
)

// The test binary runs itself as the process that crashes: "open" with
// core files allowed, "nodump" after Apply.
const childEnv = "NODUMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		crash(mode)
	}
	os.Exit(m.Run())
}

// crash holds a stand-in secret in memory and dies the way a runtime fault
// would: a traceback, then SIGABRT, which writes a core file if the process
// may dump one.
func crash(mode string) {
	// Core files allowed up to 64 MiB, within the hard limit the process
	// was given: enough to show one is written without filling the disk
	// with a race-detector build's core.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		os.Exit(3)
	}
	lim.Cur = min(64<<20, lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		os.Exit(3)
	}
	if mode == "nodump" {
		if err := nodump.Apply(); err != nil {
			os.Exit(4)
		}
		// A process running as root could raise its limit again; the
		// dumpable flag still refuses the core.
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 64 << 20, Max: 64 << 20})
	}
	secret := []byte("stand-in for a decrypted card record")
	debug.SetTraceback("crash")
	panic(string(secret))
}

func TestApplyTurnsOffCoreFiles(t *testing.T) {
	// An "open" process of the same binary must leave a core file here,
	// else this machine writes no core files in the working directory (a
	// core_pattern pipe, say) and the absence below would prove nothing.
	if n := coresAfterCrash(t, "open"); n == 0 {
		pattern, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_CORE, &lim)
		t.Skipf("a crashing process writes no core file in its directory here (core_pattern %q, core size hard limit %d)",
			strings.TrimSpace(string(pattern)), lim.Max)
	}
	if n := coresAfterCrash(t, "nodump"); n != 0 {
		t.Fatalf("after Apply the crash left %d core file(s), want none", n)
	}
}

func TestApplySetsFlagAndLimit(t *testing.T) {
	// Apply changes this test process for good: run it in a child.
	if os.Getenv(childEnv+"_FLAGS") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestApplySetsFlagAndLimit$")
		cmd.Env = append(os.Environ(), childEnv+"_FLAGS=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if err := nodump.Apply(); err != nil {
		t.Fatal(err)
	}
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || dumpable != 0 {
		t.Errorf("PR_GET_DUMPABLE = %d, %v; want 0", dumpable, err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Cur != 0 || lim.Max != 0 {
		t.Errorf("RLIMIT_CORE = %+v, %v; want 0/0", lim, err)
	}
}

// coresAfterCrash runs a crashing child in a fresh directory and counts the
// core files it leaves there.
func coresAfterCrash(t *testing.T, mode string) int {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("%s child: %v, want a crash", mode, err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
		t.Fatalf("%s child ended with %v, want SIGABRT", mode, err)
	}
	cores, err := filepath.Glob(filepath.Join(dir, "core*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(cores)
}
