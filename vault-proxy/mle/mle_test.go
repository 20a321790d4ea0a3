package mle_test

// The JWEs made with go-jose are decrypted with lestrrat-go/jwx, an
// independent JOSE implementation, and the JWKs given to Encrypt are
// written by jwx too, so neither side checks only itself.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/payorch/vault-proxy/mle"
)

type keys struct {
	rsa   *rsa.PrivateKey
	ec    *ecdsa.PrivateKey
	ec384 *ecdsa.PrivateKey
}

func newKeys(t *testing.T) keys {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return keys{rsa: r, ec: e, ec384: e384}
}

func pkixPEM(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// jwkJSON writes pub as a JWK with jwx, optionally with a kid.
func jwkJSON(t *testing.T, pub crypto.PublicKey, kid string) string {
	t.Helper()
	k, err := jwk.Import(pub)
	if err != nil {
		t.Fatal(err)
	}
	if kid != "" {
		if err := k.Set(jwk.KeyIDKey, kid); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func certPEM(t *testing.T, priv *rsa.PrivateKey) string {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mle.processor.example"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageKeyEncipherment,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestEncryptDecryptsWithJWX(t *testing.T) {
	k := newKeys(t)
	plaintext := []byte(`{"card":{"number":"4111111111111111","expiry":"12/29"}}`)
	tests := []struct {
		name        string
		m           mle.Method
		contentType string
		decAlg      jwa.KeyEncryptionAlgorithm
		decKey      any
		wantAlg     string
		wantEnc     string
		wantKID     string // "" = no kid header
		wantCty     string // "" = no cty header
	}{
		{
			name: "RSA-OAEP-256 PEM, defaults", m: mle.Method{PublicKey: pkixPEM(t, &k.rsa.PublicKey), KeyID: "proc-2024"},
			contentType: "application/json", decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM", wantKID: "proc-2024", wantCty: "application/json",
		},
		{
			name:        "RSA-OAEP-256 JWK, explicit",
			m:           mle.Method{PublicKey: jwkJSON(t, &k.rsa.PublicKey, ""), KeyID: "proc-2024", Algorithm: "RSA-OAEP-256", Encryption: "A256GCM"},
			contentType: "application/json; charset=utf-8", decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM", wantKID: "proc-2024", wantCty: "application/json",
		},
		{
			name:   "RSA PKCS#1 PEM, no content type",
			m:      mle.Method{PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)})), KeyID: "k"},
			decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM", wantKID: "k",
		},
		{
			name:        "RSA certificate",
			m:           mle.Method{PublicKey: certPEM(t, k.rsa), KeyID: "cert"},
			contentType: "application/x-www-form-urlencoded", decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM", wantKID: "cert", wantCty: "application/x-www-form-urlencoded",
		},
		{
			name:        "ECDH-ES+A256KW P-256 PEM",
			m:           mle.Method{PublicKey: pkixPEM(t, &k.ec.PublicKey), KeyID: "ec-1", Algorithm: "ECDH-ES+A256KW"},
			contentType: "application/json", decAlg: jwa.ECDH_ES_A256KW(), decKey: k.ec,
			wantAlg: "ECDH-ES+A256KW", wantEnc: "A256GCM", wantKID: "ec-1", wantCty: "application/json",
		},
		{
			name:        "ECDH-ES+A256KW P-256 JWK, kid taken from the JWK",
			m:           mle.Method{PublicKey: jwkJSON(t, &k.ec.PublicKey, "jwk-kid"), Algorithm: "ECDH-ES+A256KW", Encryption: "A256GCM"},
			contentType: "application/json", decAlg: jwa.ECDH_ES_A256KW(), decKey: k.ec,
			wantAlg: "ECDH-ES+A256KW", wantEnc: "A256GCM", wantKID: "jwk-kid", wantCty: "application/json",
		},
		{
			name:   "key_id wins over the JWK's kid",
			m:      mle.Method{PublicKey: jwkJSON(t, &k.ec.PublicKey, "jwk-kid"), KeyID: "configured", Algorithm: "ECDH-ES+A256KW"},
			decAlg: jwa.ECDH_ES_A256KW(), decKey: k.ec,
			wantAlg: "ECDH-ES+A256KW", wantEnc: "A256GCM", wantKID: "configured",
		},
		{
			name:   "JWK Set with one key",
			m:      mle.Method{PublicKey: `{"keys":[` + jwkJSON(t, &k.rsa.PublicKey, "only") + `]}`},
			decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM", wantKID: "only",
		},
		{
			name:   "JWK Set, key chosen by key_id",
			m:      mle.Method{PublicKey: `{"keys":[` + jwkJSON(t, &k.ec.PublicKey, "ec") + `,` + jwkJSON(t, &k.rsa.PublicKey, "rsa") + `]}`, KeyID: "rsa"},
			decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM", wantKID: "rsa",
		},
		{
			name:   "ECDH-ES+A256KW P-384, A128GCM",
			m:      mle.Method{PublicKey: pkixPEM(t, &k.ec384.PublicKey), KeyID: "k", Algorithm: "ECDH-ES+A256KW", Encryption: "A128GCM"},
			decAlg: jwa.ECDH_ES_A256KW(), decKey: k.ec384,
			wantAlg: "ECDH-ES+A256KW", wantEnc: "A128GCM", wantKID: "k",
		},
		{
			name:   "PEM with surrounding whitespace as entered",
			m:      mle.Method{PublicKey: "  \n" + pkixPEM(t, &k.rsa.PublicKey) + "\n  "},
			decAlg: jwa.RSA_OAEP_256(), decKey: k.rsa,
			wantAlg: "RSA-OAEP-256", wantEnc: "A256GCM",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.m.Encrypt(plaintext, tc.contentType)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(out), "."); n != 4 {
				t.Fatalf("not a compact JWE (%d dots): %s", n, out)
			}
			got, err := jwe.Decrypt(out, jwe.WithKey(tc.decAlg, tc.decKey))
			if err != nil {
				t.Fatalf("jwx cannot decrypt: %v", err)
			}
			if string(got) != string(plaintext) {
				t.Fatalf("decrypted %q", got)
			}
			msg, err := jwe.Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			h := msg.ProtectedHeaders()
			if alg, _ := h.Algorithm(); alg.String() != tc.wantAlg {
				t.Errorf("alg = %q, want %q", alg, tc.wantAlg)
			}
			if enc, _ := h.ContentEncryption(); enc.String() != tc.wantEnc {
				t.Errorf("enc = %q, want %q", enc, tc.wantEnc)
			}
			if kid, _ := h.KeyID(); kid != tc.wantKID {
				t.Errorf("kid = %q, want %q", kid, tc.wantKID)
			}
			if cty, _ := h.ContentType(); cty != tc.wantCty {
				t.Errorf("cty = %q, want %q", cty, tc.wantCty)
			}
		})
	}
}

func TestEncryptIsRandomized(t *testing.T) {
	k := newKeys(t)
	m := mle.Method{PublicKey: pkixPEM(t, &k.ec.PublicKey), Algorithm: mle.AlgECDHESA256KW}
	a, err := m.Encrypt([]byte("same"), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Encrypt([]byte("same"), "")
	if err != nil {
		t.Fatal(err)
	}
	if string(a) == string(b) {
		t.Fatal("two encryptions of the same body are identical")
	}
}

func TestFromFields(t *testing.T) {
	got := mle.FromFields(map[string]string{
		"public_key": " pem as entered \n", "key_id": "k", "algorithm": "ECDH-ES+A256KW", "encryption": "A256GCM",
	})
	want := mle.Method{PublicKey: " pem as entered \n", KeyID: "k", Algorithm: "ECDH-ES+A256KW", Encryption: "A256GCM"}
	if got != want {
		t.Fatalf("FromFields = %#v", got)
	}
	if (mle.FromFields(nil) != mle.Method{}) {
		t.Fatal("FromFields(nil) is not the zero Method")
	}
}

func TestEncryptErrors(t *testing.T) {
	k := newKeys(t)
	rsaPEM := pkixPEM(t, &k.rsa.PublicKey)
	ecPEM := pkixPEM(t, &k.ec.PublicKey)
	privDER, err := x509.MarshalPKCS8PrivateKey(k.ec)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}))
	tests := []struct {
		name        string
		m           mle.Method
		mustMention string
	}{
		{name: "empty key", m: mle.Method{}, mustMention: `"public_key"`},
		{name: "garbage key", m: mle.Method{PublicKey: "definitely not a key"}, mustMention: `"public_key"`},
		{name: "PEM with garbage inside", m: mle.Method{PublicKey: "-----BEGIN PUBLIC KEY-----\nAAAAAAAAAAAA\n-----END PUBLIC KEY-----\n"}, mustMention: `"public_key"`},
		{name: "truncated PEM", m: mle.Method{PublicKey: rsaPEM[:len(rsaPEM)/2]}, mustMention: `"public_key"`},
		{name: "private key PEM", m: mle.Method{PublicKey: privPEM, Algorithm: mle.AlgECDHESA256KW}, mustMention: "private key"},
		{name: "broken JSON", m: mle.Method{PublicKey: `{"kty":"RSA","n":`}, mustMention: `"public_key"`},
		{name: "JWK missing members", m: mle.Method{PublicKey: `{"kty":"RSA"}`}, mustMention: `"public_key"`},
		{name: "symmetric JWK", m: mle.Method{PublicKey: `{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}`}, mustMention: `"public_key"`},
		{name: "JWK Set without a match", m: mle.Method{PublicKey: `{"keys":[` + jwkJSON(t, &k.ec.PublicKey, "a") + `,` + jwkJSON(t, &k.rsa.PublicKey, "b") + `]}`, KeyID: "c"}, mustMention: "JWK Set"},
		{name: "unsupported alg RSA1_5", m: mle.Method{PublicKey: rsaPEM, Algorithm: "RSA1_5"}, mustMention: `"algorithm"`},
		{name: "unsupported alg RSA-OAEP", m: mle.Method{PublicKey: rsaPEM, Algorithm: "RSA-OAEP"}, mustMention: `"algorithm"`},
		{name: "unsupported alg dir", m: mle.Method{PublicKey: rsaPEM, Algorithm: "dir"}, mustMention: `"algorithm"`},
		{name: "unsupported alg lowercase", m: mle.Method{PublicKey: rsaPEM, Algorithm: "rsa-oaep-256"}, mustMention: `"algorithm"`},
		{name: "unsupported enc", m: mle.Method{PublicKey: rsaPEM, Encryption: "A256CBC-HS512"}, mustMention: `"encryption"`},
		{name: "RSA key with ECDH-ES", m: mle.Method{PublicKey: rsaPEM, Algorithm: mle.AlgECDHESA256KW}, mustMention: "RSA key"},
		{name: "EC key with RSA-OAEP-256 (the default)", m: mle.Method{PublicKey: ecPEM}, mustMention: "EC key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.m.Encrypt([]byte(`{"pan":"4111111111111111"}`), "application/json")
			if out != nil {
				t.Errorf("output on error: %q", out)
			}
			var me *mle.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *mle.Error", err, err)
			}
			if me.Code != mle.CodeAuthenticationFailed {
				t.Errorf("code = %q", me.Code)
			}
			if !strings.Contains(me.Message, tc.mustMention) {
				t.Errorf("message %q does not mention %q", me.Message, tc.mustMention)
			}
			for _, line := range strings.Split(tc.m.PublicKey, "\n") {
				line = strings.TrimSpace(line)
				if len(line) >= 8 && !strings.HasPrefix(line, "-----") && strings.Contains(me.Error(), line) {
					t.Errorf("message leaks key material: %q", me.Error())
				}
			}
			if strings.Contains(me.Error(), "4111") {
				t.Errorf("message leaks the body: %q", me.Error())
			}
		})
	}
}

func BenchmarkEncrypt(b *testing.B) {
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&r.PublicKey)
	m := mle.Method{PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), KeyID: "k"}
	body := []byte(strings.Repeat("x", 1024))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Encrypt(body, "application/json"); err != nil {
			b.Fatal(err)
		}
	}
}
