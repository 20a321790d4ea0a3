package signing

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Verify checks the signature labelled label on req, as a target (or a
// simulator of one) would. algorithm is the algorithm the verifier expects;
// an alg parameter, when present, must name the same one. key is the shared
// secret as raw bytes ([]byte, not base64) for hmac-sha256, else the public
// key: *ecdsa.PublicKey (P-256), ed25519.PublicKey or *rsa.PublicKey (see
// ParsePublicKeyPEM). A signature whose expires parameter is before now is
// rejected, and when content-digest is covered its sha-256 or sha-512
// member must match the body.
//
// The signature parameters are re-serialized from the parsed
// Signature-Input, which equals what was signed whenever the signer
// serialized canonically (RFC 8941), as Sign and the RFC's examples do.
func Verify(req *Request, label, algorithm string, key any, now time.Time) error {
	if req == nil || req.Header == nil {
		return failf("no request to verify")
	}
	inputs, err := existingDictionary(req, "Signature-Input")
	if err != nil {
		return err
	}
	sigs, err := existingDictionary(req, "Signature")
	if err != nil {
		return err
	}
	in, ok := inputs.Get(label)
	if !ok {
		return failf("no Signature-Input member " + quote(label))
	}
	il, ok := in.(httpsfv.InnerList)
	if !ok {
		return failf("Signature-Input member " + quote(label) + " is not an inner list")
	}
	sm, ok := sigs.Get(label)
	if !ok {
		return failf("no Signature member " + quote(label))
	}
	sigItem, ok := sm.(httpsfv.Item)
	if !ok {
		return failf("Signature member " + quote(label) + " is not an item")
	}
	sig, ok := sigItem.Value.([]byte)
	if !ok {
		return failf("Signature member " + quote(label) + " is not a byte sequence")
	}
	covered := make([]string, 0, len(il.Items))
	for _, it := range il.Items {
		name, ok := it.Value.(string)
		if !ok || name != strings.ToLower(name) {
			return failf("Signature-Input member " + quote(label) + " has a component identifier that is not a lowercase string")
		}
		if it.Params != nil && len(it.Params.Names()) > 0 {
			return failf("component " + quote(name) + " has parameters, which this verifier does not support")
		}
		covered = append(covered, name)
	}
	if _, err := normalizeCovered(covered); err != nil {
		return err
	}
	if v, ok := il.Params.Get("alg"); ok && v != algorithm {
		return failf("alg parameter does not match the expected algorithm " + quote(algorithm))
	}
	if v, ok := il.Params.Get("expires"); ok {
		exp, isInt := v.(int64)
		if !isInt || now.Unix() > exp {
			return failf("signature has expired")
		}
	}
	base, _, err := signatureBase(req, covered, il.Params, nil)
	if err != nil {
		return err
	}
	if err := verifyRaw(algorithm, key, base, sig); err != nil {
		return err
	}
	for _, c := range covered {
		if c == contentDigestField {
			return checkContentDigest(req)
		}
	}
	return nil
}

// checkContentDigest compares every digest we know how to compute in the
// Content-Digest header against the body; at least one must be present.
func checkContentDigest(req *Request) error {
	d, err := httpsfv.UnmarshalDictionary(req.Header.Values("Content-Digest"))
	if err != nil {
		return failf("Content-Digest is not a structured dictionary")
	}
	checked := false
	for _, alg := range d.Names() {
		var want []byte
		switch alg {
		case "sha-256":
			s := sha256.Sum256(req.Body)
			want = s[:]
		case "sha-512":
			s := sha512.Sum512(req.Body)
			want = s[:]
		default:
			continue
		}
		m, _ := d.Get(alg)
		it, ok := m.(httpsfv.Item)
		got, isBytes := it.Value.([]byte)
		if !ok || !isBytes || !bytes.Equal(got, want) {
			return failf("Content-Digest " + alg + " does not match the body")
		}
		checked = true
	}
	if !checked {
		return failf("Content-Digest has no sha-256 or sha-512 digest")
	}
	return nil
}
