// Package vaulttransittest gives core-api's tests a real Vault transit
// mount of their own, prepared by the same Bootstrap that `make run`
// uses, and a client holding exactly the shipped policy.
package vaulttransittest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/payorch/core-api/vaulttransit"
	"github.com/payorch/shared/testsupport"
)

// Env is one isolated transit mount.
type Env struct {
	Vault  *testsupport.Vault
	Config vaulttransit.Config // the runtime token's
	Client *vaulttransit.Client
	Root   *vaulttransit.Client
}

// New starts (or reuses, through VAULT_ADDR/VAULT_TOKEN) a real Vault and
// bootstraps a fresh mount for this test.
func New(t testing.TB) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := testsupport.StartVault(ctx)
	if err != nil {
		t.Fatalf("vaulttransittest: %v", err)
	}
	t.Cleanup(v.Close)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	cfg := vaulttransit.Config{Addr: v.Addr, Token: v.RootToken, Mount: "core-transit-" + hex.EncodeToString(b)}
	root, err := vaulttransit.New(cfg)
	if err != nil {
		t.Fatalf("vaulttransittest: %v", err)
	}
	repo, err := testsupport.RepoRoot()
	if err != nil {
		t.Fatalf("vaulttransittest: %v", err)
	}
	tok, err := vaulttransit.Bootstrap(ctx, root, filepath.Join(repo, "deploy", "vault", vaulttransit.PolicyFile))
	if err != nil {
		t.Fatalf("vaulttransittest: %v", err)
	}
	cfg.Token = tok
	c, err := vaulttransit.New(cfg)
	if err != nil {
		t.Fatalf("vaulttransittest: %v", err)
	}
	return &Env{Vault: v, Config: cfg, Client: c, Root: root}
}
