package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

// TestTokenMerchantAccounts: `core-api token` mints a token for the one
// merchant account it is given, "default" unless told otherwise; every
// account only when asked for explicitly.
func TestTokenMerchantAccounts(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		can  map[string]bool
	}{
		{"no account named", nil, map[string]bool{"default": true, "other": false}},
		{"one account", []string{"-merchant-account", "acme"}, map[string]bool{"acme": true, "default": false}},
		{"every account", []string{"-all-merchant-accounts"}, map[string]bool{"acme": true, "default": true, "other": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mintWithCLI(t, dir, tc.args...)
			for id, want := range tc.can {
				if got := p.CanAccessMerchant(id); got != want {
					t.Errorf("CanAccessMerchant(%q) = %v (MerchantAccountIDs %v)", id, got, p.MerchantAccountIDs)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"both", []string{"-merchant-account", "acme", "-all-merchant-accounts"}},
		{"an empty account", []string{"-merchant-account", ""}},
		{"an account id no account can have", []string{"-merchant-account", "*"}},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			var out strings.Builder
			args := append([]string{"-key-dir", dir, "-scopes", "buyers.read"}, tc.args...)
			if err := token(args, &out); err == nil {
				t.Fatalf("minted %s", out.String())
			}
		})
	}
}

// mintWithCLI runs `core-api token` with args in key directory dir and
// returns the principal the printed token verifies as.
func mintWithCLI(t *testing.T, dir string, args ...string) *auth.Principal {
	t.Helper()
	var out strings.Builder
	if err := token(append([]string{"-key-dir", dir, "-scopes", "buyers.read"}, args...), &out); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadKeySetFile(filepath.Join(dir, auth.PublicKeysFile), "payorch")
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(context.Background(), "Bearer "+strings.TrimSpace(out.String()), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
