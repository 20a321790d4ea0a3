// Package transit is vault-proxy's narrow client for HashiCorp Vault's
// transit engine: the only code of vault-proxy that talks to Vault (core-api
// has its own client, for its own key: core-api/vaulttransit).
//
// It exposes exactly what envelope encryption needs (wrapped data keys,
// unwrapping, rewrap on rotation, key metadata, the fingerprint HMAC key) so
// the least-privilege policy in deploy/vault can be read off this file.
package transit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	vaultapi "github.com/hashicorp/vault/api"
	"github.com/payorch/shared/vaulthttp"
)

// Config selects the Vault, its token and the transit mount.
type Config struct {
	Addr    string
	Token   string
	Mount   string        // default "transit"
	Timeout time.Duration // per request; default 10s
	// CAFile names PEM certificates to trust for Vault's TLS, on top of the
	// system's roots (VAULT_CACERT, read by the service's own loader).
	CAFile string
}

// Client wraps a vault/api client bound to one transit mount.
type Client struct {
	vc    *vaultapi.Client
	mount string
}

// ErrVault is the class of every error from Vault. Callers map it to a
// server error; its text (which can echo request paths) is for logs only.
var ErrVault = errors.New("vault transit")

// New builds a client. It does not call Vault; use Health for that.
func New(cfg Config) (*Client, error) {
	if cfg.Addr == "" || cfg.Token == "" {
		return nil, fmt.Errorf("%w: address and token are required", ErrVault)
	}
	if cfg.Mount == "" {
		cfg.Mount = "transit"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	hc, err := vaulthttp.NewClient(cfg.CAFile, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVault, err)
	}
	// Not vaultapi.DefaultConfig: it reads its own environment variables,
	// leniently and past the service's loader (VAULT_SKIP_VERIFY=TRUE turns
	// certificate checks off, VAULT_HTTP_PROXY sends the data keys through
	// a proxy). The client is built here from Config alone.
	vc := &vaultapi.Config{
		Address:      cfg.Addr,
		HttpClient:   hc,
		Timeout:      cfg.Timeout,
		MaxRetries:   2, // vault/api retries 5xx; ours to bound
		MinRetryWait: time.Second,
		MaxRetryWait: 1500 * time.Millisecond,
	}
	c, err := vaultapi.NewClient(vc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVault, err)
	}
	// NewClient still takes these from the environment (VAULT_NAMESPACE,
	// VAULT_HEADERS). The headers become exactly the library's own default,
	// which a Vault Agent or Proxy in front of Vault requires.
	c.ClearNamespace()
	c.SetHeaders(http.Header{vaultapi.RequestHeaderName: {"true"}})
	c.SetToken(cfg.Token)
	return &Client{vc: c, mount: cfg.Mount}, nil
}

func (c *Client) path(parts ...string) string {
	p := c.mount
	for _, s := range parts {
		p += "/" + s
	}
	return p
}

func (c *Client) write(ctx context.Context, path string, body map[string]any) (*vaultapi.Secret, error) {
	s, err := c.vc.Logical().WriteWithContext(ctx, path, body)
	if err != nil {
		return nil, fmt.Errorf("%w: write %s: %v", ErrVault, path, err)
	}
	if s == nil || s.Data == nil {
		return nil, fmt.Errorf("%w: write %s: empty response", ErrVault, path)
	}
	return s, nil
}

func (c *Client) read(ctx context.Context, path string) (*vaultapi.Secret, error) {
	s, err := c.vc.Logical().ReadWithContext(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrVault, path, err)
	}
	if s == nil || s.Data == nil {
		return nil, fmt.Errorf("%w: read %s: not found", ErrVault, path)
	}
	return s, nil
}

// WrappedDataKey asks for a data key whose plaintext never leaves Vault in
// this response; it has to be unwrapped with Decrypt before use. This is the
// path the shipped policy allows (datakey/wrapped).
func (c *Client) WrappedDataKey(ctx context.Context, key string) (string, error) {
	s, err := c.write(ctx, c.path("datakey", "wrapped", key), map[string]any{"bits": 256})
	if err != nil {
		return "", err
	}
	ct, _ := s.Data["ciphertext"].(string)
	if ct == "" {
		return "", fmt.Errorf("%w: datakey: no ciphertext", ErrVault)
	}
	return ct, nil
}

// Decrypt unwraps one transit ciphertext (a wrapped data key).
func (c *Client) Decrypt(ctx context.Context, key, ciphertext string) ([]byte, error) {
	s, err := c.write(ctx, c.path("decrypt", key), map[string]any{"ciphertext": ciphertext})
	if err != nil {
		return nil, err
	}
	pt, _ := s.Data["plaintext"].(string)
	raw, err := base64.StdEncoding.DecodeString(pt)
	if err != nil || len(raw) == 0 {
		return nil, fmt.Errorf("%w: decrypt: bad plaintext", ErrVault)
	}
	return raw, nil
}

// Rewrap re-encrypts ciphertexts under the newest key version inside Vault;
// the plaintext data keys are never returned. Order is preserved.
func (c *Client) Rewrap(ctx context.Context, key string, ciphertexts []string) ([]string, error) {
	if len(ciphertexts) == 0 {
		return nil, nil
	}
	batch := make([]map[string]any, len(ciphertexts))
	for i, ct := range ciphertexts {
		batch[i] = map[string]any{"ciphertext": ct}
	}
	s, err := c.write(ctx, c.path("rewrap", key), map[string]any{"batch_input": batch})
	if err != nil {
		return nil, err
	}
	results, _ := s.Data["batch_results"].([]any)
	if len(results) != len(ciphertexts) {
		return nil, fmt.Errorf("%w: rewrap: %d results for %d inputs", ErrVault, len(results), len(ciphertexts))
	}
	out := make([]string, len(results))
	for i, r := range results {
		m, _ := r.(map[string]any)
		if e, _ := m["error"].(string); e != "" {
			return nil, fmt.Errorf("%w: rewrap item %d: %s", ErrVault, i, e)
		}
		out[i], _ = m["ciphertext"].(string)
		if out[i] == "" {
			return nil, fmt.Errorf("%w: rewrap item %d: empty", ErrVault, i)
		}
	}
	return out, nil
}

// Rotate adds a new version of key; new data keys are wrapped with it.
func (c *Client) Rotate(ctx context.Context, key string) error {
	_, err := c.vc.Logical().WriteWithContext(ctx, c.path("keys", key, "rotate"), nil)
	if err != nil {
		return fmt.Errorf("%w: rotate: %v", ErrVault, err)
	}
	return nil
}

// SetMinDecryptionVersion retires key versions below v.
func (c *Client) SetMinDecryptionVersion(ctx context.Context, key string, v int) error {
	_, err := c.vc.Logical().WriteWithContext(ctx, c.path("keys", key, "config"), map[string]any{"min_decryption_version": v})
	if err != nil {
		return fmt.Errorf("%w: config: %v", ErrVault, err)
	}
	return nil
}

// KeyInfo is the part of a transit key's metadata rotation cares about.
type KeyInfo struct {
	LatestVersion        int
	MinDecryptionVersion int
	Versions             []int
}

// Key reads key metadata.
func (c *Client) Key(ctx context.Context, key string) (KeyInfo, error) {
	s, err := c.read(ctx, c.path("keys", key))
	if err != nil {
		return KeyInfo{}, err
	}
	info := KeyInfo{
		LatestVersion:        toInt(s.Data["latest_version"]),
		MinDecryptionVersion: toInt(s.Data["min_decryption_version"]),
	}
	if ks, ok := s.Data["keys"].(map[string]any); ok {
		for v := range ks {
			if n, err := strconv.Atoi(v); err == nil {
				info.Versions = append(info.Versions, n)
			}
		}
	}
	return info, nil
}

// HMACKey exports the newest version of an exportable HMAC key so that
// fingerprints can be computed in process. The key still lives in Vault; the
// process holds a copy in memory only. Rotating this key changes the
// fingerprint of cards vaulted afterwards, so it is rotated only on purpose.
func (c *Client) HMACKey(ctx context.Context, key string) ([]byte, error) {
	s, err := c.read(ctx, c.path("export", "hmac-key", key))
	if err != nil {
		return nil, err
	}
	keys, _ := s.Data["keys"].(map[string]any)
	best, bestVersion := "", 0
	for v, k := range keys {
		n, err := strconv.Atoi(v)
		str, _ := k.(string)
		if err == nil && n > bestVersion && str != "" {
			best, bestVersion = str, n
		}
	}
	if best == "" {
		return nil, fmt.Errorf("%w: export hmac-key: no key", ErrVault)
	}
	if raw, err := base64.StdEncoding.DecodeString(best); err == nil {
		return raw, nil
	}
	return []byte(best), nil
}

// HMAC computes an HMAC-SHA256 inside Vault (used to check that the exported
// key and Vault agree).
func (c *Client) HMAC(ctx context.Context, key string, data []byte) (string, error) {
	s, err := c.write(ctx, c.path("hmac", key), map[string]any{"algorithm": "sha2-256", "input": base64.StdEncoding.EncodeToString(data)})
	if err != nil {
		return "", err
	}
	h, _ := s.Data["hmac"].(string)
	if h == "" {
		return "", fmt.Errorf("%w: hmac: empty", ErrVault)
	}
	return h, nil
}

// Health reports whether Vault answers, is initialised and unsealed.
func (c *Client) Health(ctx context.Context) error {
	h, err := c.vc.Sys().HealthWithContext(ctx)
	if err != nil {
		return fmt.Errorf("%w: health: %v", ErrVault, err)
	}
	if !h.Initialized || h.Sealed {
		return fmt.Errorf("%w: health: initialized=%t sealed=%t", ErrVault, h.Initialized, h.Sealed)
	}
	return nil
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case interface{ Int64() (int64, error) }:
		i, _ := n.Int64()
		return int(i)
	case string:
		i, _ := strconv.Atoi(n)
		return i
	}
	return 0
}
