// Package transittest gives tests a real Vault transit mount of their own,
// prepared by the same Bootstrap that `make run` uses, with clients holding
// exactly the shipped policies: a permission the policy lacks fails the test.
package transittest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/payorch/shared/testsupport"
	"github.com/payorch/tokenizer/transit"
)

// Env is one isolated transit mount.
type Env struct {
	Vault    *testsupport.Vault
	Mount    string
	Root     *transit.Client
	Service  *transit.Client // deploy/vault/vault-proxy.hcl
	KeyAdmin *transit.Client // deploy/vault/vault-proxy-keyadmin.hcl
	Tokens   transit.Tokens
}

// New starts (or reuses, through VAULT_ADDR/VAULT_TOKEN) a real Vault and
// bootstraps a fresh mount for this test.
func New(t testing.TB) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := testsupport.StartVault(ctx)
	if err != nil {
		t.Fatalf("transittest: %v", err)
	}
	t.Cleanup(v.Close)
	env, err := Setup(ctx, v)
	if err != nil {
		t.Fatalf("transittest: %v", err)
	}
	return env
}

// Setup bootstraps a fresh mount on an already running Vault.
func Setup(ctx context.Context, v *testsupport.Vault) (*Env, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	mount := "transit-" + hex.EncodeToString(b)
	root, err := transit.New(transit.Config{Addr: v.Addr, Token: v.RootToken, Mount: mount})
	if err != nil {
		return nil, err
	}
	repo, err := testsupport.RepoRoot()
	if err != nil {
		return nil, err
	}
	toks, err := transit.Bootstrap(ctx, root, filepath.Join(repo, "deploy", "vault"))
	if err != nil {
		return nil, err
	}
	svc, err := root.WithToken(toks.Service)
	if err != nil {
		return nil, err
	}
	adm, err := root.WithToken(toks.KeyAdmin)
	if err != nil {
		return nil, err
	}
	return &Env{Vault: v, Mount: mount, Root: root, Service: svc, KeyAdmin: adm, Tokens: toks}, nil
}
