// Package signing applies the "signature" authentication method of a vault
// forward: RFC 9421 HTTP Message Signatures over the request the proxy is
// about to send, with an RFC 9530 Content-Digest.
//
// It is the product's own code, on github.com/dunglas/httpsfv (RFC 8941
// structured fields) and the standard crypto packages, because the module
// proxy refuses every RFC 9421 library tried (ARCHITECTURE.md). The
// tests check it against the RFC's own appendix B test vectors.
//
// Credentials are stored exactly as entered and never validated on entry,
// so all parsing happens in Sign, at send time; a bad credential is an
// *Error with code authentication_failed, and the request is left untouched.
package signing

import (
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Field keys of a "signature" authentication method
// (docs/vault-forward-authentication.md).
const (
	FieldAlgorithm         = "algorithm"
	FieldKeyID             = "key_id"
	FieldKey               = "key"
	FieldCoveredComponents = "covered_components"
	FieldLabel             = "label"
	FieldExpiresIn         = "expires_in"
)

// Defaults applied when the corresponding field is absent or empty.
const (
	DefaultCoveredComponents = "@method @target-uri content-digest content-type"
	DefaultLabel             = "sig1"
)

// Method is one configured signature method.
type Method struct {
	// Algorithm is one of AlgHMACSHA256, AlgECDSAP256SHA256, AlgEd25519,
	// AlgRSAPSSSHA512.
	Algorithm string
	// KeyID is sent as the keyid parameter; omitted when empty.
	KeyID string
	// Key is exactly as entered: standard base64 of the shared secret for
	// hmac-sha256, a PEM private key (PKCS#8, PKCS#1 or SEC1) otherwise.
	Key string
	// CoveredComponents lists component names in signing order; empty means
	// the default (DefaultCoveredComponents).
	CoveredComponents []string
	// Label is the Signature/Signature-Input dictionary key; empty means
	// DefaultLabel.
	Label string
	// ExpiresIn, when positive, adds expires = created + ExpiresIn (whole
	// seconds, rounded up).
	ExpiresIn time.Duration
}

// FromFields builds a Method from the stored fields of a "signature"
// authentication method. It does not look at the key; Sign does. Its only
// error is an expires_in that is not a non-negative whole number of seconds.
func FromFields(fields map[string]string) (Method, error) {
	m := Method{
		Algorithm:         fields[FieldAlgorithm],
		KeyID:             fields[FieldKeyID],
		Key:               fields[FieldKey],
		CoveredComponents: strings.Fields(fields[FieldCoveredComponents]),
		Label:             fields[FieldLabel],
	}
	if v, ok := fields[FieldExpiresIn]; ok && v != "" {
		secs, err := strconv.ParseInt(v, 10, 32)
		if err != nil || secs < 0 {
			return Method{}, failf("field \"expires_in\" must be a whole number of seconds, got " + quote(v))
		}
		m.ExpiresIn = time.Duration(secs) * time.Second
	}
	return m, nil
}

// params is what one signature carries besides its covered components.
// It is separate from Method so tests can reproduce the RFC vectors, which
// have no alg parameter.
type params struct {
	created   int64
	keyID     string
	alg       string // empty: no alg parameter
	expires   int64  // 0: no expires parameter
	hasExpiry bool
}

func (p params) sfv() *httpsfv.Params {
	sp := httpsfv.NewParams()
	sp.Add("created", p.created)
	if p.keyID != "" {
		sp.Add("keyid", p.keyID)
	}
	if p.alg != "" {
		sp.Add("alg", p.alg)
	}
	if p.hasExpiry {
		sp.Add("expires", p.expires)
	}
	return sp
}

// Sign signs req and adds its headers: Content-Digest (sha-256, whether
// or not content-digest is covered, as docs/vault-forward-authentication.md
// gives every signed request one; it replaces any earlier value, since it
// must describe the body actually sent), and the method's label in the
// Signature-Input and Signature dictionaries, after any signatures already
// there. now gives the created parameter.
//
// Every check (method fields, key, covered headers) happens before req is
// touched: on error nothing is added.
func (m Method) Sign(req *Request, now time.Time) error {
	label := m.Label
	if label == "" {
		label = DefaultLabel
	}
	if !isSFKey(label) {
		return failf("field \"label\" must be lowercase letters, digits, '_', '-', '.' or '*', starting with a letter or '*', got " + quote(label))
	}
	if m.ExpiresIn < 0 {
		return failf("field \"expires_in\" must not be negative")
	}
	if req == nil || req.Header == nil {
		return failf("no request to sign")
	}
	covered := m.CoveredComponents
	if len(covered) == 0 {
		covered = strings.Fields(DefaultCoveredComponents)
	}
	covered, err := normalizeCovered(covered)
	if err != nil {
		return err
	}
	// Resolve the algorithm and key before anything else can fail, so the
	// error a merchant sees for a bad credential is about the credential.
	sign, err := newSigner(m.Algorithm, m.Key)
	if err != nil {
		return err
	}
	p := params{created: now.Unix(), keyID: m.KeyID, alg: m.Algorithm}
	if m.ExpiresIn > 0 {
		p.hasExpiry = true
		p.expires = p.created + int64((m.ExpiresIn+time.Second-1)/time.Second)
	}
	return signWith(req, label, covered, p, sign)
}

// signWith does the work of Sign once the method is resolved.
func signWith(req *Request, label string, covered []string, p params, sign signFunc) error {
	digest := ContentDigest(req.Body)
	override := map[string]string{contentDigestField: digest}
	inputs, err := existingDictionary(req, "Signature-Input")
	if err != nil {
		return err
	}
	sigs, err := existingDictionary(req, "Signature")
	if err != nil {
		return err
	}
	if _, dup := inputs.Get(label); dup {
		return failf("label " + quote(label) + " is already used by an earlier signature on this request; give each signature method its own label")
	}
	if _, dup := sigs.Get(label); dup {
		return failf("label " + quote(label) + " is already used by an earlier signature on this request; give each signature method its own label")
	}
	sp := p.sfv()
	base, _, err := signatureBase(req, covered, sp, override)
	if err != nil {
		return err
	}
	sig, err := sign(base)
	if err != nil {
		return err
	}
	items := make([]httpsfv.Item, len(covered))
	for i, c := range covered {
		items[i] = httpsfv.NewItem(c)
	}
	inputs.Add(label, httpsfv.InnerList{Items: items, Params: sp})
	sigs.Add(label, httpsfv.NewItem(sig))
	inputValue, err := httpsfv.Marshal(inputs)
	if err != nil {
		return failf("Signature-Input does not serialize")
	}
	sigValue, err := httpsfv.Marshal(sigs)
	if err != nil {
		return failf("Signature does not serialize")
	}
	req.Header.Set("Content-Digest", digest)
	req.Header.Set("Signature-Input", inputValue)
	req.Header.Set("Signature", sigValue)
	return nil
}

// existingDictionary parses a Signature or Signature-Input header already on
// the request (an earlier signature method), so a new label is appended to
// it rather than replacing it.
func existingDictionary(req *Request, name string) (*httpsfv.Dictionary, error) {
	values := req.Header.Values(name)
	if len(values) == 0 {
		return httpsfv.NewDictionary(), nil
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return nil, failf("the request already has a " + name + " header that is not a structured dictionary")
	}
	return d, nil
}

// isSFKey reports whether s is a valid RFC 8941 dictionary key.
func isSFKey(s string) bool {
	if s == "" || !(s[0] == '*' || 'a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			return false
		}
	}
	return true
}
