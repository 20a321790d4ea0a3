package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

// The P-521 key of RFC 7520 section 3.1 (JOSE Cookbook, Figure 1).
const (
	rfc7520X = "AHKZLLOsCOzz5cY97ewNUajB957y-C-U88c3v13nmGZx6sYl_oJXu9A5RkTKqjqvjyekWF-7ytDyRXYgCF5cj0Kt"
	rfc7520Y = "AdymlHvOiLxXkEhayXQnNCvDX4h9htZaCJN34kfmC6pV5OhQHiraVySsUdaQkAgDPrwQrJmbnX9cwlGfP-HqHZR1"
	// Its RFC 7638 SHA-256 thumbprint, as computed by
	// github.com/go-jose/go-jose/v4 v4.1.3 JSONWebKey.Thumbprint(crypto.SHA256)
	// and by `openssl dgst -sha256` over the canonical JSON.
	rfc7520Thumbprint = "dHri3SADZkrush5HU_50AoRhcKFryN-PI6jPBtPL55M"
)

func rfc7520Key(t *testing.T) *ecdsa.PublicKey {
	t.Helper()
	x, err := base64.RawURLEncoding.DecodeString(rfc7520X)
	if err != nil {
		t.Fatal(err)
	}
	y, err := base64.RawURLEncoding.DecodeString(rfc7520Y)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P521(), slices.Concat([]byte{4}, x, y))
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestThumbprint(t *testing.T) {
	t.Run("RFC 7520 key", func(t *testing.T) {
		got, err := auth.Thumbprint(rfc7520Key(t))
		if err != nil {
			t.Fatal(err)
		}
		if got != rfc7520Thumbprint {
			t.Errorf("got %s, want %s", got, rfc7520Thumbprint)
		}
	})
	t.Run("canonical JSON", func(t *testing.T) {
		canonical := `{"crv":"P-521","kty":"EC","x":"` + rfc7520X + `","y":"` + rfc7520Y + `"}`
		sum := sha256.Sum256([]byte(canonical))
		if want := base64.RawURLEncoding.EncodeToString(sum[:]); want != rfc7520Thumbprint {
			t.Fatalf("canonical JSON hashes to %s", want)
		}
	})
	t.Run("generated keys: canonical JSON with 66-byte coordinates", func(t *testing.T) {
		for range 20 { // some keys have leading zero bytes in x or y
			k, err := auth.GenerateKey()
			if err != nil {
				t.Fatal(err)
			}
			raw, err := k.PublicKey.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			enc := base64.RawURLEncoding.EncodeToString
			canonical := `{"crv":"P-521","kty":"EC","x":"` + enc(raw[1:67]) + `","y":"` + enc(raw[67:]) + `"}`
			sum := sha256.Sum256([]byte(canonical))
			got, err := auth.Thumbprint(&k.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			if want := enc(sum[:]); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			again, _ := auth.Thumbprint(&k.PublicKey)
			if again != got || len(got) != 43 {
				t.Fatalf("not deterministic or wrong length: %s %s", got, again)
			}
		}
	})
	t.Run("other curves refused", func(t *testing.T) {
		for _, c := range []elliptic.Curve{elliptic.P256(), elliptic.P384()} {
			k, err := ecdsa.GenerateKey(c, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := auth.Thumbprint(&k.PublicKey); err == nil || !strings.Contains(err.Error(), "P-521") {
				t.Errorf("%s: err %v", c.Params().Name, err)
			}
		}
		if _, err := auth.Thumbprint(nil); err == nil {
			t.Error("nil key accepted")
		}
	})
}

func TestPEMRoundTrip(t *testing.T) {
	privPEM, err := auth.EncodePrivateKeyPEM(keyA)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(privPEM), "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("private key PEM: %s", privPEM[:40])
	}
	priv, err := auth.ParsePrivateKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.Equal(keyA) {
		t.Error("private key changed in round trip")
	}

	der, err := x509.MarshalECPrivateKey(keyA)
	if err != nil {
		t.Fatal(err)
	}
	sec1 := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	if priv, err := auth.ParsePrivateKeyPEM(sec1); err != nil || !priv.Equal(keyA) {
		t.Errorf("SEC 1 key: %v", err)
	}

	pubPEM, err := auth.EncodePublicKeyPEM(&keyA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.ParsePublicKeysPEM(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || !keys[0].Equal(&keyA.PublicKey) {
		t.Error("public key changed in round trip")
	}

	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := auth.EncodePrivateKeyPEM(p256); err == nil {
		t.Error("P-256 private key encoded")
	}
	p256PEM := pemOf(t, "PRIVATE KEY", p256)
	if _, err := auth.ParsePrivateKeyPEM(p256PEM); err == nil || !strings.Contains(err.Error(), "P-521") {
		t.Errorf("P-256 private key parsed: %v", err)
	}
	if _, err := auth.ParsePrivateKeyPEM(pubPEM); err == nil {
		t.Error("public key parsed as private")
	}
	if _, err := auth.ParsePrivateKeyPEM([]byte("junk")); err == nil {
		t.Error("junk parsed")
	}
}

// pemOf encodes key (private: PKCS #8, public: PKIX) under blockType.
func pemOf(t *testing.T, blockType string, key any) []byte {
	t.Helper()
	var der []byte
	var err error
	switch k := key.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey:
		der, err = x509.MarshalPKCS8PrivateKey(k)
	default:
		der, err = x509.MarshalPKIXPublicKey(k)
	}
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

func TestLoadKeySetFile(t *testing.T) {
	pubA, _ := auth.EncodePublicKeyPEM(&keyA.PublicKey)
	pubB, _ := auth.EncodePublicKeyPEM(&keyB.PublicKey)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)

	tests := []struct {
		name    string
		content []byte
		kids    []string
		errText string
	}{
		{"one key", pubA, []string{kidA}, ""},
		{"two keys with comments", slices.Concat([]byte("# instance keys\n"), pubA, []byte("# rotated in 2026\n"), pubB), sorted(kidA, kidB), ""},
		{"duplicate key", slices.Concat(pubA, pubA), []string{kidA}, ""},
		{"P-256 key", pemOf(t, "PUBLIC KEY", &p256.PublicKey), nil, "P-256"},
		{"P-384 key after a good one", slices.Concat(pubA, pemOf(t, "PUBLIC KEY", &p384.PublicKey)), nil, "PEM block 2"},
		{"RSA key", pemOf(t, "PUBLIC KEY", &rsaKey.PublicKey), nil, "only ECDSA P-521"},
		{"private key", pemOf(t, "PRIVATE KEY", keyA), nil, "private key"},
		{"certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), nil, `"CERTIFICATE"`},
		{"empty", nil, nil, "no PEM public key"},
		{"not PEM", []byte("ssh-ed25519 AAAA"), nil, "no PEM public key"},
		{"corrupt DER", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{0x30, 1}}), nil, "PEM block 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.pem")
			if err := os.WriteFile(path, tt.content, 0o644); err != nil {
				t.Fatal(err)
			}
			ks, err := auth.LoadKeySetFile(path, testIssuer)
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err %v, want it to mention %q and the path", err, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ks.IDs(); !slices.Equal(got, tt.kids) {
				t.Errorf("kids %v, want %v", got, tt.kids)
			}
			for _, kid := range tt.kids {
				if k, ok := ks.Lookup(kid); !ok || k.Issuer != testIssuer || k.ID != kid {
					t.Errorf("Lookup(%s) = %+v, %v", kid, k, ok)
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := auth.LoadKeySetFile(filepath.Join(t.TempDir(), "nope.pem"), testIssuer); err == nil {
			t.Error("no error")
		}
	})
	t.Run("empty issuer", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "keys.pem")
		os.WriteFile(path, pubA, 0o644)
		if _, err := auth.LoadKeySetFile(path, ""); err == nil {
			t.Error("no error")
		}
	})
}

func sorted(s ...string) []string { slices.Sort(s); return s }

func TestLoadKeySetDir(t *testing.T) {
	pubA, _ := auth.EncodePublicKeyPEM(&keyA.PublicKey)
	pubB, _ := auth.EncodePublicKeyPEM(&keyB.PublicKey)
	t.Run("pem files only", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.pem"), pubA, 0o644)
		os.WriteFile(filepath.Join(dir, "b.pem"), pubB, 0o644)
		os.WriteFile(filepath.Join(dir, "README"), []byte("not a key"), 0o644)
		os.Mkdir(filepath.Join(dir, "old.pem"), 0o755) // a directory is skipped
		ks, err := auth.LoadKeySetDir(dir, testIssuer)
		if err != nil {
			t.Fatal(err)
		}
		if got := ks.IDs(); !slices.Equal(got, sorted(kidA, kidB)) {
			t.Errorf("kids %v", got)
		}
	})
	t.Run("no keys", func(t *testing.T) {
		if _, err := auth.LoadKeySetDir(t.TempDir(), testIssuer); err == nil || !strings.Contains(err.Error(), "no *.pem") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("missing dir", func(t *testing.T) {
		if _, err := auth.LoadKeySetDir(filepath.Join(t.TempDir(), "nope"), testIssuer); err == nil {
			t.Error("no error")
		}
	})
	t.Run("a private key in the directory", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.pem"), pubA, 0o644)
		priv, _ := auth.EncodePrivateKeyPEM(keyB)
		os.WriteFile(filepath.Join(dir, "signing-key.pem"), priv, 0o600)
		if _, err := auth.LoadKeySetDir(dir, testIssuer); err == nil || !strings.Contains(err.Error(), "private key") {
			t.Errorf("err %v", err)
		}
	})
}

func TestKeySetIssuers(t *testing.T) {
	ks := auth.NewKeySet()
	if kid, err := ks.Add(&keyA.PublicKey, "issuer-1"); err != nil || kid != kidA {
		t.Fatalf("Add: %s, %v", kid, err)
	}
	if _, err := ks.Add(&keyA.PublicKey, "issuer-1"); err != nil {
		t.Errorf("re-adding under the same issuer: %v", err)
	}
	if _, err := ks.Add(&keyA.PublicKey, "issuer-2"); err == nil {
		t.Error("key registered under a second issuer")
	}
	if _, err := ks.Add(&keyB.PublicKey, ""); err == nil {
		t.Error("empty issuer accepted")
	}
	pubA, _ := auth.EncodePublicKeyPEM(&keyA.PublicKey)
	pubB, _ := auth.EncodePublicKeyPEM(&keyB.PublicKey)
	if _, err := ks.AddPEM(slices.Concat(pubB, pubA), "issuer-2"); err == nil {
		t.Error("AddPEM re-registered a key under another issuer")
	}
	if ks.Len() != 1 {
		t.Errorf("failed AddPEM added keys: %v", ks.IDs())
	}
	if kids, err := ks.AddPEM(pubB, "issuer-2"); err != nil || !slices.Equal(kids, []string{kidB}) {
		t.Errorf("AddPEM: %v, %v", kids, err)
	}

	// Each key's tokens must carry its own issuer.
	v := newVerifier(t, auth.Config{Keys: ks})
	tokB, _ := auth.Mint(keyB, "issuer-2", []string{"buyers.read"}, time.Hour, t0, nil)
	if p, err := verify(v, tokB, t0); err != nil || p.Issuer != "issuer-2" {
		t.Errorf("issuer-2 token: %v", err)
	}
	tokBWrongIss, _ := auth.Mint(keyB, "issuer-1", []string{"buyers.read"}, time.Hour, t0, nil)
	_, err := verify(v, tokBWrongIss, t0)
	wantAPIError(t, err, 401, "invalid token")
}
