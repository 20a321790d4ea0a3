package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// coordLen is the length of a P-521 field element: ceil(521/8).
const coordLen = 66

// PEM block types.
const (
	pemPublicKey    = "PUBLIC KEY"     // PKIX, RFC 5280
	pemPrivateKey   = "PRIVATE KEY"    // PKCS #8, RFC 5208
	pemECPrivateKey = "EC PRIVATE KEY" // SEC 1, RFC 5915 (what openssl ecparam writes)
)

// GenerateKey returns a new P-521 signing key.
func GenerateKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
}

// checkCurve reports an error unless pub is a P-521 key.
func checkCurve(pub *ecdsa.PublicKey) error {
	if pub == nil || pub.Curve == nil {
		return errors.New("auth: nil public key")
	}
	if pub.Curve != elliptic.P521() {
		return fmt.Errorf("auth: key is on curve %s; only P-521 (ES512) keys are accepted", pub.Curve.Params().Name)
	}
	return nil
}

// Thumbprint returns the RFC 7638 JWK thumbprint of a P-521 public key: the
// unpadded base64url SHA-256 of
// {"crv":"P-521","kty":"EC","x":"...","y":"..."}, the required members in
// lexicographic order without whitespace, x and y being the unpadded
// base64url of the 66-byte big-endian coordinates. It is the kid of every
// token the key signs.
func Thumbprint(pub *ecdsa.PublicKey) (string, error) {
	in, err := thumbprintInput(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(in)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// thumbprintInput is the canonical JWK that Thumbprint hashes.
func thumbprintInput(pub *ecdsa.PublicKey) ([]byte, error) {
	if err := checkCurve(pub); err != nil {
		return nil, err
	}
	raw, err := pub.Bytes() // 0x04 || X || Y, each coordLen bytes
	if err != nil {
		return nil, fmt.Errorf("auth: invalid public key: %w", err)
	}
	if len(raw) != 1+2*coordLen {
		return nil, fmt.Errorf("auth: unexpected P-521 point length %d", len(raw))
	}
	enc := base64.RawURLEncoding
	var b bytes.Buffer
	b.WriteString(`{"crv":"P-521","kty":"EC","x":"`)
	b.WriteString(enc.EncodeToString(raw[1 : 1+coordLen]))
	b.WriteString(`","y":"`)
	b.WriteString(enc.EncodeToString(raw[1+coordLen:]))
	b.WriteString(`"}`)
	return b.Bytes(), nil
}

// EncodePrivateKeyPEM encodes a P-521 private key as a PKCS #8
// "PRIVATE KEY" PEM block. Write it with mode 0600.
func EncodePrivateKeyPEM(priv *ecdsa.PrivateKey) ([]byte, error) {
	if priv == nil {
		return nil, errors.New("auth: nil private key")
	}
	if err := checkCurve(&priv.PublicKey); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("auth: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// EncodePublicKeyPEM encodes a P-521 public key as a PKIX "PUBLIC KEY" PEM
// block, the form KeySet files hold.
func EncodePublicKeyPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	if err := checkCurve(pub); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("auth: encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// ParsePrivateKeyPEM parses the first PEM block of data as a P-521 private
// key, PKCS #8 ("PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY").
func ParsePrivateKeyPEM(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("auth: no PEM block in private key data")
	}
	var key any
	var err error
	switch block.Type {
	case pemPrivateKey:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case pemECPrivateKey:
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("auth: PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: parse private key: %w", err)
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("auth: private key is %T; only ECDSA P-521 keys are accepted", key)
	}
	if err := checkCurve(&priv.PublicKey); err != nil {
		return nil, err
	}
	return priv, nil
}

// ParsePublicKeysPEM parses every PEM block in data as a PKIX "PUBLIC KEY"
// holding a P-521 key. Text outside blocks (comments) is ignored; any other
// block type, another algorithm or curve, or no block at all is an error.
func ParsePublicKeysPEM(data []byte) ([]*ecdsa.PublicKey, error) {
	var keys []*ecdsa.PublicKey
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != pemPublicKey {
			if strings.Contains(block.Type, "PRIVATE") {
				return nil, fmt.Errorf("auth: PEM block %d is a private key; a public key file must hold only %q blocks", n, pemPublicKey)
			}
			return nil, fmt.Errorf("auth: PEM block %d is %q, want %q", n, block.Type, pemPublicKey)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("auth: PEM block %d: %w", n, err)
		}
		pub, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("auth: PEM block %d is a %T key; only ECDSA P-521 keys are accepted", n, key)
		}
		if err := checkCurve(pub); err != nil {
			return nil, fmt.Errorf("auth: PEM block %d: %w", n, err)
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, errors.New("auth: no PEM public key found")
	}
	return keys, nil
}

// Key is a registered verification key.
type Key struct {
	ID     string // RFC 7638 thumbprint, the kid of the tokens it signs
	Issuer string // the iss its tokens must carry
	Public *ecdsa.PublicKey
}

// KeySet holds the public keys an instance accepts, by kid. It is safe for
// concurrent use. Keys can be added but not removed: to revoke one, build a
// new KeySet and give it to Verifier.SetKeys.
type KeySet struct {
	mu   sync.RWMutex
	keys map[string]Key
}

// NewKeySet returns an empty KeySet.
func NewKeySet() *KeySet {
	return &KeySet{keys: make(map[string]Key)}
}

// Add registers pub under issuer and returns its kid. Adding the same key
// again with the same issuer is a no-op; with another issuer it is an
// error, since a key's tokens can carry only one iss.
func (ks *KeySet) Add(pub *ecdsa.PublicKey, issuer string) (string, error) {
	if issuer == "" {
		return "", errors.New("auth: empty issuer")
	}
	kid, err := Thumbprint(pub)
	if err != nil {
		return "", err
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if old, ok := ks.keys[kid]; ok {
		if old.Issuer != issuer {
			return "", fmt.Errorf("auth: key %s is already registered for issuer %q", kid, old.Issuer)
		}
		return kid, nil
	}
	ks.keys[kid] = Key{ID: kid, Issuer: issuer, Public: pub}
	return kid, nil
}

// AddPEM registers every public key in pemData (see ParsePublicKeysPEM)
// under issuer and returns their kids. On error nothing is added.
func (ks *KeySet) AddPEM(pemData []byte, issuer string) ([]string, error) {
	keys, err := ParsePublicKeysPEM(pemData)
	if err != nil {
		return nil, err
	}
	if issuer == "" {
		return nil, errors.New("auth: empty issuer")
	}
	ks.mu.RLock()
	for _, pub := range keys {
		kid, _ := Thumbprint(pub) // cannot fail: the curve was checked
		if old, ok := ks.keys[kid]; ok && old.Issuer != issuer {
			ks.mu.RUnlock()
			return nil, fmt.Errorf("auth: key %s is already registered for issuer %q", kid, old.Issuer)
		}
	}
	ks.mu.RUnlock()
	kids := make([]string, 0, len(keys))
	for _, pub := range keys {
		kid, err := ks.Add(pub, issuer)
		if err != nil {
			return nil, err
		}
		kids = append(kids, kid)
	}
	return kids, nil
}

// AddFile registers the public keys of a PEM file under issuer.
func (ks *KeySet) AddFile(path, issuer string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: read public keys: %w", err)
	}
	kids, err := ks.AddPEM(data, issuer)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return kids, nil
}

// Lookup returns the key with the given kid.
func (ks *KeySet) Lookup(kid string) (Key, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	k, ok := ks.keys[kid]
	return k, ok
}

// IDs returns the kids of all keys, sorted.
func (ks *KeySet) IDs() []string {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	ids := make([]string, 0, len(ks.keys))
	for id := range ks.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Len returns the number of keys.
func (ks *KeySet) Len() int {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return len(ks.keys)
}

// LoadKeySetFile returns a KeySet of the P-521 public keys in a PEM file,
// all registered under issuer.
func LoadKeySetFile(path, issuer string) (*KeySet, error) {
	ks := NewKeySet()
	if _, err := ks.AddFile(path, issuer); err != nil {
		return nil, err
	}
	return ks, nil
}

// LoadKeySetDir returns a KeySet of the public keys in every *.pem file
// directly inside dir (not in subdirectories), all registered under issuer.
// A directory without any key is an error: a verifier that accepts nothing
// is a misconfiguration, not a policy.
func LoadKeySetDir(dir, issuer string) (*KeySet, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.pem"))
	if err != nil {
		return nil, fmt.Errorf("auth: list %s: %w", dir, err)
	}
	sort.Strings(paths)
	ks := NewKeySet()
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if _, err := ks.AddFile(p, issuer); err != nil {
			return nil, err
		}
	}
	if ks.Len() == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		return nil, fmt.Errorf("auth: no *.pem public key file in %s", dir)
	}
	return ks, nil
}
