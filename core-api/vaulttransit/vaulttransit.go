// Package vaulttransit encrypts core-api's secrets at rest (a payment
// service's credentials) with HashiCorp Vault's transit engine: the key
// stays in Vault, the core database holds only transit ciphertext.
//
// The key (CredentialsKey) is a derived key: every call carries a context
// (the merchant account and the record's id), from which Vault derives the
// key that encrypts, so a ciphertext copied to another record, or another
// merchant account's, does not decrypt. core-api's token may encrypt and
// decrypt with that key and nothing else (deploy/vault/core-api.hcl); it
// reaches none of vault-proxy's card keys, on the same mount or not.
//
// This is core-api's own client, not the tokenizer's (which core-api must
// never link: core-api/deps_test.go).
package vaulttransit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	vaultapi "github.com/hashicorp/vault/api"
	"github.com/payorch/shared/vaulthttp"
)

// CredentialsKey is the transit key of payment service credentials.
const CredentialsKey = "core-api-credentials"

// PolicyFile is the runtime policy shipped under deploy/vault.
const PolicyFile = "core-api.hcl"

// Config selects the Vault, its token and the transit mount.
type Config struct {
	Addr    string
	Token   string
	Mount   string        // default "transit"
	CAFile  string        // PEM roots to trust for Vault's TLS, on top of the system's
	Key     string        // default CredentialsKey
	Timeout time.Duration // per request; default 10s
}

// Client encrypts and decrypts with one derived transit key.
type Client struct {
	vc         *vaultapi.Client
	mount, key string
}

// ErrVault is the class of every error from Vault; its text (which can
// echo request paths) is for logs only.
var ErrVault = errors.New("vault transit")

// New builds a client; it does not call Vault (Ready does).
func New(cfg Config) (*Client, error) {
	if cfg.Addr == "" || cfg.Token == "" {
		return nil, fmt.Errorf("%w: address and token are required", ErrVault)
	}
	if cfg.Mount == "" {
		cfg.Mount = "transit"
	}
	if cfg.Key == "" {
		cfg.Key = CredentialsKey
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	hc, err := vaulthttp.NewClient(cfg.CAFile, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVault, err)
	}
	// Not vaultapi.DefaultConfig, which reads VAULT_* from the environment
	// past core-api's strict loader (VAULT_SKIP_VERIFY would turn
	// certificate checks off): the client is Config alone.
	vc, err := vaultapi.NewClient(&vaultapi.Config{
		Address: cfg.Addr, HttpClient: hc, Timeout: cfg.Timeout,
		MaxRetries: 2, MinRetryWait: 500 * time.Millisecond, MaxRetryWait: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVault, err)
	}
	// NewClient still takes these from the environment.
	vc.ClearNamespace()
	vc.SetHeaders(http.Header{vaultapi.RequestHeaderName: {"true"}})
	vc.SetToken(cfg.Token)
	return &Client{vc: vc, mount: strings.Trim(cfg.Mount, "/"), key: cfg.Key}, nil
}

// Encrypt encrypts plaintext under the key derived for binding, the
// derivation context that names the record the ciphertext belongs to
// (its merchant account and id): it decrypts with the same binding only.
func (c *Client) Encrypt(ctx context.Context, binding string, plaintext []byte) (string, error) {
	s, err := c.vc.Logical().WriteWithContext(ctx, c.mount+"/encrypt/"+c.key, map[string]any{
		"plaintext": base64.StdEncoding.EncodeToString(plaintext),
		"context":   base64.StdEncoding.EncodeToString([]byte(binding)),
	})
	if err != nil {
		return "", fmt.Errorf("%w: encrypt: %v", ErrVault, err)
	}
	ct, _ := dataOf(s)["ciphertext"].(string)
	if !strings.HasPrefix(ct, "vault:v") {
		return "", fmt.Errorf("%w: encrypt: no ciphertext", ErrVault)
	}
	return ct, nil
}

// Decrypt decrypts a ciphertext of Encrypt with the same binding; another
// binding fails.
func (c *Client) Decrypt(ctx context.Context, binding, ciphertext string) ([]byte, error) {
	s, err := c.vc.Logical().WriteWithContext(ctx, c.mount+"/decrypt/"+c.key, map[string]any{
		"ciphertext": ciphertext,
		"context":    base64.StdEncoding.EncodeToString([]byte(binding)),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: decrypt: %v", ErrVault, err)
	}
	pt, _ := dataOf(s)["plaintext"].(string)
	raw, err := base64.StdEncoding.DecodeString(pt)
	if err != nil {
		return nil, fmt.Errorf("%w: decrypt: bad plaintext", ErrVault)
	}
	return raw, nil
}

// Ready checks that Vault answers and the key can be used: a round trip
// of a fixed probe.
func (c *Client) Ready(ctx context.Context) error {
	const probe = "readiness"
	ct, err := c.Encrypt(ctx, probe, []byte(probe))
	if err != nil {
		return err
	}
	_, err = c.Decrypt(ctx, probe, ct)
	return err
}

func dataOf(s *vaultapi.Secret) map[string]any {
	if s == nil {
		return nil
	}
	return s.Data
}

// Bootstrap prepares Vault for core-api with a privileged token (root in
// development and tests, an operator's elsewhere): it mounts transit at
// the client's mount when missing, creates the derived credentials key
// when missing, installs policyFile (its "transit/" prefix rewritten to
// the mount) and mints a token holding that policy alone. It is
// idempotent apart from minting a new token.
func Bootstrap(ctx context.Context, privileged *Client, policyFile string) (token string, err error) {
	vc, mount := privileged.vc, privileged.mount
	mounts, err := vc.Sys().ListMountsWithContext(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: list mounts: %v", ErrVault, err)
	}
	if _, ok := mounts[mount+"/"]; !ok {
		if err := vc.Sys().MountWithContext(ctx, mount, &vaultapi.MountInput{Type: "transit"}); err != nil {
			return "", fmt.Errorf("%w: mount %s: %v", ErrVault, mount, err)
		}
	}
	keyPath := mount + "/keys/" + privileged.key
	if s, err := vc.Logical().ReadWithContext(ctx, keyPath); err != nil || s == nil {
		if _, err := vc.Logical().WriteWithContext(ctx, keyPath, map[string]any{"type": "aes256-gcm96", "derived": true}); err != nil {
			return "", fmt.Errorf("%w: create key: %v", ErrVault, err)
		}
	} else if derived, _ := s.Data["derived"].(bool); !derived {
		return "", fmt.Errorf("%w: key %s exists but is not derived: ciphertexts would not be bound to their records", ErrVault, privileged.key)
	}
	text, err := os.ReadFile(policyFile)
	if err != nil {
		return "", fmt.Errorf("vaulttransit: read policy: %w", err)
	}
	name := mount + "-core-api"
	rules := strings.ReplaceAll(string(text), `"transit/`, `"`+mount+`/`)
	if err := vc.Sys().PutPolicyWithContext(ctx, name, rules); err != nil {
		return "", fmt.Errorf("%w: put policy: %v", ErrVault, err)
	}
	s, err := vc.Auth().Token().CreateWithContext(ctx, &vaultapi.TokenCreateRequest{
		Policies: []string{name}, NoDefaultPolicy: true, TTL: "768h",
	})
	if err != nil {
		return "", fmt.Errorf("%w: create token: %v", ErrVault, err)
	}
	if s == nil || s.Auth == nil || s.Auth.ClientToken == "" {
		return "", errors.New("vaulttransit: token create returned no token")
	}
	return s.Auth.ClientToken, nil
}
