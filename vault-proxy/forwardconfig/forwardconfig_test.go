package forwardconfig

import (
	"strings"
	"testing"
)

func TestNormalizeHosts(t *testing.T) {
	got, errs := NormalizeHosts([]string{"API.Processor.Example", "127.0.0.1:9999", "api.processor.example", "[2001:DB8::1]:8443"})
	if len(errs) != 0 || strings.Join(got, " ") != "api.processor.example 127.0.0.1:9999 [2001:db8::1]:8443" {
		t.Fatalf("got %v %v", got, errs)
	}
	for _, bad := range []string{"https://a.example", "a.example/pay", "a.example?x", "u@a.example", "a.example:0", "a.example:99999", "", "a b.example"} {
		if _, errs := NormalizeHosts([]string{"ok.example", bad}); len(errs) != 1 || errs[0].Pointer != "/hosts/1" {
			t.Errorf("%q: %v", bad, errs)
		}
	}
	if _, errs := NormalizeHosts(nil); len(errs) != 1 || errs[0].Pointer != "/hosts" {
		t.Errorf("empty list: %v", errs)
	}
}

func TestSecretFields(t *testing.T) {
	for _, tc := range []struct {
		kind, key string
		secret    bool
	}{
		{KindSignature, "key", true}, {KindSignature, "algorithm", false}, {KindSignature, "key_id", false},
		{KindMTLS, "private_key", true}, {KindMTLS, "certificate", false}, {KindMTLS, "ca_certificate", false},
		{KindMLE, "public_key", false}, {KindMLE, "anything", true}, {"unknown", "algorithm", true},
	} {
		if IsSecret(tc.kind, tc.key) != tc.secret {
			t.Errorf("%s/%s: secret=%v", tc.kind, tc.key, !tc.secret)
		}
	}
}

func TestCheckOrder(t *testing.T) {
	const s, m, e = KindSignature, KindMTLS, KindMLE
	for _, tc := range []struct {
		name  string
		kinds []string
		want  *OrderError // nil: allowed
	}{
		{"none", nil, nil},
		{"signature", []string{s}, nil},
		{"mle", []string{e}, nil},
		{"mle then signature", []string{e, s}, nil},
		{"two mle then two signatures", []string{e, e, s, s}, nil},
		{"mtls first", []string{m, e, s}, nil},
		{"mtls between", []string{e, m, s}, nil},
		{"mtls last", []string{e, s, m}, nil},
		{"signature then mle", []string{s, e}, &OrderError{0, 1}},
		{"signature, mtls, mle", []string{s, m, e}, &OrderError{0, 2}},
		{"a signature after does not help", []string{e, s, e, s}, &OrderError{1, 2}},
		{"the first signature is named", []string{m, s, s, e}, &OrderError{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			methods := make([]*Opened, len(tc.kinds))
			for i, k := range tc.kinds {
				methods[i] = &Opened{Kind: k}
			}
			err := CheckOrder(methods)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if got, ok := err.(*OrderError); !ok || *got != *tc.want {
				t.Fatalf("got %v, want %+v", err, *tc.want)
			}
		})
	}
}

func TestHoldsPrivateKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		private bool
	}{
		{"PKCS#8", "-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----\n", true},
		{"PKCS#1", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", true},
		{"SEC1", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\n-----END EC PRIVATE KEY-----", true},
		{"encrypted PKCS#8", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----", true},
		{"OpenSSH", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----", true},
		{"a damaged block is still a key", "  -----BEGIN PRIVATE KEY-----\nnot base64 !!\n", true},
		{"certificate then key", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n", true},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n", false},
		{"RSA public key", "-----BEGIN RSA PUBLIC KEY-----\nMIIB\n-----END RSA PUBLIC KEY-----\n", false},
		{"certificate chain", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n", false},
		{"EC JWK with d", `{"kty":"EC","crv":"P-256","x":"f83O","y":"x_FE","d":"jpsQ"}`, true},
		{"OKP JWK with d", ` {"kty":"OKP","crv":"Ed25519","x":"11qY","d" : "nWGx"}`, true},
		{"RSA JWK with only qi", `{"kty":"RSA","n":"0vx7","e":"AQAB","qi":"GyM_"}`, true},
		{"RSA JWK with oth", `{"kty":"RSA","n":"0vx7","e":"AQAB","oth":[]}`, true},
		{"oct JWK", `{"kty":"oct","k":"GawgguFyGrWKav7AX4VKUg"}`, true},
		{"JWK Set with a private key", `{"keys":[{"kty":"EC","x":"a","y":"b"},{"kty":"EC","x":"a","y":"b","d":"c"}]}`, true},
		{"JWK with a typo", `{"kty":"EC","x":"a","y":"b","d":"c",}`, true},
		{"EC public JWK", `{"kty":"EC","crv":"P-256","x":"f83O","y":"x_FE","kid":"k1","use":"enc","alg":"ECDH-ES+A256KW"}`, false},
		{"RSA public JWK", `{"kty":"RSA","n":"0vx7","e":"AQAB","x5c":["MIIB"],"x5t#S256":"abc","key_ops":["wrapKey"]}`, false},
		{"public JWK Set", `{"keys":[{"kty":"EC","x":"a","y":"b","kid":"d"}]}`, false},
		{"a key id", "d", false},
		{"components", "@method @target-uri content-digest", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HoldsPrivateKey(tc.value); got != tc.private {
				t.Fatalf("HoldsPrivateKey = %v", got)
			}
		})
	}
}
