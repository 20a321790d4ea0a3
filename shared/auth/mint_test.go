package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestMintShape(t *testing.T) {
	now := t0.Add(500 * time.Millisecond) // truncated to the second
	tok, err := auth.Mint(keyA, testIssuer, []string{"buyers.write", "*.read"}, 90*time.Minute, now, []string{"acc-1"})
	if err != nil {
		t.Fatal(err)
	}
	h := decodeSegment(t, tok, 0)
	if len(h) != 3 || h["alg"] != "ES512" || h["kid"] != kidA || h["typ"] != "JWT" {
		t.Errorf("header %v", h)
	}
	c := decodeSegment(t, tok, 1)
	want := map[string]any{
		"iss": testIssuer, "iat": float64(t0.Unix()), "nbf": float64(t0.Unix()),
		"exp": float64(t0.Add(90 * time.Minute).Unix()),
	}
	for k, w := range want {
		if c[k] != w {
			t.Errorf("%s = %v, want %v", k, c[k], w)
		}
	}
	if jti, _ := c["jti"].(string); !uuidV4.MatchString(jti) {
		t.Errorf("jti %q is not a UUID v4", jti)
	}
	if s, _ := c["scopes"].([]any); len(s) != 2 || s[0] != "buyers.write" || s[1] != "*.read" {
		t.Errorf("scopes %v", c["scopes"])
	}
	if ids, _ := c["merchant_account_ids"].([]any); len(ids) != 1 || ids[0] != "acc-1" {
		t.Errorf("merchant_account_ids %v", c["merchant_account_ids"])
	}
	if len(c) != 7 {
		t.Errorf("unexpected claims: %v", c)
	}

	tok2, _ := auth.Mint(keyA, testIssuer, []string{"buyers.write"}, time.Hour, now, nil)
	c2 := decodeSegment(t, tok2, 1)
	if _, ok := c2["merchant_account_ids"]; ok {
		t.Error("merchant_account_ids present for a token minted without accounts")
	}
	if c2["jti"] == c["jti"] {
		t.Error("jti repeated")
	}
}

func TestMintRejects(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := []struct {
		name     string
		key      *ecdsa.PrivateKey
		issuer   string
		scopes   []string
		lifetime time.Duration
		accounts []string
	}{
		{"nil key", nil, testIssuer, []string{"buyers.read"}, time.Hour, nil},
		{"P-256 key", p256, testIssuer, []string{"buyers.read"}, time.Hour, nil},
		{"empty issuer", keyA, "", []string{"buyers.read"}, time.Hour, nil},
		{"no scopes", keyA, testIssuer, nil, time.Hour, nil},
		{"invalid scope", keyA, testIssuer, []string{"buyers.read", "admin"}, time.Hour, nil},
		{"zero lifetime", keyA, testIssuer, []string{"buyers.read"}, 0, nil},
		{"negative lifetime", keyA, testIssuer, []string{"buyers.read"}, -time.Hour, nil},
		{"empty merchant account id", keyA, testIssuer, []string{"buyers.read"}, time.Hour, []string{""}},
		{"all merchant accounts and one", keyA, testIssuer, []string{"buyers.read"}, time.Hour, []string{auth.AllMerchantAccounts, "acc-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := auth.Mint(tt.key, tt.issuer, tt.scopes, tt.lifetime, t0, tt.accounts); err == nil {
				t.Errorf("minted %s", tok)
			}
		})
	}
}

func TestIssueDevToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	tok, err := auth.IssueDevToken(dir, "dev", []string{"buyers.write"}, time.Hour, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"": 0o700, auth.SigningKeyFile: 0o600, auth.PublicKeysFile: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm() &^ 0o022; got != mode&^0o022 { // umask may clear more
			t.Errorf("%q mode %04o, want %04o", name, fi.Mode().Perm(), mode)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, auth.SigningKeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("signing key mode %04o", fi.Mode().Perm())
	}

	ks, err := auth.LoadKeySetFile(filepath.Join(dir, auth.PublicKeysFile), "dev")
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, auth.Config{Keys: ks})
	p1, err := verify(v, tok, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p1.Require("buyers.write"); err != nil {
		t.Error(err)
	}

	t.Run("second run reuses the key", func(t *testing.T) {
		tok2, err := auth.IssueDevToken(dir, "dev", []string{"buyers.read"}, time.Hour, t0, nil)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := verify(v, tok2, t0)
		if err != nil {
			t.Fatal(err)
		}
		if p2.KeyID != p1.KeyID {
			t.Error("a new key was made")
		}
		keys := readKeys(t, filepath.Join(dir, auth.PublicKeysFile))
		if len(keys) != 1 {
			t.Errorf("%d public keys, want 1", len(keys))
		}
	})
	t.Run("public key appended to an existing file", func(t *testing.T) {
		dir := t.TempDir()
		pubB, _ := auth.EncodePublicKeyPEM(&keyB.PublicKey)
		// No trailing newline: the appended block must still parse.
		os.WriteFile(filepath.Join(dir, auth.PublicKeysFile), []byte(strings.TrimSuffix(string(pubB), "\n")), 0o644)
		if _, err := auth.IssueDevToken(dir, "dev", []string{"buyers.read"}, time.Hour, t0, nil); err != nil {
			t.Fatal(err)
		}
		if keys := readKeys(t, filepath.Join(dir, auth.PublicKeysFile)); len(keys) != 2 {
			t.Errorf("%d public keys, want 2", len(keys))
		}
	})
	t.Run("existing signing key used", func(t *testing.T) {
		dir := t.TempDir()
		privPEM, _ := auth.EncodePrivateKeyPEM(keyB)
		os.WriteFile(filepath.Join(dir, auth.SigningKeyFile), privPEM, 0o600)
		tok, err := auth.IssueDevToken(dir, "dev", []string{"buyers.read"}, time.Hour, t0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if decodeSegment(t, tok, 0)["kid"] != kidB {
			t.Error("existing key not used")
		}
	})
	t.Run("group-readable signing key refused", func(t *testing.T) {
		dir := t.TempDir()
		privPEM, _ := auth.EncodePrivateKeyPEM(keyB)
		path := filepath.Join(dir, auth.SigningKeyFile)
		os.WriteFile(path, privPEM, 0o600)
		os.Chmod(path, 0o640)
		if _, err := auth.IssueDevToken(dir, "dev", []string{"buyers.read"}, time.Hour, t0, nil); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("invalid scope", func(t *testing.T) {
		if _, err := auth.IssueDevToken(t.TempDir(), "dev", []string{"root"}, time.Hour, t0, nil); err == nil {
			t.Error("no error")
		}
	})
	t.Run("concurrent first runs share one key", func(t *testing.T) {
		dir := t.TempDir()
		var wg sync.WaitGroup
		kids := make([]string, 8)
		for i := range kids {
			wg.Go(func() {
				tok, err := auth.IssueDevToken(dir, "dev", []string{"buyers.read"}, time.Hour, t0, nil)
				if err != nil {
					t.Error(err)
					return
				}
				kids[i], _ = decodeSegment(t, tok, 0)["kid"].(string)
			})
		}
		wg.Wait()
		if kids[0] == "" || slices.ContainsFunc(kids, func(k string) bool { return k != kids[0] }) {
			t.Errorf("kids %v", kids)
		}
		if keys := readKeys(t, filepath.Join(dir, auth.PublicKeysFile)); len(keys) != 1 {
			t.Errorf("%d public keys, want 1", len(keys))
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("temporary file left: %s", e.Name())
			}
		}
	})
}

func readKeys(t *testing.T, path string) []*ecdsa.PublicKey {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.ParsePublicKeysPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
