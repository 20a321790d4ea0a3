package stack

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// coreBinary builds cmd/core-api once per test binary: tests that must
// kill a service mid-request (SIGSTOP, SIGKILL) run the real command as a
// process of its own, not the in-process Main.
var coreBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "payorch-core-api-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "core-api")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/payorch/core-api/cmd/core-api").CombinedOutput()
	if err != nil {
		return "", errors.New("go build core-api: " + err.Error() + "\n" + string(out))
	}
	return bin, nil
})

// Process is core-api running as a child process (StartCoreProcess).
type Process struct {
	Cmd    *exec.Cmd
	exited chan struct{}
}

// Signal sends sig to the process (SIGSTOP freezes it with its sockets
// open; SIGKILL ends it without a drain).
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("stack: signal core-api: %v", err)
	}
}

// Kill ends the process at once and waits until it has exited, so its
// listener is closed when it returns.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	_ = p.Cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("stack: core-api did not exit after SIGKILL")
	}
}

// CoreEnv is the environment that configures the core-api binary as the
// stack configured its in-process core-api, with extra ("NAME=value")
// added. Nothing of the test's own environment is passed on.
func (s *Stack) CoreEnv(extra ...string) []string {
	c := s.CoreAPI.Config
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"ENVIRONMENT=" + c.Environment.String(),
		"CORE_API_DATABASE_URL=" + c.DatabaseURL,
		"CORE_API_ADDR=" + c.Addr,
		"CORE_API_ADMIN_ADDR=127.0.0.1:0", // processes of parallel tests must not share one
		"VAULT_PROXY_INTERNAL_URL=" + c.VaultProxyURL,
		"VAULT_PROXY_CA_FILE=" + c.VaultProxyCAFile,
		"CORE_API_CLIENT_CERT_FILE=" + c.ClientCertFile,
		"CORE_API_CLIENT_KEY_FILE=" + c.ClientKeyFile,
		"AUTH_PUBLIC_KEYS_FILE=" + c.AuthKeysFile,
		"AUTH_ISSUER=" + c.AuthIssuer,
		"CORE_API_VAULT_ADDR=" + c.Vault.Addr,
		"CORE_API_VAULT_TOKEN=" + c.Vault.Token,
		"CORE_API_VAULT_TRANSIT_MOUNT=" + c.Vault.Mount,
		"CORE_API_RATE_LIMIT=" + c.RateLimit.String(),
	}
	return append(env, extra...)
}

// StartCoreProcess replaces the stack's in-process core-api with the real
// core-api binary serving on the same address, configured by CoreEnv(extra...),
// and returns once it answers /healthz. Its log goes to s.Logs, so the
// stack's card number assertions cover it. The process is killed when the
// test ends. Call it again after a Kill to restart core-api.
func (s *Stack) StartCoreProcess(t testing.TB, extra ...string) *Process {
	t.Helper()
	bin, err := coreBinary()
	if err != nil {
		t.Fatalf("stack: %v", err)
	}
	// The in-process core-api lets go of the address first (closing it
	// again later, at cleanup, does nothing).
	if err := s.CoreAPI.Close(); err != nil {
		t.Fatalf("stack: stop the in-process core-api: %v", err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = s.CoreEnv(extra...)
	cmd.Stdout, cmd.Stderr = s.Logs, s.Logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("stack: start core-api: %v", err)
	}
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.Kill(t) }) // a stopped process takes SIGKILL too
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(s.CoreURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("stack: core-api exited at start: %v", cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("stack: core-api did not answer /healthz within a minute")
		}
	}
}

// RunCore runs one core-api command (say "reconcile-vault") to its end,
// configured by CoreEnv(extra...), and returns its standard output and
// error, and its error (an *exec.ExitError for a non-zero exit). Both go
// to s.Logs too.
func (s *Stack) RunCore(t testing.TB, args []string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, berr := coreBinary()
	if berr != nil {
		t.Fatalf("stack: %v", berr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = s.CoreEnv(extra...)
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	err = cmd.Run()
	_, _ = s.Logs.Write(out.Bytes())
	_, _ = s.Logs.Write(errOut.Bytes())
	return out.String(), errOut.String(), err
}
