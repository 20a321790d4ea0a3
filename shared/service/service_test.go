package service_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/payorch/shared/service"
)

// drainForever is a service whose drain never ends, as one stuck request
// makes it. Run says when the signal handler is in place.
type drainForever struct{}

func (drainForever) Run(context.Context) error { fmt.Println("running"); return nil }
func (drainForever) Close() error              { select {} }

// The first signal starts the drain; a second one ends the process at
// once instead of being swallowed until the drain ends.
func TestSecondSignalStopsTheDrain(t *testing.T) {
	if os.Getenv("SERVICE_TEST_CHILD") == "1" {
		log := slog.New(slog.NewTextHandler(os.Stdout, nil))
		_ = service.Run(context.Background(), log, drainForever{})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSecondSignalStopsTheDrain$")
	cmd.Env = append(os.Environ(), "SERVICE_TEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
		close(lines)
	}()
	await := func(what string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the child ended before %q", what)
				}
				if strings.Contains(l, what) {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the child never printed %q", what)
			}
		}
	}
	await("running")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	await("shutting down")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Fatalf("the child ended with %v, want killed by the second SIGTERM", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second SIGTERM did not stop the drain")
	}
}
