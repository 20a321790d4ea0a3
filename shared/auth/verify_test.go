package auth_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
)

func TestVerifyMinted(t *testing.T) {
	v := newVerifier(t, auth.Config{})
	tok := mustMint(t, []string{"buyers.write", "transactions.read"}, time.Hour, nil)
	p, err := verify(v, tok, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if p.KeyID != kidA || p.Issuer != testIssuer || p.TokenID == "" {
		t.Errorf("principal %+v", p)
	}
	if !slices.Equal(p.Scopes, []string{"buyers.write", "transactions.read"}) {
		t.Errorf("scopes %v", p.Scopes)
	}
	if !p.IssuedAt.Equal(t0) || !p.NotBefore.Equal(t0) || !p.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("times %v %v %v", p.IssuedAt, p.NotBefore, p.ExpiresAt)
	}
	if !slices.Equal(p.MerchantAccountIDs, []string{"default"}) || !p.CanAccessMerchant("default") || p.CanAccessMerchant("acc-2") {
		t.Errorf("a token without merchant_account_ids must act in the default account only: %v", p.MerchantAccountIDs)
	}
}

func TestVerify(t *testing.T) {
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&keyA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := auth.EncodePublicKeyPEM(&keyA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	valid := build(t, baseHeader(), baseClaims(), es512(t, keyA))
	validParts := strings.Split(valid, ".")
	h, c := baseHeader(), baseClaims()
	iat := t0.Add(-time.Minute)

	tests := []struct {
		name    string
		token   string
		now     time.Time // zero: t0
		message string    // empty: the token is valid
		reason  string    // in the debug log line
	}{
		{"valid hand-built ES512", valid, t0, "", ""},
		{"typ absent", build(t, with(h, "typ", nil), c, es512(t, keyA)), t0, "", ""},
		{"typ lower case", build(t, with(h, "typ", "jwt"), c, es512(t, keyA)), t0, "", ""},
		{"unknown claims ignored", build(t, h, with(c, "sub", "x", "aud", "y"), es512(t, keyA)), t0, "", ""},

		// time
		{"expired", valid, t0.Add(time.Hour + 31*time.Second), "token expired", "token expired"},
		{"expired exactly at exp plus leeway", valid, t0.Add(time.Hour + 30*time.Second), "token expired", "token expired"},
		{"within leeway after exp", valid, t0.Add(time.Hour + 29*time.Second), "", ""},
		{"replayed long after expiry", valid, t0.Add(90 * 24 * time.Hour), "token expired", "token expired"},
		{"nbf in the future", build(t, h, with(c, "nbf", t0.Add(5*time.Minute).Unix()), es512(t, keyA)), t0, "token not yet valid", "nbf or iat in the future"},
		{"nbf within leeway", build(t, h, with(c, "nbf", t0.Add(20*time.Second).Unix()), es512(t, keyA)), t0, "", ""},
		{"iat in the future beyond leeway", build(t, h, with(c, "iat", t0.Add(2*time.Minute).Unix()), es512(t, keyA)), t0, "token not yet valid", "nbf or iat in the future"},
		{"used before valid", valid, iat.Add(-time.Minute), "token not yet valid", "nbf or iat in the future"},

		// signature, algorithm and key
		{"wrong signature: other key, first key's kid", build(t, h, c, es512(t, keyB)), t0, "invalid token", "verification error"},
		{"payload swapped after signing", validParts[0] + "." + seg(t, with(c, "scopes", []string{"*.write"})) + "." + validParts[2], t0, "invalid token", "verification error"},
		{"signature truncated", valid[:len(valid)-4], t0, "invalid token", "verification error"},
		{"signature empty", validParts[0] + "." + validParts[1] + ".", t0, "invalid token", "verification error"},
		{"signature ASN.1 DER instead of R||S", build(t, h, c, func(in []byte) []byte {
			sum := sha512.Sum512(in)
			sig, err := ecdsa.SignASN1(rand.Reader, keyA, sum[:])
			if err != nil {
				t.Fatal(err)
			}
			return sig
		}), t0, "invalid token", "verification error"},
		{"unknown kid", build(t, with(h, "kid", kidB), c, es512(t, keyB)), t0, "invalid token", "unknown kid"},
		{"missing kid", build(t, with(h, "kid", nil), c, es512(t, keyA)), t0, "invalid token", "missing kid"},
		{"kid not a string", build(t, with(h, "kid", 7), c, es512(t, keyA)), t0, "invalid token", "missing kid"},
		{"alg none", build(t, with(h, "alg", "none"), c, noSignature), t0, "invalid token", "signing method none is invalid"},
		{"alg None", build(t, with(h, "alg", "None"), c, noSignature), t0, "invalid token", "signing method (alg) is unavailable"},
		{"alg none with ES512 signature", build(t, with(h, "alg", "none"), c, es512(t, keyA)), t0, "invalid token", "signing method none is invalid"},
		{"alg missing", build(t, with(h, "alg", nil), c, es512(t, keyA)), t0, "invalid token", "signing method (alg) is unspecified"},
		{"HS512 keyed with the public key PEM", build(t, with(h, "alg", "HS512"), c, hs512(pubPEM)), t0, "invalid token", "signing method HS512 is invalid"},
		{"HS512 keyed with the public key DER", build(t, with(h, "alg", "HS512"), c, hs512(pubDER)), t0, "invalid token", "signing method HS512 is invalid"},
		{"HS256 keyed with the public key PEM", build(t, with(h, "alg", "HS256"), c, hs512(pubPEM)), t0, "invalid token", "signing method HS256 is invalid"},
		{"ES256 with a P-256 key", build(t, with(h, "alg", "ES256"), c, ecdsaSigner(t, p256, crypto.SHA256, 32)), t0, "invalid token", "signing method ES256 is invalid"},
		{"ES512 header, P-256 signature", build(t, h, c, ecdsaSigner(t, p256, crypto.SHA512, 66)), t0, "invalid token", "verification error"},
		{"RS256", build(t, with(h, "alg", "RS256"), c, rs256(t, rsaKey)), t0, "invalid token", "signing method RS256 is invalid"},
		{"embedded jwk header ignored", build(t, with(h, "kid", kidB, "jwk", map[string]any{"kty": "EC"}), c, es512(t, keyB)), t0, "invalid token", "unknown kid"},
		{"crit header", build(t, with(h, "crit", []string{"exp"}), c, es512(t, keyA)), t0, "invalid token", "crit header not supported"},
		{"typ not JWT", build(t, with(h, "typ", "at+jwt"), c, es512(t, keyA)), t0, "invalid token", "typ is not JWT"},

		// format
		{"two segments", validParts[0] + "." + validParts[1], t0, "invalid token", "invalid number of segments"},
		{"four segments", valid + "." + validParts[2], t0, "invalid token", "invalid number of segments"},
		{"header not base64", "e$." + validParts[1] + "." + validParts[2], t0, "invalid authorization header", "not a bearer token"},
		{"header bad base64", "eyJ." + validParts[1] + "." + validParts[2], t0, "invalid token", "could not base64 decode header"},
		{"header not JSON", base64.RawURLEncoding.EncodeToString([]byte("{alg:ES512")) + "." + validParts[1] + "." + validParts[2], t0, "invalid token", "could not JSON decode header"},
		{"claims not JSON", signRaw(t, validParts[0]+"."+base64.RawURLEncoding.EncodeToString([]byte(`{"iss":`))), t0, "invalid token", "could not JSON decode claim"},
		{"claims JSON array", signRaw(t, validParts[0]+"."+base64.RawURLEncoding.EncodeToString([]byte(`[1]`))), t0, "invalid token", "could not JSON decode claim"},
		{"exp not a number", build(t, h, with(c, "exp", "tomorrow"), es512(t, keyA)), t0, "invalid token", "could not JSON decode claim"},
		{"scopes not a list", build(t, h, with(c, "scopes", "buyers.write"), es512(t, keyA)), t0, "invalid token", "could not JSON decode claim"},
		{"too long", valid + strings.Repeat("A", auth.MaxTokenLen), t0, "invalid token", "token too long"},

		// claims
		{"missing exp", build(t, h, with(c, "exp", nil), es512(t, keyA)), t0, "invalid token", "exp, iat and nbf are required"},
		{"missing iat", build(t, h, with(c, "iat", nil), es512(t, keyA)), t0, "invalid token", "exp, iat and nbf are required"},
		{"missing nbf", build(t, h, with(c, "nbf", nil), es512(t, keyA)), t0, "invalid token", "exp, iat and nbf are required"},
		{"missing jti", build(t, h, with(c, "jti", nil), es512(t, keyA)), t0, "invalid token", "jti missing"},
		{"empty jti", build(t, h, with(c, "jti", ""), es512(t, keyA)), t0, "invalid token", "jti missing"},
		{"jti with NUL", build(t, h, with(c, "jti", "a\x00b"), es512(t, keyA)), t0, "invalid token", "control character"},
		{"jti with a new line", build(t, h, with(c, "jti", "a\nb"), es512(t, keyA)), t0, "invalid token", "control character"},
		{"missing scopes", build(t, h, with(c, "scopes", nil), es512(t, keyA)), t0, "invalid token", "scopes claim missing"},
		{"empty scopes list is a valid token", build(t, h, with(c, "scopes", []string{}), es512(t, keyA)), t0, "", ""},
		{"missing iss", build(t, h, with(c, "iss", nil), es512(t, keyA)), t0, "invalid token", "iss does not match"},
		{"wrong iss", build(t, h, with(c, "iss", "merchant-other"), es512(t, keyA)), t0, "invalid token", "iss does not match"},
		{"exp before iat", build(t, h, with(c, "exp", iat.Add(-time.Second).Unix()), es512(t, keyA)), t0, "invalid token", "exp not after iat"},
		{"lifetime of exactly 30 days", build(t, h, with(c, "exp", iat.Add(30*24*time.Hour).Unix()), es512(t, keyA)), t0, "", ""},
		{"lifetime too long", build(t, h, with(c, "exp", iat.Add(30*24*time.Hour+time.Second).Unix()), es512(t, keyA)), t0, "invalid token", "lifetime exceeds"},
		{"lifetime too long from nbf", build(t, h, with(c, "nbf", iat.Add(-24*time.Hour).Unix(), "exp", iat.Add(30*24*time.Hour).Unix()), es512(t, keyA)), t0, "invalid token", "lifetime exceeds"},
		{"merchant_account_ids empty", build(t, h, with(c, "merchant_account_ids", []string{}), es512(t, keyA)), t0, "invalid token", "merchant_account_ids empty"},
		{"merchant_account_ids with empty id", build(t, h, with(c, "merchant_account_ids", []string{"acc-1", ""}), es512(t, keyA)), t0, "invalid token", "merchant_account_ids empty"},
		{"merchant_account_ids all and one", build(t, h, with(c, "merchant_account_ids", []string{auth.AllMerchantAccounts, "acc-1"}), es512(t, keyA)), t0, "invalid token", "with other ids"},
		{"merchant_account_ids not a list", build(t, h, with(c, "merchant_account_ids", "acc-1"), es512(t, keyA)), t0, "invalid token", "could not JSON decode claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			v := newVerifier(t, auth.Config{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			p, err := verify(v, tt.token, tt.now)
			if tt.message == "" {
				if err != nil {
					t.Fatalf("rejected: %v (%s)", err, log.String())
				}
				if p.KeyID != kidA {
					t.Fatalf("kid %q", p.KeyID)
				}
				return
			}
			if p != nil {
				t.Fatalf("accepted: %+v", p)
			}
			wantAPIError(t, err, 401, tt.message)
			if !strings.Contains(log.String(), tt.reason) {
				t.Errorf("rejected for another reason than %q: %s", tt.reason, log.String())
			}
		})
	}
}

// TestVerifyMerchantAccounts: a token acts in the merchant accounts its
// merchant_account_ids claim lists, in every one only when the claim is
// ["*"], and in the default account only when it has no claim (the token
// docs/api-conventions.md describes, whose account header defaults to
// "default"): a token
// minted without naming accounts never reaches another merchant's.
func TestVerifyMerchantAccounts(t *testing.T) {
	v := newVerifier(t, auth.Config{})
	tests := []struct {
		name     string
		claims   map[string]any
		accounts []string
		all      bool
		can      map[string]bool
	}{
		{"absent: the default account", with(baseClaims(), "merchant_account_ids", nil), []string{"default"}, false,
			map[string]bool{"default": true, "acc-2": false, "": false}},
		{"null: the default account", with(baseClaims(), "merchant_account_ids", []string(nil)), []string{"default"}, false,
			map[string]bool{"default": true, "acc-2": false}},
		{"all", with(baseClaims(), "merchant_account_ids", []string{auth.AllMerchantAccounts}), nil, true,
			map[string]bool{"default": true, "acc-2": true, "*": true, "": false}},
		{"restricted", with(baseClaims(), "merchant_account_ids", []string{"acc-1", "acc-3"}), []string{"acc-1", "acc-3"}, false,
			map[string]bool{"acc-1": true, "acc-3": true, "default": false, "acc-2": false, "": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := verify(v, build(t, baseHeader(), tt.claims, es512(t, keyA)), t0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.MerchantAccountIDs, tt.accounts) || (tt.accounts == nil) != (p.MerchantAccountIDs == nil) || p.AllMerchantAccounts != tt.all {
				t.Errorf("MerchantAccountIDs %#v, all %v; want %#v, %v", p.MerchantAccountIDs, p.AllMerchantAccounts, tt.accounts, tt.all)
			}
			for id, want := range tt.can {
				if got := p.CanAccessMerchant(id); got != want {
					t.Errorf("CanAccessMerchant(%q) = %v", id, got)
				}
			}
		})
	}
	for _, tc := range []struct {
		name     string
		accounts []string
		can      map[string]bool
	}{
		{"minted without accounts", nil, map[string]bool{"default": true, "acc-9": false}},
		{"minted restriction", []string{"acc-9"}, map[string]bool{"acc-9": true, "default": false}},
		{"minted for all", []string{auth.AllMerchantAccounts}, map[string]bool{"acc-9": true, "default": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := verify(v, mustMint(t, []string{"buyers.read"}, time.Hour, tc.accounts), t0)
			if err != nil {
				t.Fatal(err)
			}
			for id, want := range tc.can {
				if got := p.CanAccessMerchant(id); got != want {
					t.Errorf("CanAccessMerchant(%q) = %v (MerchantAccountIDs %v)", id, got, p.MerchantAccountIDs)
				}
			}
		})
	}
	t.Run("empty non-nil list means none", func(t *testing.T) {
		p := &auth.Principal{MerchantAccountIDs: []string{}}
		if p.CanAccessMerchant("default") {
			t.Error("empty list granted access")
		}
	})
}

func TestVerifyAuthorizationHeader(t *testing.T) {
	for _, cache := range []int{0, -1} { // the default cache (checked first), none
		t.Run(fmt.Sprintf("cache %d", cache), func(t *testing.T) { testAuthorizationHeader(t, cache) })
	}
}

// testAuthorizationHeader runs its table in order, so that with a cache the
// rows after "canonical" meet a verified token: a character check the
// cache skips on a hit must still refuse every other token.
func testAuthorizationHeader(t *testing.T, cacheSize int) {
	v := newVerifier(t, auth.Config{CacheSize: cacheSize})
	tok := mustMint(t, []string{"buyers.write"}, time.Hour, nil)
	tests := []struct {
		name    string
		header  string
		message string // empty: accepted
	}{
		{"canonical", "Bearer " + tok, ""},
		{"lower-case scheme", "bearer " + tok, ""},
		{"upper-case scheme", "BEARER " + tok, ""},
		{"two spaces (RFC 6750 allows 1*SP)", "Bearer  " + tok, ""},
		{"no header", "", "missing bearer token"},
		{"Basic", "Basic " + tok, "invalid authorization header"},
		{"scheme only", "Bearer", "invalid authorization header"},
		{"scheme and space only", "Bearer ", "invalid authorization header"},
		{"no scheme", tok, "invalid authorization header"},
		{"tab", "Bearer\t" + tok, "invalid authorization header"},
		{"trailing space", "Bearer " + tok + " ", "invalid authorization header"},
		{"two tokens", "Bearer " + tok + " " + tok, "invalid authorization header"},
		{"comma", "Bearer " + tok + ",x", "invalid authorization header"},
		{"Bearerx", "Bearerx " + tok, "invalid authorization header"},
		{"not a JWT", "Bearer abc", "invalid token"},
		{"a character no JWT holds", "Bearer " + tok[:20] + "$" + tok[21:], "invalid authorization header"},
		{"a NUL", "Bearer " + tok[:20] + "\x00" + tok[21:], "invalid authorization header"},
		{"canonical again", "Bearer " + tok, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(context.Background(), tt.header, t0)
			if tt.message == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p == nil {
					t.Fatal("nil principal")
				}
				return
			}
			wantAPIError(t, err, 401, tt.message)
		})
	}
}

func TestVerifyRequest(t *testing.T) {
	tok := mustMint(t, []string{"buyers.write"}, time.Hour, nil)
	v := newVerifier(t, auth.Config{Now: func() time.Time { return t0 }})
	tests := []struct {
		name    string
		headers []string
		message string
	}{
		{"one header", []string{"Bearer " + tok}, ""},
		{"no header", nil, "missing bearer token"},
		{"two headers", []string{"Bearer " + tok, "Bearer " + tok}, "invalid authorization header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/buyers", nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, ok := auth.BearerToken(r)
			if wantOK := len(tt.headers) == 1; ok != wantOK || (ok && got != tok) {
				t.Errorf("BearerToken = %q, %v", got, ok)
			}
			p, err := v.VerifyRequest(r)
			if tt.message == "" {
				if err != nil || p == nil {
					t.Fatalf("VerifyRequest: %v", err)
				}
				return
			}
			wantAPIError(t, err, 401, tt.message)
		})
	}
}

func TestVerifyClock(t *testing.T) {
	tok := mustMint(t, []string{"buyers.write"}, time.Hour, nil)
	now := t0
	v := newVerifier(t, auth.Config{Now: func() time.Time { return now }, CacheSize: -1})
	if _, err := v.Verify(context.Background(), "Bearer "+tok, time.Time{}); err != nil {
		t.Fatalf("zero time must use Config.Now: %v", err)
	}
	now = t0.Add(2 * time.Hour)
	_, err := v.Verify(context.Background(), "Bearer "+tok, time.Time{})
	wantAPIError(t, err, 401, "token expired")
}

func TestVerifyConfig(t *testing.T) {
	tok := mustMint(t, []string{"buyers.write"}, 2*time.Hour, nil)
	tests := []struct {
		name    string
		cfg     auth.Config
		now     time.Time
		message string
	}{
		{"no leeway: exp+1s expired", auth.Config{Leeway: -1}, t0.Add(2*time.Hour + time.Second), "token expired"},
		{"no leeway: exp-1s valid", auth.Config{Leeway: -1}, t0.Add(2*time.Hour - time.Second), ""},
		{"no leeway: nbf-1s not yet valid", auth.Config{Leeway: -1}, t0.Add(-time.Second), "token not yet valid"},
		{"longer leeway", auth.Config{Leeway: 5 * time.Minute}, t0.Add(2*time.Hour + 4*time.Minute), ""},
		{"max lifetime 1h rejects 2h token", auth.Config{MaxLifetime: time.Hour}, t0, "invalid token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, tt.cfg)
			_, err := verify(v, tok, tt.now)
			if tt.message == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantAPIError(t, err, 401, tt.message)
		})
	}
	t.Run("keys required", func(t *testing.T) {
		if _, err := auth.NewVerifier(auth.Config{}); err == nil {
			t.Error("no error")
		}
	})
	t.Run("negative max lifetime", func(t *testing.T) {
		if _, err := auth.NewVerifier(auth.Config{Keys: auth.NewKeySet(), MaxLifetime: -1}); err == nil {
			t.Error("no error")
		}
	})
}

func TestVerifyLogsReasonNotToken(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	v := newVerifier(t, auth.Config{Logger: logger})
	tok := build(t, with(baseHeader(), "kid", kidB), baseClaims(), es512(t, keyB))
	_, err := verify(v, tok, t0)
	wantAPIError(t, err, 401, "invalid token")
	out := buf.String()
	if !strings.Contains(out, "unknown kid") {
		t.Errorf("reason not logged: %s", out)
	}
	for _, part := range strings.Split(tok, ".") {
		if strings.Contains(out, part) {
			t.Errorf("token segment logged: %s", out)
		}
	}
	if strings.Contains(err.Error(), "kid") {
		t.Errorf("reason leaked to the client: %v", err)
	}
}

func TestKeyRotation(t *testing.T) {
	tokA := mustMint(t, []string{"buyers.write"}, time.Hour, nil)
	tokB, err := auth.Mint(keyB, testIssuer, []string{"buyers.write"}, time.Hour, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, auth.Config{})
	if _, err := verify(v, tokA, t0); err != nil {
		t.Fatal(err)
	}
	ks := auth.NewKeySet()
	if _, err := ks.Add(&keyB.PublicKey, testIssuer); err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(ks); err != nil {
		t.Fatal(err)
	}
	_, err = verify(v, tokA, t0) // was cached under the old KeySet
	wantAPIError(t, err, 401, "invalid token")
	if _, err := verify(v, tokB, t0); err != nil {
		t.Fatal(err)
	}
	if err := v.SetKeys(nil); err == nil {
		t.Error("SetKeys(nil) accepted")
	}
}

// signRaw signs an already encoded "header.claims" with keyA.
func signRaw(t *testing.T, input string) string {
	t.Helper()
	return input + "." + base64.RawURLEncoding.EncodeToString(es512(t, keyA)([]byte(input)))
}

// VerifyBytes reads the caller's buffer, which a server reuses for the
// next request: what it returns and caches must not change when the
// buffer does, and it must judge exactly as Verify does.
func TestVerifyBytesKeepsNothingOfTheBuffer(t *testing.T) {
	v := newVerifier(t, auth.Config{})
	tok := mustMint(t, []string{"vault-forward.write"}, time.Hour, []string{"acme"})
	buf := []byte("Bearer " + tok)
	p, err := v.VerifyBytes(context.Background(), buf, t0.Add(time.Minute)) // a miss: parsed and cached
	if err != nil {
		t.Fatal(err)
	}
	want := *p
	for i := range buf {
		buf[i] = 'x'
	}
	if !slices.Equal(p.Scopes, []string{"vault-forward.write"}) || p.TokenID != want.TokenID || p.TokenID == "" {
		t.Fatalf("the principal changed with the buffer: %+v", p)
	}
	buf = append(buf[:0], "Bearer "+tok...)
	again, err := v.VerifyBytes(context.Background(), buf, t0.Add(2*time.Minute)) // a hit
	if err != nil || again.TokenID != want.TokenID || !slices.Equal(again.MerchantAccountIDs, []string{"acme"}) {
		t.Fatalf("cached principal: %+v, %v", again, err)
	}
	for _, tc := range []struct {
		header string
		status int
	}{
		{"", 401},
		{"Basic " + tok, 401},
		{"Bearer " + tok[:len(tok)-2], 401},
	} {
		_, errS := v.Verify(context.Background(), tc.header, t0.Add(time.Minute))
		_, errB := v.VerifyBytes(context.Background(), []byte(tc.header), t0.Add(time.Minute))
		if errS == nil || errB == nil || errS.Error() != errB.Error() {
			t.Errorf("%.20q: Verify %v, VerifyBytes %v", tc.header, errS, errB)
		}
		var ae *apierror.Error
		if !errors.As(errB, &ae) || ae.Status != tc.status {
			t.Errorf("%.20q: %v, want status %d", tc.header, errB, tc.status)
		}
	}
	if _, err := v.VerifyBytes(context.Background(), buf, t0.Add(2*time.Hour)); err == nil {
		t.Fatal("an expired cached token passed")
	}
}
