package vaulttransit_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/payorch/core-api/vaulttransit"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
	"github.com/payorch/shared/testsupport"
)

// A ciphertext decrypts with its own binding only, and holds nothing of
// the plaintext.
func TestCiphertextsAreBoundToTheirRecord(t *testing.T) {
	env := vaulttransittest.New(t)
	ctx := context.Background()
	const secret = `{"api_key":"mc_test_0123456789abcdef"}`
	ct, err := env.Client.Encrypt(ctx, "default\x00id-1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ct, "0123456789abcdef") || !strings.HasPrefix(ct, "vault:v1:") {
		t.Fatalf("ciphertext %q", ct)
	}
	got, err := env.Client.Decrypt(ctx, "default\x00id-1", ct)
	if err != nil || string(got) != secret {
		t.Fatalf("decrypt: %q %v", got, err)
	}
	for name, b := range map[string]string{
		"another record":           "default\x00id-2",
		"another merchant account": "other\x00id-1",
		"no separation":            "defaultid-1",
	} {
		if _, err := env.Client.Decrypt(ctx, b, ct); !errors.Is(err, vaulttransit.ErrVault) {
			t.Errorf("%s: decrypted (%v)", name, err)
		}
	}
	if err := env.Client.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
}

// The runtime token holds the shipped policy alone: it cannot read the
// key, nor use another key on the mount.
func TestTheRuntimeTokenIsLeastPrivilege(t *testing.T) {
	env := vaulttransittest.New(t)
	ctx := context.Background()
	other := env.Config
	other.Key = "payorch-cards"
	c, err := vaulttransit.New(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Encrypt(ctx, "b", []byte("x")); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("another key: %v", err)
	}
	// Bootstrapping again keeps the key (and so every ciphertext).
	ct, err := env.Client.Encrypt(ctx, "b", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := testsupport.RepoRoot()
	if _, err := vaulttransit.Bootstrap(ctx, env.Root, filepath.Join(repo, "deploy", "vault", vaulttransit.PolicyFile)); err != nil {
		t.Fatal(err)
	}
	if pt, err := env.Client.Decrypt(ctx, "b", ct); err != nil || string(pt) != "x" {
		t.Fatalf("after a second bootstrap: %q %v", pt, err)
	}
}

func TestNewNeedsAddressAndToken(t *testing.T) {
	if _, err := vaulttransit.New(vaulttransit.Config{Addr: "http://127.0.0.1:1"}); !errors.Is(err, vaulttransit.ErrVault) {
		t.Fatalf("no token: %v", err)
	}
}
