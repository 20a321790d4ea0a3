package signing

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"math/big"
)

// Algorithm names, as stored in the method's "algorithm" field and sent in
// the alg signature parameter (RFC 9421 section 6.2.2).
const (
	AlgHMACSHA256      = "hmac-sha256"
	AlgECDSAP256SHA256 = "ecdsa-p256-sha256"
	AlgEd25519         = "ed25519"
	AlgRSAPSSSHA512    = "rsa-pss-sha512"
)

// rsaPSSSaltLength is fixed by RFC 9421 section 3.3.1: 64 bytes.
const rsaPSSSaltLength = 64

// p256ScalarSize is the size of r and of s in an ecdsa-p256-sha256
// signature: RFC 9421 section 3.3.4 sends them as fixed-size big-endian
// integers, concatenated, not as an ASN.1 structure.
const p256ScalarSize = 32

// signFunc signs a signature base.
type signFunc func(base []byte) ([]byte, error)

// newSigner parses key for algorithm. Parsing happens at send time because
// the stored credentials are never validated when entered.
func newSigner(algorithm, key string) (signFunc, error) {
	switch algorithm {
	case AlgHMACSHA256:
		secret, err := decodeStrictBase64(key)
		if err != nil {
			return nil, err
		}
		return func(base []byte) ([]byte, error) {
			mac := hmac.New(sha256.New, secret)
			mac.Write(base)
			return mac.Sum(nil), nil
		}, nil
	case AlgECDSAP256SHA256:
		priv, err := parsePrivateKeyPEM(key)
		if err != nil {
			return nil, err
		}
		k, ok := priv.(*ecdsa.PrivateKey)
		if !ok || k.Curve != elliptic.P256() {
			return nil, failf("field \"key\" is not a P-256 EC private key, which algorithm " + AlgECDSAP256SHA256 + " needs")
		}
		return func(base []byte) ([]byte, error) {
			digest := sha256.Sum256(base)
			der, err := ecdsa.SignASN1(rand.Reader, k, digest[:])
			if err != nil {
				return nil, failf("ECDSA signing failed")
			}
			return ecdsaDERToFixed(der)
		}, nil
	case AlgEd25519:
		priv, err := parsePrivateKeyPEM(key)
		if err != nil {
			return nil, err
		}
		k, ok := priv.(ed25519.PrivateKey)
		if !ok {
			return nil, failf("field \"key\" is not an Ed25519 private key, which algorithm " + AlgEd25519 + " needs")
		}
		return func(base []byte) ([]byte, error) { return ed25519.Sign(k, base), nil }, nil
	case AlgRSAPSSSHA512:
		priv, err := parsePrivateKeyPEM(key)
		if err != nil {
			return nil, err
		}
		k, ok := priv.(*rsa.PrivateKey)
		if !ok {
			return nil, failf("field \"key\" is not an RSA private key, which algorithm " + AlgRSAPSSSHA512 + " needs")
		}
		return func(base []byte) ([]byte, error) {
			digest := sha512.Sum512(base)
			sig, err := rsa.SignPSS(rand.Reader, k, crypto.SHA512, digest[:], &rsa.PSSOptions{SaltLength: rsaPSSSaltLength})
			if err != nil {
				return nil, failf("RSA-PSS signing failed (is the key at least 2048 bits?)")
			}
			return sig, nil
		}, nil
	}
	return nil, unknownAlgorithm(algorithm)
}

func unknownAlgorithm(algorithm string) *Error {
	return failf("field \"algorithm\" has unsupported value " + quote(algorithm) +
		" (supported: " + AlgHMACSHA256 + ", " + AlgECDSAP256SHA256 + ", " + AlgEd25519 + ", " + AlgRSAPSSSHA512 + ")")
}

// decodeStrictBase64 decodes the hmac secret exactly as entered. Go's base64
// decoder silently skips '\r' and '\n' even in strict mode, and a pasted
// trailing newline must fail as loudly as a trailing space
// (docs/vault-forward-authentication.md), so every byte is
// checked against the standard alphabet first.
func decodeStrictBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, failf("field \"key\" is empty; algorithm " + AlgHMACSHA256 + " needs the base64 of the shared secret")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return nil, failf("field \"key\" is not valid standard base64 (a character outside the alphabet, e.g. whitespace, at offset " + itoa(i) + "); it is used exactly as entered")
		}
	}
	secret, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, failf("field \"key\" is not valid standard base64 (bad length or padding); it is used exactly as entered")
	}
	if len(secret) == 0 {
		return nil, failf("field \"key\" decodes to an empty secret")
	}
	return secret, nil
}

// oidRSASSAPSS identifies an RSASSA-PSS key in PKCS#8 (RFC 4055), as written
// by "openssl genpkey -algorithm RSA-PSS" and used for test-key-rsa-pss in
// RFC 9421 appendix B.1.2. x509.ParsePKCS8PrivateKey does not accept it.
var oidRSASSAPSS = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}

type pkcs8 struct {
	Version    int
	Algo       pkix.AlgorithmIdentifier
	PrivateKey []byte
}

// parsePrivateKeyPEM finds the first private key block in s and parses it
// as PKCS#8, PKCS#1 (RSA) or SEC1 (EC). Blocks such as "EC PARAMETERS"
// (which openssl ecparam writes before the key) are skipped.
func parsePrivateKeyPEM(s string) (crypto.PrivateKey, error) {
	rest := []byte(s)
	found := false
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		found = true
		if block.Type == "EC PARAMETERS" {
			continue
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "" {
			return nil, failf("field \"key\" holds an encrypted private key; store it unencrypted (it is encrypted at rest by the vault)")
		}
		if k, ok := parsePrivateKeyDER(block.Type, block.Bytes); ok {
			return k, nil
		}
		return nil, failf("field \"key\" has a PEM block " + quote(block.Type) + " that is not a PKCS#8, PKCS#1 or SEC1 private key")
	}
	if found {
		return nil, failf("field \"key\" has no private key PEM block")
	}
	return nil, failf("field \"key\" is not a PEM private key (no -----BEGIN ...----- block found)")
}

// parsePrivateKeyDER tries the format the PEM label names first, then the
// others, because mislabelled keys are common in pasted credentials.
func parsePrivateKeyDER(label string, der []byte) (crypto.PrivateKey, bool) {
	pkcs8Parse := func() (crypto.PrivateKey, bool) {
		if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
			return k, true
		}
		var p pkcs8
		if rest, err := asn1.Unmarshal(der, &p); err == nil && len(rest) == 0 && p.Algo.Algorithm.Equal(oidRSASSAPSS) {
			if k, err := x509.ParsePKCS1PrivateKey(p.PrivateKey); err == nil {
				return k, true
			}
		}
		return nil, false
	}
	pkcs1Parse := func() (crypto.PrivateKey, bool) {
		k, err := x509.ParsePKCS1PrivateKey(der)
		return k, err == nil
	}
	sec1Parse := func() (crypto.PrivateKey, bool) {
		k, err := x509.ParseECPrivateKey(der)
		return k, err == nil
	}
	order := []func() (crypto.PrivateKey, bool){pkcs8Parse, pkcs1Parse, sec1Parse}
	switch label {
	case "RSA PRIVATE KEY":
		order = []func() (crypto.PrivateKey, bool){pkcs1Parse, pkcs8Parse, sec1Parse}
	case "EC PRIVATE KEY":
		order = []func() (crypto.PrivateKey, bool){sec1Parse, pkcs8Parse, pkcs1Parse}
	}
	for _, parse := range order {
		if k, ok := parse(); ok {
			return k, true
		}
	}
	return nil, false
}

// ParsePublicKeyPEM parses a PEM public key for Verify: PKIX "PUBLIC KEY"
// (RSA, EC, Ed25519), PKCS#1 "RSA PUBLIC KEY", or the key of a
// "CERTIFICATE". A PKIX key with the RSASSA-PSS OID is accepted too.
func ParsePublicKeyPEM(s string) (crypto.PublicKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, failf("public key is not PEM")
	}
	switch block.Type {
	case "CERTIFICATE":
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, failf("public key certificate does not parse")
		}
		return cert.PublicKey, nil
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, failf("PKCS#1 public key does not parse")
		}
		return k, nil
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		return k, nil
	}
	var spki struct {
		Algo      pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if rest, err := asn1.Unmarshal(block.Bytes, &spki); err == nil && len(rest) == 0 && spki.Algo.Algorithm.Equal(oidRSASSAPSS) {
		if k, err := x509.ParsePKCS1PublicKey(spki.PublicKey.RightAlign()); err == nil {
			return k, nil
		}
	}
	return nil, failf("public key is not a PKIX, PKCS#1 or certificate PEM key")
}

// verifyRaw checks sig over base. key is the shared secret ([]byte) for
// hmac-sha256, else the public key of the algorithm.
func verifyRaw(algorithm string, key any, base, sig []byte) error {
	bad := failf("signature does not verify")
	switch algorithm {
	case AlgHMACSHA256:
		secret, ok := key.([]byte)
		if !ok {
			return failf("verify key for " + AlgHMACSHA256 + " must be the shared secret as []byte")
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(base)
		if !hmac.Equal(mac.Sum(nil), sig) {
			return bad
		}
		return nil
	case AlgECDSAP256SHA256:
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || k.Curve != elliptic.P256() {
			return failf("verify key for " + AlgECDSAP256SHA256 + " must be a P-256 *ecdsa.PublicKey")
		}
		if len(sig) != 2*p256ScalarSize {
			return bad
		}
		der, err := asn1.Marshal(struct{ R, S *big.Int }{
			new(big.Int).SetBytes(sig[:p256ScalarSize]),
			new(big.Int).SetBytes(sig[p256ScalarSize:]),
		})
		if err != nil {
			return bad
		}
		digest := sha256.Sum256(base)
		if !ecdsa.VerifyASN1(k, digest[:], der) {
			return bad
		}
		return nil
	case AlgEd25519:
		k, ok := key.(ed25519.PublicKey)
		if !ok {
			return failf("verify key for " + AlgEd25519 + " must be an ed25519.PublicKey")
		}
		if !ed25519.Verify(k, base, sig) {
			return bad
		}
		return nil
	case AlgRSAPSSSHA512:
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return failf("verify key for " + AlgRSAPSSSHA512 + " must be an *rsa.PublicKey")
		}
		digest := sha512.Sum512(base)
		if rsa.VerifyPSS(k, crypto.SHA512, digest[:], sig, &rsa.PSSOptions{SaltLength: rsaPSSSaltLength}) != nil {
			return bad
		}
		return nil
	}
	return unknownAlgorithm(algorithm)
}

// ecdsaDERToFixed turns the ASN.1 signature crypto/ecdsa produces into the
// r||s form of RFC 9421 section 3.3.4.
func ecdsaDERToFixed(der []byte) ([]byte, error) {
	var rs struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(der, &rs); err != nil || len(rest) != 0 {
		return nil, failf("ECDSA signing produced an unexpected encoding")
	}
	out := make([]byte, 2*p256ScalarSize)
	rs.R.FillBytes(out[:p256ScalarSize])
	rs.S.FillBytes(out[p256ScalarSize:])
	return out, nil
}
