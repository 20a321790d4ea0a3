// Command devvault runs one real, in-memory HashiCorp Vault core (1.17.0)
// with the transit secrets engine mounted at transit/, served over plain
// HTTP on a loopback address. It exists only for local development and
// tests (Vault is BSL-licensed and is never shipped with the product).
//
// It uses Vault's exported test helpers (vault.TestCoreUnsealedWithConfig)
// to get an initialised and unsealed core with in-memory storage, and the
// real HTTP handler (vaulthttp.Handler), so clients talk to it exactly as
// they would to a `vault server -dev`.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/vault/builtin/logical/transit"
	"github.com/hashicorp/vault/helper/namespace"
	vaulthttp "github.com/hashicorp/vault/http"
	"github.com/hashicorp/vault/internalshared/configutil"
	"github.com/hashicorp/vault/sdk/logical"
	"github.com/hashicorp/vault/vault"
	testing "github.com/mitchellh/go-testing-interface"
)

const envRootToken = "DEVVAULT_ROOT_TOKEN"

// tokenPattern restricts custom root tokens to characters that are safe in
// an env file and that Vault accepts as a custom token ID (no '.', so no
// "hvs."/"s." prefixes either).
var tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("devvault", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: devvault [flags]\n\n"+
			"Runs an in-memory Vault 1.17.0 dev server with transit mounted at transit/.\n"+
			"For local development and tests only; listens on loopback addresses only.\n\n")
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:8200", "loopback `address` to listen on (port 0 picks a free port)")
	envFile := fs.String("env-file", "", "if set, write VAULT_ADDR and VAULT_TOKEN to this `path` (mode 0600, written atomically, removed on exit)")
	rootToken := fs.String("root-token", "", "root token `id` to create (default: $"+envRootToken+", else a random 24-byte hex token)")
	printToken := fs.Bool("print-token", false, "also print VAULT_TOKEN on the ready line (stdout)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "devvault: unexpected arguments: %q\n", fs.Args())
		return 2
	}

	token := *rootToken
	if token == "" {
		token = os.Getenv(envRootToken)
	}
	if token == "" {
		var err error
		if token, err = randomToken(); err != nil {
			fmt.Fprintf(os.Stderr, "devvault: %v\n", err)
			return 1
		}
	}
	if !tokenPattern.MatchString(token) {
		fmt.Fprintln(os.Stderr, "devvault: root token must be 1-128 characters of [A-Za-z0-9_-]")
		return 2
	}

	if err := checkLoopback(*listen); err != nil {
		fmt.Fprintf(os.Stderr, "devvault: %v\n", err)
		return 2
	}

	if err := serve(*listen, *envFile, token, *printToken); err != nil {
		fmt.Fprintf(os.Stderr, "devvault: %v\n", err)
		return 1
	}
	return 0
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate root token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// checkLoopback refuses anything but a loopback IP or "localhost": this is
// a plain-HTTP, in-memory dev/test server with a known root token.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid -listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q: devvault is a dev/test tool (in-memory Vault, plain HTTP, known root token) and only listens on loopback addresses such as 127.0.0.1 or [::1]", addr)
}

func serve(listenAddr, envFile, rootToken string, printToken bool) error {
	// Catch signals from the start, so that a SIGTERM sent while the core is
	// still starting also ends in a clean shutdown (handled once ready).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	tcpAddr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !tcpAddr.IP.IsLoopback() {
		return fmt.Errorf("refusing to serve on non-loopback address %s: devvault is a dev/test tool", ln.Addr())
	}
	vaultAddr := "http://" + tcpAddr.String()

	t := &fakeT{name: "devvault"}
	defer t.runCleanups()

	core, err := startCore(t, vaultAddr, rootToken)
	if err != nil {
		return err
	}

	srv := &http.Server{
		Handler: vaulthttp.Handler.Handler(&vault.HandlerProperties{
			Core: core,
			ListenerConfig: &configutil.Listener{
				Type:       "tcp",
				Address:    tcpAddr.String(),
				TLSDisable: true,
			},
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          core.Logger().StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	if envFile != "" {
		if err := writeEnvFile(envFile, vaultAddr, rootToken); err != nil {
			_ = srv.Close()
			return err
		}
		defer os.Remove(envFile)
	}

	line := "devvault ready VAULT_ADDR=" + vaultAddr
	if printToken {
		line += " VAULT_TOKEN=" + rootToken
	}
	fmt.Println(line)

	select {
	case sig := <-sigs:
		// A second signal gets the default behaviour (immediate exit).
		signal.Stop(sigs)
		fmt.Fprintf(os.Stderr, "devvault: got signal %q, shutting down\n", sig)
	case err := <-serveErr:
		signal.Stop(sigs)
		return fmt.Errorf("http server stopped: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	// Deferred: remove the env file, run the core's cleanups (ShutdownWait).
	return nil
}

// startCore creates an initialised, unsealed in-memory core, replaces its
// generated root token by rootToken and mounts transit at transit/.
func startCore(t *fakeT, vaultAddr, rootToken string) (core *vault.Core, err error) {
	// The fake testing.T panics on Fatal; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("starting vault core failed: %v", r)
		}
	}()

	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:   "vault",
		Level:  hclog.Warn,
		Output: os.Stderr,
	})

	// The helper also builds a trace-level test logger on os.Stderr for the
	// in-memory storage backend (it logs an INFO line at creation). Point
	// os.Stderr at /dev/null while the helper runs so only our warn-level
	// logger reaches the real stderr. Nothing else runs concurrently here.
	if devNull, derr := os.OpenFile(os.DevNull, os.O_WRONLY, 0); derr == nil {
		realStderr := os.Stderr
		os.Stderr = devNull
		defer func() { os.Stderr = realStderr }()
		t.Cleanup(func() { _ = devNull.Close() })
	}

	core, _, genRoot := vault.TestCoreUnsealedWithConfig(t, &vault.CoreConfig{
		LogicalBackends: map[string]logical.Factory{
			"transit": transit.Factory,
		},
		Logger:       logger,
		RedirectAddr: vaultAddr,
	})

	ctx := namespace.RootContext(context.Background())

	// Like `vault server -dev-root-token-id`: create the fixed root token,
	// then revoke the generated one.
	resp, err := core.HandleRequest(ctx, &logical.Request{
		Operation:   logical.UpdateOperation,
		ClientToken: genRoot,
		Path:        "auth/token/create",
		Data: map[string]interface{}{
			"id":                rootToken,
			"policies":          []string{"root"},
			"no_parent":         true,
			"no_default_policy": true,
		},
	})
	if err := respErr("create root token", resp, err); err != nil {
		return nil, err
	}
	if resp.Auth == nil || resp.Auth.ClientToken != rootToken {
		return nil, errors.New("create root token: unexpected response")
	}
	resp, err = core.HandleRequest(ctx, &logical.Request{
		Operation:   logical.UpdateOperation,
		ClientToken: genRoot,
		Path:        "auth/token/revoke-self",
	})
	if err := respErr("revoke generated root token", resp, err); err != nil {
		return nil, err
	}

	resp, err = core.HandleRequest(ctx, &logical.Request{
		Operation:   logical.UpdateOperation,
		ClientToken: rootToken,
		Path:        "sys/mounts/transit",
		Data: map[string]interface{}{
			"type":        "transit",
			"description": "transit secrets engine (devvault)",
		},
	})
	if err := respErr("mount transit/", resp, err); err != nil {
		return nil, err
	}
	return core, nil
}

func respErr(what string, resp *logical.Response, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if resp != nil && resp.IsError() {
		return fmt.Errorf("%s: %w", what, resp.Error())
	}
	return nil
}

// writeEnvFile writes VAULT_ADDR and VAULT_TOKEN atomically: a temp file
// in the same directory, mode 0600, then rename over path.
func writeEnvFile(path, vaultAddr, token string) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	if _, err = io.WriteString(f, "VAULT_ADDR="+vaultAddr+"\nVAULT_TOKEN="+token+"\n"); err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	return nil
}

// fakeT satisfies go-testing-interface's testing.T for Vault's exported
// test helpers. Unlike testing.RuntimeT it records Cleanup funcs; they run
// (last registered first) at shutdown.
type fakeT struct {
	testing.RuntimeT

	name     string
	mu       sync.Mutex
	cleanups []func()
}

var _ testing.T = (*fakeT)(nil)

func (t *fakeT) Name() string { return t.name }

func (t *fakeT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *fakeT) runCleanups() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}
