// Package vaulttransittest gives core-api's tests a real Vault transit
// mount of their own, prepared by the same Bootstrap that `make run`
// uses, and a client holding exactly the shipped policy.
package vaulttransittest

import (
	"context"
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
	v, mount := testsupport.VaultWithMount(t, "core-transit-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := vaulttransit.Config{Addr: v.Addr, Token: v.RootToken, Mount: mount}
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
