package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
)

const testIssuer = "merchant-acme"

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Keys are generated once per test binary: P-521 generation is slow enough
// to matter when every subtest makes its own.
var (
	keyA, keyB *ecdsa.PrivateKey
	kidA, kidB string
)

func init() {
	var err error
	if keyA, err = auth.GenerateKey(); err != nil {
		panic(err)
	}
	if keyB, err = auth.GenerateKey(); err != nil {
		panic(err)
	}
	kidA, _ = auth.Thumbprint(&keyA.PublicKey)
	kidB, _ = auth.Thumbprint(&keyB.PublicKey)
}

// newVerifier returns a Verifier that accepts keyA for testIssuer.
func newVerifier(t testing.TB, cfg auth.Config) *auth.Verifier {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = auth.NewKeySet()
		if _, err := cfg.Keys.Add(&keyA.PublicKey, testIssuer); err != nil {
			t.Fatal(err)
		}
	}
	v, err := auth.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// baseHeader and baseClaims describe a valid token at t0.
func baseHeader() map[string]any {
	return map[string]any{"alg": "ES512", "kid": kidA, "typ": "JWT"}
}

func baseClaims() map[string]any {
	return map[string]any{
		"iss":    testIssuer,
		"iat":    t0.Add(-time.Minute).Unix(),
		"nbf":    t0.Add(-time.Minute).Unix(),
		"exp":    t0.Add(time.Hour).Unix(),
		"jti":    "5f0c7a52-2c55-4a4b-9d0e-4f6f7f0b8a11",
		"scopes": []string{"buyers.write"},
	}
}

func seg(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// build hand-assembles a compact JWS, signed by sign over the signing
// input, without the JWT library, so the tests do not share its mistakes.
func build(t testing.TB, header, claims map[string]any, sign func(input []byte) []byte) string {
	t.Helper()
	input := seg(t, header) + "." + seg(t, claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(input)))
}

// es512 signs as RFC 7518 section 3.4 says: R || S, each 66 bytes.
func es512(t testing.TB, key *ecdsa.PrivateKey) func([]byte) []byte {
	return ecdsaSigner(t, key, crypto.SHA512, 66)
}

func ecdsaSigner(t testing.TB, key *ecdsa.PrivateKey, h crypto.Hash, size int) func([]byte) []byte {
	return func(input []byte) []byte {
		hh := h.New()
		hh.Write(input)
		r, s, err := ecdsa.Sign(rand.Reader, key, hh.Sum(nil))
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 2*size)
		r.FillBytes(sig[:size])
		s.FillBytes(sig[size:])
		return sig
	}
}

func hs512(secret []byte) func([]byte) []byte {
	return func(input []byte) []byte {
		m := hmac.New(sha512.New, secret)
		m.Write(input)
		return m.Sum(nil)
	}
}

func rs256(t testing.TB, key *rsa.PrivateKey) func([]byte) []byte {
	return func(input []byte) []byte {
		sum := sha256.Sum256(input)
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
}

func noSignature([]byte) []byte { return nil }

// with returns a copy of m with the given keys set; a nil value deletes.
func with(m map[string]any, kv ...any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

// wantAPIError fails unless err is an *apierror.Error with status and
// message.
func wantAPIError(t testing.TB, err error, status int, message string) {
	t.Helper()
	var e *apierror.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *apierror.Error", err, err)
	}
	if e.Status != status || (message != "" && e.Message != message) {
		t.Fatalf("got %d %q, want %d %q", e.Status, e.Message, status, message)
	}
	wantCode := map[int]string{401: apierror.CodeUnauthorized, 403: apierror.CodeForbidden, 500: apierror.CodeServerError}[status]
	if e.Code != wantCode {
		t.Fatalf("code %q, want %q", e.Code, wantCode)
	}
}

// verify calls v.Verify with a Bearer header at now.
func verify(v *auth.Verifier, token string, now time.Time) (*auth.Principal, error) {
	return v.Verify(context.Background(), "Bearer "+token, now)
}

func mustMint(t testing.TB, scopes []string, lifetime time.Duration, accounts []string) string {
	t.Helper()
	tok, err := auth.Mint(keyA, testIssuer, scopes, lifetime, t0, accounts)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// decodeSegment returns segment i of a compact token as a JSON object.
func decodeSegment(t testing.TB, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
