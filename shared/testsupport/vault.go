package testsupport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Vault is a reachable real Vault and its root token.
type Vault struct {
	Addr      string
	RootToken string
	stop      func()
}

// Close stops a Vault this package started; a shared one is left running.
func (v *Vault) Close() {
	if v.stop != nil {
		v.stop()
	}
}

// StartVault returns the Vault named by VAULT_ADDR and VAULT_TOKEN, or starts
// the dev Vault binary (built by `make devvault` into .data/bin) on a free
// loopback port.
func StartVault(ctx context.Context) (*Vault, error) {
	if addr, tok := os.Getenv("VAULT_ADDR"), os.Getenv("VAULT_TOKEN"); addr != "" && tok != "" {
		return &Vault{Addr: addr, RootToken: tok}, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, ".data", "bin", "devvault")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("testsupport: dev Vault binary missing (%s): run `make devvault` or set VAULT_ADDR and VAULT_TOKEN", bin)
	}
	dir, err := os.MkdirTemp("", "devvault-")
	if err != nil {
		return nil, err
	}
	envFile := filepath.Join(dir, "vault.env")
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-env-file", envFile)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testsupport: start dev Vault: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(dir)
	}
	env, err := waitEnvFile(ctx, envFile, done)
	if err != nil {
		stop()
		return nil, err
	}
	return &Vault{Addr: env["VAULT_ADDR"], RootToken: env["VAULT_TOKEN"], stop: stop}, nil
}

func waitEnvFile(ctx context.Context, path string, exited <-chan struct{}) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if b, err := os.ReadFile(path); err == nil {
			return ParseEnv(b), nil
		}
		select {
		case <-exited:
			return nil, errors.New("testsupport: dev Vault exited before it was ready")
		case <-ctx.Done():
			return nil, fmt.Errorf("testsupport: dev Vault not ready: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ParseEnv reads KEY=VALUE lines (the dev Vault's env file).
func ParseEnv(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && k != "" && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// RepoRoot walks up from the working directory to the folder holding go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testsupport: go.work not found above the working directory")
		}
		dir = parent
	}
}

// Request calls the Vault HTTP API with the given token. It stays on net/http
// and JSON so that shared/ never links the Vault client library (core-api's
// dependency test forbids it).
func (v *Vault) Request(ctx context.Context, token, method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(v.Addr, "/")+"/v1/"+strings.TrimLeft(path, "/"), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Vault-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("vault %s %s: status %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	out := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// VaultWithMount is StartVault for test t (stopped when it ends), and a
// fresh transit mount name under prefix for it alone: tests that share a
// Vault never share keys.
func VaultWithMount(t testing.TB, prefix string) (*Vault, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := StartVault(ctx)
	if err != nil {
		t.Fatalf("vault: %v", err)
	}
	t.Cleanup(v.Close)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return v, prefix + hex.EncodeToString(b)
}
