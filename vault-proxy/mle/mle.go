// Package mle applies the "mle" (message-level encryption) authentication
// method of a vault forward: the substituted body becomes a JWE (RFC 7516)
// in compact serialization, encrypted to the third party's public key, and
// the caller sends it with content-type application/jose.
//
// JOSE is done with github.com/go-jose/go-jose/v4, a maintained library;
// the tests decrypt with an independent one (lestrrat-go/jwx) so the output
// is checked against something other than itself.
//
// Credentials are stored exactly as entered and never validated on entry,
// so the key is parsed in Encrypt, at send time; a bad key is an *Error with
// code authentication_failed, and nothing is encrypted or sent.
package mle

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"mime"
	"strconv"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// Field keys of an "mle" authentication method
// (docs/vault-forward-authentication.md).
const (
	FieldPublicKey  = "public_key"
	FieldKeyID      = "key_id"
	FieldAlgorithm  = "algorithm"
	FieldEncryption = "encryption"
)

// Key management algorithms (JWE "alg").
const (
	AlgRSAOAEP256   = "RSA-OAEP-256"
	AlgECDHESA256KW = "ECDH-ES+A256KW"
)

// Content encryption algorithms (JWE "enc"). A256GCM is the default; the
// shorter GCM keys are accepted because some card-network MLE schemes use
// A128GCM, and they change nothing else.
const (
	EncA128GCM = "A128GCM"
	EncA192GCM = "A192GCM"
	EncA256GCM = "A256GCM"
)

// Defaults applied when the corresponding field is absent or empty.
const (
	DefaultAlgorithm  = AlgRSAOAEP256
	DefaultEncryption = EncA256GCM
)

// ContentType is the content type of the encrypted body; the caller sets it.
const ContentType = "application/jose"

// CodeAuthenticationFailed is the error code a forward reports when an
// authentication method cannot be applied (the same code as the signing
// package's; each package has its own Error so neither depends on the other).
const CodeAuthenticationFailed = "authentication_failed"

// Error is returned for every failure of this package. Message names the
// method and field at fault but never carries key material; underlying
// parser errors are not wrapped for that reason.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func failf(msg string) *Error {
	return &Error{Code: CodeAuthenticationFailed, Message: "mle method: " + msg}
}

// Method is one configured payload encryption method.
type Method struct {
	// PublicKey is exactly as entered: a PEM public key (PKIX "PUBLIC KEY",
	// PKCS#1 "RSA PUBLIC KEY", or a "CERTIFICATE" whose key is used), a JWK,
	// or a JWK Set holding one key or one whose kid is KeyID.
	PublicKey string
	// KeyID is the JWE kid header. When empty, the JWK's own kid (if any)
	// is used.
	KeyID string
	// Algorithm is AlgRSAOAEP256 or AlgECDHESA256KW; empty means
	// DefaultAlgorithm.
	Algorithm string
	// Encryption is EncA256GCM (or EncA192GCM, EncA128GCM); empty means
	// DefaultEncryption.
	Encryption string
}

// FromFields builds a Method from the stored fields of an "mle"
// authentication method. Nothing is checked here; Encrypt does it.
func FromFields(fields map[string]string) Method {
	return Method{
		PublicKey:  fields[FieldPublicKey],
		KeyID:      fields[FieldKeyID],
		Algorithm:  fields[FieldAlgorithm],
		Encryption: fields[FieldEncryption],
	}
}

// Encrypt returns plaintext as a JWE compact serialization. The protected
// header has alg, enc, kid (when known) and, when contentType (the body's
// content type before encryption) is given, cty with its media type, e.g.
// "application/json", so the receiver knows what the decrypted body is.
func (m Method) Encrypt(plaintext []byte, contentType string) ([]byte, error) {
	alg := m.Algorithm
	if alg == "" {
		alg = DefaultAlgorithm
	}
	if alg != AlgRSAOAEP256 && alg != AlgECDHESA256KW {
		return nil, failf("field \"algorithm\" has unsupported value " + quote(alg) + " (supported: " + AlgRSAOAEP256 + ", " + AlgECDHESA256KW + ")")
	}
	enc := m.Encryption
	if enc == "" {
		enc = DefaultEncryption
	}
	if enc != EncA256GCM && enc != EncA192GCM && enc != EncA128GCM {
		return nil, failf("field \"encryption\" has unsupported value " + quote(enc) + " (supported: " + EncA256GCM + ", " + EncA192GCM + ", " + EncA128GCM + ")")
	}
	key, jwkKID, err := parsePublicKey(m.PublicKey, m.KeyID)
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		if alg != AlgRSAOAEP256 {
			return nil, failf("field \"public_key\" is an RSA key, which algorithm " + alg + " cannot use (use " + AlgRSAOAEP256 + ")")
		}
	case *ecdsa.PublicKey:
		if alg != AlgECDHESA256KW {
			return nil, failf("field \"public_key\" is an EC key, which algorithm " + alg + " cannot use (use " + AlgECDHESA256KW + ")")
		}
		if name := k.Curve.Params().Name; name != "P-256" && name != "P-384" && name != "P-521" {
			return nil, failf("field \"public_key\" is on an unsupported curve (supported: P-256, P-384, P-521)")
		}
	default:
		return nil, failf("field \"public_key\" is neither an RSA nor an EC public key")
	}
	kid := m.KeyID
	if kid == "" {
		kid = jwkKID
	}
	opts := &jose.EncrypterOptions{}
	if cty := mediaType(contentType); cty != "" {
		opts = opts.WithContentType(jose.ContentType(cty))
	}
	encrypter, err := jose.NewEncrypter(jose.ContentEncryption(enc),
		jose.Recipient{Algorithm: jose.KeyAlgorithm(alg), Key: key, KeyID: kid}, opts)
	if err != nil {
		return nil, failf("the public key cannot be used for " + alg + " with " + enc)
	}
	obj, err := encrypter.Encrypt(plaintext)
	if err != nil {
		return nil, failf("encryption failed")
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		return nil, failf("the JWE does not serialize compactly")
	}
	return []byte(out), nil
}

// mediaType is contentType without parameters, lowercased; "" when absent
// or unparseable (then cty is left out rather than guessed).
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// parsePublicKey reads the key as entered. A value whose first non-blank
// character is '{' is JSON (a JWK or a JWK Set), anything else PEM; both
// parsers tolerate surrounding whitespace themselves, so the value is not
// trimmed or otherwise altered. It returns the JWK's kid, if any.
func parsePublicKey(s, wantKID string) (key any, kid string, err error) {
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		return parseJWK(s, wantKID)
	}
	k, err := parsePEM(s)
	return k, "", err
}

func parseJWK(s, wantKID string) (any, string, error) {
	var probe struct {
		Keys json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return nil, "", failf("field \"public_key\" is neither a PEM key nor valid JSON")
	}
	var jwk jose.JSONWebKey
	if probe.Keys != nil {
		var set jose.JSONWebKeySet
		if err := json.Unmarshal([]byte(s), &set); err != nil {
			return nil, "", failf("field \"public_key\" is not a valid JWK Set")
		}
		switch {
		case len(set.Keys) == 1:
			jwk = set.Keys[0]
		case wantKID != "" && len(set.Key(wantKID)) == 1:
			jwk = set.Key(wantKID)[0]
		default:
			return nil, "", failf("field \"public_key\" is a JWK Set without exactly one key, or one whose kid is the method's key_id")
		}
	} else if err := jwk.UnmarshalJSON([]byte(s)); err != nil {
		return nil, "", failf("field \"public_key\" is not a valid JWK")
	}
	if !jwk.IsPublic() {
		// A private JWK pasted by mistake: only its public half is used.
		jwk = jwk.Public()
	}
	if !jwk.Valid() {
		return nil, "", failf("field \"public_key\" is not a usable public JWK")
	}
	return jwk.Key, jwk.KeyID, nil
}

// parsePEM takes the first public key, PKCS#1 RSA public key or
// certificate block (the leaf, for a chain).
func parsePEM(s string) (any, error) {
	rest := []byte(s)
	found := false
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		found = true
		switch block.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, failf("field \"public_key\" has a PUBLIC KEY block that does not parse as PKIX")
			}
			return k, nil
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(block.Bytes)
			if err != nil {
				return nil, failf("field \"public_key\" has an RSA PUBLIC KEY block that does not parse as PKCS#1")
			}
			return k, nil
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, failf("field \"public_key\" has a CERTIFICATE block that does not parse")
			}
			return cert.PublicKey, nil
		}
		if strings.Contains(block.Type, "PRIVATE KEY") {
			return nil, failf("field \"public_key\" holds a private key; it needs the recipient's public key")
		}
	}
	if found {
		return nil, failf("field \"public_key\" has no PUBLIC KEY or CERTIFICATE PEM block")
	}
	return nil, failf("field \"public_key\" is neither a PEM public key nor a JWK")
}

func quote(s string) string { return strconv.Quote(s) }
