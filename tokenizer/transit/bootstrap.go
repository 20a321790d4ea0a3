package transit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	vaultapi "github.com/hashicorp/vault/api"
)

// Key names the product uses; the shipped policies in deploy/vault name them.
const (
	CardKey        = "payorch-cards"
	FingerprintKey = "payorch-fingerprint"
)

// Policy files shipped under deploy/vault.
const (
	ServicePolicyFile  = "vault-proxy.hcl"
	KeyAdminPolicyFile = "vault-proxy-keyadmin.hcl"
)

// Tokens are the policy-bound tokens Bootstrap mints.
type Tokens struct {
	Service  string // the runtime policy: vault-proxy serve
	KeyAdmin string // the key-admin policy: vault-proxy keys ...
}

// Bootstrap prepares a Vault for the product using a privileged token (root
// in development and tests, an operator's token elsewhere): it mounts transit
// at mount when missing, creates the card key and the exportable fingerprint
// HMAC key when missing, installs the shipped policies (their "transit/"
// prefix rewritten to mount) and mints one token per policy. It is
// idempotent apart from minting new tokens.
func Bootstrap(ctx context.Context, privileged *Client, policyDir string) (Tokens, error) {
	vc, mount := privileged.vc, privileged.mount
	mounts, err := vc.Sys().ListMountsWithContext(ctx)
	if err != nil {
		return Tokens{}, fmt.Errorf("%w: list mounts: %v", ErrVault, err)
	}
	if _, ok := mounts[mount+"/"]; !ok {
		if err := vc.Sys().MountWithContext(ctx, mount, &vaultapi.MountInput{Type: "transit"}); err != nil {
			return Tokens{}, fmt.Errorf("%w: mount %s: %v", ErrVault, mount, err)
		}
	}
	for key, params := range map[string]map[string]any{
		CardKey:        {"type": "aes256-gcm96"},
		FingerprintKey: {"type": "hmac", "key_size": 32, "exportable": true},
	} {
		if _, err := privileged.Key(ctx, key); err == nil {
			continue
		}
		if _, err := vc.Logical().WriteWithContext(ctx, privileged.path("keys", key), params); err != nil {
			return Tokens{}, fmt.Errorf("%w: create key %s: %v", ErrVault, key, err)
		}
	}
	var toks Tokens
	for _, p := range []struct {
		file string
		dst  *string
	}{{ServicePolicyFile, &toks.Service}, {KeyAdminPolicyFile, &toks.KeyAdmin}} {
		text, err := os.ReadFile(filepath.Join(policyDir, p.file))
		if err != nil {
			return Tokens{}, fmt.Errorf("transit: read policy: %w", err)
		}
		name := mount + "-" + strings.TrimSuffix(p.file, ".hcl")
		rules := strings.ReplaceAll(string(text), `"transit/`, `"`+mount+`/`)
		if err := vc.Sys().PutPolicyWithContext(ctx, name, rules); err != nil {
			return Tokens{}, fmt.Errorf("%w: put policy %s: %v", ErrVault, name, err)
		}
		secret, err := vc.Auth().Token().CreateWithContext(ctx, &vaultapi.TokenCreateRequest{
			Policies:        []string{name},
			NoDefaultPolicy: true,
			TTL:             "768h",
		})
		if err != nil {
			return Tokens{}, fmt.Errorf("%w: create token: %v", ErrVault, err)
		}
		if secret == nil || secret.Auth == nil || secret.Auth.ClientToken == "" {
			return Tokens{}, errors.New("transit: token create returned no token")
		}
		*p.dst = secret.Auth.ClientToken
	}
	return toks, nil
}

// WithToken returns a client for the same Vault and mount with another token.
func (c *Client) WithToken(token string) (*Client, error) {
	vc, err := c.vc.Clone()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVault, err)
	}
	vc.SetToken(token)
	return &Client{vc: vc, mount: c.mount}, nil
}
