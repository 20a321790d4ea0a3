package signing_test

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/payorch/vault-proxy/signing"
)

var testNow = time.Unix(1700000000, 0)

// keySet holds one key per asymmetric algorithm, PEM-encoded in each format
// a merchant may paste, plus the matching verification keys.
type keySet struct {
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	rsa     *rsa.PrivateKey
	secret  []byte
	pems    map[string]string // format name -> PEM
	algOf   map[string]string // format name -> algorithm
	pubOf   map[string]any    // algorithm -> verification key
	secretB string
}

func newKeySet(t testing.TB) keySet {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	pkcs8 := func(k crypto.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	ecParams := "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"
	ks := keySet{
		ec: ec, ed: ed, rsa: rk, secret: secret,
		secretB: base64.StdEncoding.EncodeToString(secret),
		pems: map[string]string{
			"ec-sec1":             enc("EC PRIVATE KEY", sec1),
			"ec-sec1-with-params": ecParams + enc("EC PRIVATE KEY", sec1),
			"ec-pkcs8":            enc("PRIVATE KEY", pkcs8(ec)),
			"ed25519-pkcs8":       enc("PRIVATE KEY", pkcs8(ed)),
			"rsa-pkcs1":           enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk)),
			"rsa-pkcs8":           enc("PRIVATE KEY", pkcs8(rk)),
			"rsa-pkcs8-mislabel":  enc("RSA PRIVATE KEY", pkcs8(rk)),
		},
		algOf: map[string]string{
			"ec-sec1":             signing.AlgECDSAP256SHA256,
			"ec-sec1-with-params": signing.AlgECDSAP256SHA256,
			"ec-pkcs8":            signing.AlgECDSAP256SHA256,
			"ed25519-pkcs8":       signing.AlgEd25519,
			"rsa-pkcs1":           signing.AlgRSAPSSSHA512,
			"rsa-pkcs8":           signing.AlgRSAPSSSHA512,
			"rsa-pkcs8-mislabel":  signing.AlgRSAPSSSHA512,
		},
		pubOf: map[string]any{
			signing.AlgHMACSHA256:      secret,
			signing.AlgECDSAP256SHA256: &ec.PublicKey,
			signing.AlgEd25519:         ed.Public(),
			signing.AlgRSAPSSSHA512:    &rk.PublicKey,
		},
	}
	return ks
}

func jsonRequest(body string) *signing.Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &signing.Request{
		Method: "POST",
		URL:    "https://api.processor.example/v1/payments?ref=42",
		Header: h,
		Body:   []byte(body),
	}
}

func TestSignVerifyEveryAlgorithmAndKeyFormat(t *testing.T) {
	ks := newKeySet(t)
	type tc struct{ name, alg, key string }
	cases := []tc{{"hmac", signing.AlgHMACSHA256, ks.secretB}}
	for name, p := range ks.pems {
		cases = append(cases, tc{name, ks.algOf[name], p})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := jsonRequest(`{"pan":"4111111111111111"}`)
			m := signing.Method{Algorithm: c.alg, KeyID: "merchant-key-1", Key: c.key, ExpiresIn: 300 * time.Second}
			if err := m.Sign(req, testNow); err != nil {
				t.Fatal(err)
			}
			in := req.Header.Values("Signature-Input")
			want := `sig1=("@method" "@target-uri" "content-digest" "content-type");created=1700000000;keyid="merchant-key-1";alg="` + c.alg + `";expires=1700000300`
			if len(in) != 1 || in[0] != want {
				t.Fatalf("Signature-Input = %q\nwant %q", in, want)
			}
			if err := signing.Verify(req, "sig1", c.alg, ks.pubOf[c.alg], testNow); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if err := signing.Verify(req, "sig1", c.alg, ks.pubOf[c.alg], testNow.Add(301*time.Second)); err == nil {
				t.Fatal("expired signature verified")
			}
			req.Body = append(req.Body, ' ')
			if err := signing.Verify(req, "sig1", c.alg, ks.pubOf[c.alg], testNow); err == nil {
				t.Fatal("signature verified after the body changed")
			}
		})
	}
}

func TestSignatureValueShape(t *testing.T) {
	ks := newKeySet(t)
	tests := []struct {
		alg, key string
		sigLen   int
	}{
		{signing.AlgHMACSHA256, ks.secretB, 32},
		{signing.AlgECDSAP256SHA256, ks.pems["ec-sec1"], 64}, // r||s, not ASN.1
		{signing.AlgEd25519, ks.pems["ed25519-pkcs8"], 64},
		{signing.AlgRSAPSSSHA512, ks.pems["rsa-pkcs1"], 256},
	}
	for _, tc := range tests {
		t.Run(tc.alg, func(t *testing.T) {
			// Several signatures, since a DER ECDSA signature is sometimes 64
			// bytes too, but never every time.
			for i := 0; i < 8; i++ {
				req := jsonRequest("{}")
				if err := (signing.Method{Algorithm: tc.alg, Key: tc.key}).Sign(req, testNow); err != nil {
					t.Fatal(err)
				}
				v := req.Header.Values("Signature")[0]
				b64 := strings.TrimSuffix(strings.TrimPrefix(v, "sig1=:"), ":")
				raw, err := base64.StdEncoding.DecodeString(b64)
				if err != nil {
					t.Fatalf("Signature %q: %v", v, err)
				}
				if len(raw) != tc.sigLen {
					t.Fatalf("signature is %d bytes, want %d", len(raw), tc.sigLen)
				}
			}
		})
	}
}

func TestFromFields(t *testing.T) {
	tests := []struct {
		name    string
		fields  map[string]string
		want    signing.Method
		wantErr bool
	}{
		{
			name:   "minimal",
			fields: map[string]string{"algorithm": "hmac-sha256", "key_id": "k", "key": "c2VjcmV0"},
			want:   signing.Method{Algorithm: "hmac-sha256", KeyID: "k", Key: "c2VjcmV0"},
		},
		{
			name: "everything, key kept exactly as entered",
			fields: map[string]string{
				"algorithm": "ed25519", "key_id": "k", "key": " c2VjcmV0 \n",
				"covered_components": " @method  @path\tdigest ", "label": "proc", "expires_in": "60",
			},
			want: signing.Method{
				Algorithm: "ed25519", KeyID: "k", Key: " c2VjcmV0 \n",
				CoveredComponents: []string{"@method", "@path", "digest"}, Label: "proc", ExpiresIn: time.Minute,
			},
		},
		{name: "expires_in empty", fields: map[string]string{"expires_in": ""}},
		{name: "expires_in zero", fields: map[string]string{"expires_in": "0"}},
		{name: "expires_in not a number", fields: map[string]string{"expires_in": "soon"}, wantErr: true},
		{name: "expires_in negative", fields: map[string]string{"expires_in": "-5"}, wantErr: true},
		{name: "expires_in with space", fields: map[string]string{"expires_in": " 60"}, wantErr: true},
		{name: "expires_in fraction", fields: map[string]string{"expires_in": "1.5"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signing.FromFields(tc.fields)
			if tc.wantErr {
				assertAuthFailed(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Algorithm != tc.want.Algorithm || got.KeyID != tc.want.KeyID || got.Key != tc.want.Key ||
				strings.Join(got.CoveredComponents, "|") != strings.Join(tc.want.CoveredComponents, "|") ||
				got.Label != tc.want.Label || got.ExpiresIn != tc.want.ExpiresIn {
				t.Fatalf("FromFields = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func assertAuthFailed(t *testing.T, err error) *signing.Error {
	t.Helper()
	var se *signing.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *signing.Error", err, err)
	}
	if se.Code != signing.CodeAuthenticationFailed {
		t.Fatalf("code = %q, want %q", se.Code, signing.CodeAuthenticationFailed)
	}
	return se
}

func TestSignErrors(t *testing.T) {
	ks := newKeySet(t)
	const secretB64 = "dGhpcyBpcyBhIHNoYXJlZCBzZWNyZXQ="
	tests := []struct {
		name string
		m    signing.Method
		req  func() *signing.Request
		// mustMention is a piece of the message that tells the merchant
		// what to fix.
		mustMention string
	}{
		{name: "hmac key with trailing space", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64 + " "}, mustMention: `"key"`},
		{name: "hmac key with trailing newline", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64 + "\n"}, mustMention: `"key"`},
		{name: "hmac key with CRLF inside", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64[:8] + "\r\n" + secretB64[8:]}, mustMention: `"key"`},
		{name: "hmac key with leading space", m: signing.Method{Algorithm: "hmac-sha256", Key: " " + secretB64}, mustMention: `"key"`},
		{name: "hmac key base64url", m: signing.Method{Algorithm: "hmac-sha256", Key: "ab-_"}, mustMention: `"key"`},
		{name: "hmac key missing padding", m: signing.Method{Algorithm: "hmac-sha256", Key: strings.TrimRight(secretB64, "=")}, mustMention: `"key"`},
		{name: "hmac key non-zero padding bits", m: signing.Method{Algorithm: "hmac-sha256", Key: "YR=="}, mustMention: `"key"`},
		{name: "hmac key empty", m: signing.Method{Algorithm: "hmac-sha256"}, mustMention: `"key"`},
		{name: "unknown algorithm", m: signing.Method{Algorithm: "hmac-sha512", Key: secretB64}, mustMention: `"algorithm"`},
		{name: "algorithm missing", m: signing.Method{Key: secretB64}, mustMention: `"algorithm"`},
		{name: "algorithm wrong case", m: signing.Method{Algorithm: "ED25519", Key: ks.pems["ed25519-pkcs8"]}, mustMention: `"algorithm"`},
		{name: "PEM garbage", m: signing.Method{Algorithm: "ed25519", Key: "not a key at all"}, mustMention: `"key"`},
		{name: "PEM block with garbage inside", m: signing.Method{Algorithm: "ecdsa-p256-sha256", Key: "-----BEGIN PRIVATE KEY-----\nAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n"}, mustMention: `"key"`},
		{name: "PEM public key instead of private", m: signing.Method{Algorithm: "ed25519", Key: pemPublic(t, ks.ed.Public())}, mustMention: `"key"`},
		{name: "encrypted PEM", m: signing.Method{Algorithm: "ecdsa-p256-sha256", Key: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"}, mustMention: "encrypted"},
		{name: "ed25519 key for ecdsa", m: signing.Method{Algorithm: "ecdsa-p256-sha256", Key: ks.pems["ed25519-pkcs8"]}, mustMention: "P-256"},
		{name: "ec key for rsa-pss", m: signing.Method{Algorithm: "rsa-pss-sha512", Key: ks.pems["ec-sec1"]}, mustMention: "RSA"},
		{name: "rsa key for ed25519", m: signing.Method{Algorithm: "ed25519", Key: ks.pems["rsa-pkcs1"]}, mustMention: "Ed25519"},
		{name: "covered header absent", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64, CoveredComponents: []string{"@method", "x-request-id"}}, mustMention: `"x-request-id"`},
		{name: "default components need content-type", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64},
			req: func() *signing.Request {
				return &signing.Request{Method: "POST", URL: "https://h.example/", Header: http.Header{}, Body: []byte("x")}
			}, mustMention: `"content-type"`},
		{name: "unsupported derived component", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64, CoveredComponents: []string{"@status"}}, mustMention: "@status"},
		{name: "invalid label", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64, Label: "Sig 1"}, mustMention: `"label"`},
		{name: "negative expiry", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64, ExpiresIn: -time.Second}, mustMention: "expires_in"},
		{name: "relative URL", m: signing.Method{Algorithm: "hmac-sha256", Key: secretB64},
			req: func() *signing.Request {
				r := jsonRequest("{}")
				r.URL = "/v1/payments"
				return r
			}, mustMention: "URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := jsonRequest(`{"a":1}`)
			if tc.req != nil {
				req = tc.req()
			}
			before := req.Header.(http.Header).Clone()
			se := assertAuthFailed(t, tc.m.Sign(req, testNow))
			if !strings.Contains(se.Message, tc.mustMention) {
				t.Errorf("message %q does not mention %q", se.Message, tc.mustMention)
			}
			// No key material in the message: no line of the key, nor the
			// key itself, appears.
			for _, line := range strings.Split(tc.m.Key, "\n") {
				if len(strings.TrimSpace(line)) >= 8 && !strings.HasPrefix(line, "-----") && strings.Contains(se.Error(), strings.TrimSpace(line)) {
					t.Errorf("message leaks key material: %q", se.Error())
				}
			}
			// Nothing signed: the request is as it was.
			after := req.Header.(http.Header)
			if len(after) != len(before) || after.Get("Signature") != "" || after.Get("Signature-Input") != "" || after.Get("Content-Digest") != before.Get("Content-Digest") {
				t.Errorf("request changed on error: %v", after)
			}
		})
	}
}

func pemPublic(t *testing.T, pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func TestContentDigest(t *testing.T) {
	tests := []struct{ body, want string }{
		// RFC 9530 section 2's example content.
		{`{"hello": "world"}`, "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"},
		{`{"hello": "world"}` + "\n", "sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:"},
		{"", "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"},
	}
	for _, tc := range tests {
		if got := signing.ContentDigest([]byte(tc.body)); got != tc.want {
			t.Errorf("ContentDigest(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestSignSetsContentDigest(t *testing.T) {
	ks := newKeySet(t)
	tests := []struct {
		name    string
		covered []string
		body    string
		want    string
	}{
		{"covered, replaces a stale digest", nil, `{"hello": "world"}`, "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"},
		{"covered, empty body", []string{"@method", "content-digest"}, "", "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"},
		// Every signed request gets one, covered or not
		// (docs/vault-forward-authentication.md).
		{"not covered, still set", []string{"@method", "@target-uri"}, `{"hello": "world"}`, "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := jsonRequest(tc.body)
			req.Header.Set("Content-Digest", "sha-512=:stale:")
			m := signing.Method{Algorithm: signing.AlgHMACSHA256, Key: ks.secretB, CoveredComponents: tc.covered}
			if err := m.Sign(req, testNow); err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Values("Content-Digest"); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("Content-Digest = %q, want %q", got, tc.want)
			}
			if err := signing.Verify(req, "sig1", signing.AlgHMACSHA256, ks.secret, testNow); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMultipleSignaturesInOrder(t *testing.T) {
	ks := newKeySet(t)
	req := jsonRequest(`{"amount":100}`)
	first := signing.Method{Algorithm: signing.AlgHMACSHA256, KeyID: "h", Key: ks.secretB}
	second := signing.Method{Algorithm: signing.AlgEd25519, KeyID: "e", Key: ks.pems["ed25519-pkcs8"], Label: "sig2",
		CoveredComponents: []string{"@method", "@path", "content-digest"}}
	if err := first.Sign(req, testNow); err != nil {
		t.Fatal(err)
	}
	if err := second.Sign(req, testNow); err != nil {
		t.Fatal(err)
	}
	in := req.Header.Values("Signature-Input")
	wantIn := `sig1=("@method" "@target-uri" "content-digest" "content-type");created=1700000000;keyid="h";alg="hmac-sha256", ` +
		`sig2=("@method" "@path" "content-digest");created=1700000000;keyid="e";alg="ed25519"`
	if len(in) != 1 || in[0] != wantIn {
		t.Fatalf("Signature-Input = %q", in)
	}
	sig := req.Header.Values("Signature")
	if len(sig) != 1 || !strings.HasPrefix(sig[0], "sig1=:") || !strings.Contains(sig[0], ", sig2=:") {
		t.Fatalf("Signature = %q", sig)
	}
	if err := signing.Verify(req, "sig1", signing.AlgHMACSHA256, ks.secret, testNow); err != nil {
		t.Errorf("sig1: %v", err)
	}
	if err := signing.Verify(req, "sig2", signing.AlgEd25519, ks.ed.Public(), testNow); err != nil {
		t.Errorf("sig2: %v", err)
	}

	// Same label twice (two methods left at the default): an error, and
	// the request keeps exactly its first signature.
	req2 := jsonRequest(`{}`)
	if err := first.Sign(req2, testNow); err != nil {
		t.Fatal(err)
	}
	before := req2.Header.Values("Signature")[0]
	se := assertAuthFailed(t, (signing.Method{Algorithm: signing.AlgEd25519, Key: ks.pems["ed25519-pkcs8"]}).Sign(req2, testNow))
	if !strings.Contains(se.Message, `"sig1"`) {
		t.Errorf("message %q does not name the label", se.Message)
	}
	if got := req2.Header.Values("Signature"); len(got) != 1 || got[0] != before {
		t.Errorf("Signature changed to %q", got)
	}
}

func TestMultipleSignaturesVerifyEach(t *testing.T) {
	ks := newKeySet(t)
	req := jsonRequest(`{"amount":100}`)
	methods := []signing.Method{
		{Algorithm: signing.AlgHMACSHA256, Key: ks.secretB},
		{Algorithm: signing.AlgECDSAP256SHA256, Key: ks.pems["ec-sec1"], Label: "sig2"},
		{Algorithm: signing.AlgRSAPSSSHA512, Key: ks.pems["rsa-pkcs8"], Label: "proc"},
	}
	for _, m := range methods {
		if err := m.Sign(req, testNow); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range methods {
		label := m.Label
		if label == "" {
			label = signing.DefaultLabel
		}
		if err := signing.Verify(req, label, m.Algorithm, ks.pubOf[m.Algorithm], testNow); err != nil {
			t.Errorf("%s: %v", label, err)
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	ks := newKeySet(t)
	sign := func() *signing.Request {
		req := jsonRequest(`{"a":1}`)
		m := signing.Method{Algorithm: signing.AlgEd25519, Key: ks.pems["ed25519-pkcs8"], ExpiresIn: time.Minute}
		if err := m.Sign(req, testNow); err != nil {
			t.Fatal(err)
		}
		return req
	}
	_, otherEd, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name   string
		change func(r *signing.Request)
		label  string
		alg    string
		key    any
		now    time.Time
	}{
		{name: "untouched", label: "sig1"}, // sanity: the only case that must pass
		{name: "header changed", change: func(r *signing.Request) { r.Header.Set("Content-Type", "text/plain") }},
		{name: "URL changed", change: func(r *signing.Request) { r.URL += "&x=1" }},
		{name: "method changed", change: func(r *signing.Request) { r.Method = "PUT" }},
		{name: "body changed (digest)", change: func(r *signing.Request) { r.Body = []byte(`{"a":2}`) }},
		{name: "wrong key", key: otherEd.Public()},
		{name: "wrong algorithm", alg: signing.AlgECDSAP256SHA256, key: &ks.ec.PublicKey},
		{name: "expired", now: testNow.Add(61 * time.Second)},
		{name: "no such label", label: "sig9"},
		{name: "signature header removed", change: func(r *signing.Request) { r.Header.(http.Header).Del("Signature") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := sign()
			if tc.change != nil {
				tc.change(req)
			}
			label, alg, key, now := "sig1", signing.AlgEd25519, any(ks.ed.Public()), testNow
			if tc.label != "" {
				label = tc.label
			}
			if tc.alg != "" {
				alg = tc.alg
			}
			if tc.key != nil {
				key = tc.key
			}
			if !tc.now.IsZero() {
				now = tc.now
			}
			err := signing.Verify(req, label, alg, key, now)
			if tc.name == "untouched" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			assertAuthFailed(t, err)
		})
	}
}

// TestFastHTTPRoundTrip is the property Verify(Sign(x)) over random bodies,
// taken through the wire: the signed fasthttp client request is written out
// and read back both by a fasthttp server request and by net/http, and the
// signature must verify on each side's view.
func TestFastHTTPRoundTrip(t *testing.T) {
	ks := newKeySet(t)
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	methods := []signing.Method{
		{Algorithm: signing.AlgHMACSHA256, Key: ks.secretB},
		{Algorithm: signing.AlgECDSAP256SHA256, Key: ks.pems["ec-pkcs8"]},
		{Algorithm: signing.AlgEd25519, Key: ks.pems["ed25519-pkcs8"]},
		{Algorithm: signing.AlgRSAPSSSHA512, Key: ks.pems["rsa-pkcs1"]},
	}
	covered := strings.Fields("@method @target-uri @authority @scheme @request-target @path @query content-digest content-type content-length host x-multi")
	// Paths fasthttp would normalise by default: the signature must cover
	// the path as written, which is what the target receives.
	paths := []string{"/v1/pay/%7Eme", "/v1/customers/a%40b.com/cards", "/x/a%2Fb", "/v1//pay", "/a/../b", "/a/./b", "/caf%C3%A9"}
	for i := 0; i < 42; i++ {
		m := methods[i%len(methods)]
		m.KeyID = "k"
		m.CoveredComponents = covered
		body := make([]byte, rng.IntN(2048))
		for j := range body {
			body[j] = byte(rng.UintN(256))
		}

		req := fasthttp.AcquireRequest()
		req.SetRequestURI("https://API.Processor.example:443" + paths[i%len(paths)] + "?ref=" + string(rune('a'+i%26)) + "&n=1")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/octet-stream")
		req.Header.Add("X-Multi", " one ")
		req.Header.Add("X-Multi", "two")
		req.SetBody(body)
		if err := m.Sign(signing.FromFastHTTP(req), testNow); err != nil {
			t.Fatalf("case %d (%s): %v", i, m.Algorithm, err)
		}
		req.URI().DisablePathNormalizing = true // as outbound.Client sends
		var wire bytes.Buffer
		w := bufio.NewWriter(&wire)
		if err := req.Write(w); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fasthttp.ReleaseRequest(req)
		raw := wire.Bytes()

		// fasthttp server side. A server request has no scheme of its own:
		// this one arrived over TLS.
		srv := fasthttp.AcquireRequest()
		if err := srv.Read(bufio.NewReader(bytes.NewReader(raw))); err != nil {
			t.Fatal(err)
		}
		srv.URI().SetScheme("https")
		if err := signing.Verify(signing.FromFastHTTP(srv), "sig1", m.Algorithm, ks.pubOf[m.Algorithm], testNow); err != nil {
			t.Fatalf("case %d (%s) fasthttp side: %v\n%s", i, m.Algorithm, err, headOf(raw))
		}
		fasthttp.ReleaseRequest(srv)

		// net/http server side.
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatal(err)
		}
		hb, err := io.ReadAll(hr.Body)
		if err != nil {
			t.Fatal(err)
		}
		view := signing.FromHTTP(hr, hb)
		view.URL = "https" + strings.TrimPrefix(view.URL, "http") // arrived over TLS
		if err := signing.Verify(view, "sig1", m.Algorithm, ks.pubOf[m.Algorithm], testNow); err != nil {
			t.Fatalf("case %d (%s) net/http side: %v\n%s", i, m.Algorithm, err, headOf(raw))
		}
	}
}

func headOf(raw []byte) string {
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		return string(raw[:i])
	}
	return string(raw)
}

func BenchmarkSign(b *testing.B) {
	ks := newKeySet(b)
	body := bytes.Repeat([]byte("x"), 1024)
	for _, m := range []signing.Method{
		{Algorithm: signing.AlgHMACSHA256, KeyID: "k", Key: ks.secretB},
		{Algorithm: signing.AlgECDSAP256SHA256, KeyID: "k", Key: ks.pems["ec-sec1"]},
	} {
		b.Run(m.Algorithm+"/1KiB", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				req := fasthttp.AcquireRequest()
				req.SetRequestURI("https://api.processor.example/v1/payments")
				req.Header.SetMethod(fasthttp.MethodPost)
				req.Header.SetContentType("application/json")
				req.SetBodyRaw(body)
				if err := m.Sign(signing.FromFastHTTP(req), testNow); err != nil {
					b.Fatal(err)
				}
				fasthttp.ReleaseRequest(req)
			}
		})
	}
}

// FromFastHTTP reports what fasthttp will put on the wire, not only what
// was set: the default Content-Type of a request with a body, the
// Content-Length of the body, the Host taken from the URI.
func TestFromFastHTTPWireValues(t *testing.T) {
	ks := newKeySet(t)
	tests := []struct {
		name, method, uri, body string
		noDefaultCT             bool
		want                    map[string]string // "" = absent
	}{
		{name: "POST without content type", method: "POST", uri: "https://h.example/p", body: "abc",
			want: map[string]string{"content-type": "application/octet-stream", "content-length": "3", "host": "h.example"}},
		{name: "POST with default content type disabled", method: "POST", uri: "https://h.example/p", body: "abc", noDefaultCT: true,
			want: map[string]string{"content-type": "", "content-length": "3"}},
		{name: "GET without body", method: "GET", uri: "https://H.Example:8443/p?q", body: "",
			want: map[string]string{"content-type": "", "content-length": "", "host": "h.example:8443"}},
		{name: "empty POST", method: "POST", uri: "https://h.example/", body: "",
			want: map[string]string{"content-length": "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			req.SetRequestURI(tc.uri)
			req.Header.SetMethod(tc.method)
			req.Header.SetNoDefaultContentType(tc.noDefaultCT)
			req.SetBodyString(tc.body)
			view := signing.FromFastHTTP(req)
			for name, want := range tc.want {
				got := strings.Join(view.Header.Values(name), ",")
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			var covered []string
			for name, want := range tc.want {
				if want != "" {
					covered = append(covered, name)
				}
			}
			m := signing.Method{Algorithm: signing.AlgHMACSHA256, Key: ks.secretB, CoveredComponents: append(covered, "@authority")}
			if err := m.Sign(view, testNow); err != nil {
				t.Fatal(err)
			}
			var wire bytes.Buffer
			w := bufio.NewWriter(&wire)
			if err := req.Write(w); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			srv := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(srv)
			if err := srv.Read(bufio.NewReader(&wire)); err != nil {
				t.Fatal(err)
			}
			srv.URI().SetScheme("https")
			if err := signing.Verify(signing.FromFastHTTP(srv), "sig1", signing.AlgHMACSHA256, ks.secret, testNow); err != nil {
				t.Fatalf("server side: %v", err)
			}
		})
	}
}
