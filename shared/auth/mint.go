package auth

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/payorch/shared/requestid"
)

// Mint returns a token signed by priv (P-521) with kid = Thumbprint of its
// public key, iss = issuer, iat = nbf = now (whole seconds; the zero time
// means time.Now), exp = now + lifetime, a random UUID v4 jti, the given
// scopes (each ValidScope, at least one) and, when merchantAccountIDs is
// non-empty, a merchant_account_ids claim naming the accounts the token
// may act in: []string{AllMerchantAccounts} for every account, which is
// never implied. Without accounts the token has no claim and acts in
// DefaultMerchantAccount only.
//
// Mint does not know the verifier's MaxLifetime: a lifetime beyond it gives
// a token every Verifier rejects.
func Mint(priv *ecdsa.PrivateKey, issuer string, scopes []string, lifetime time.Duration, now time.Time, merchantAccountIDs []string) (string, error) {
	if priv == nil {
		return "", errors.New("auth: nil private key")
	}
	kid, err := Thumbprint(&priv.PublicKey)
	if err != nil {
		return "", err
	}
	if issuer == "" {
		return "", errors.New("auth: empty issuer")
	}
	if len(scopes) == 0 {
		return "", errors.New("auth: at least one scope is required")
	}
	for _, s := range scopes {
		if !ValidScope(s) {
			return "", fmt.Errorf("auth: invalid scope %q (want <resource>.read or <resource>.write)", s)
		}
	}
	if lifetime < time.Second {
		return "", errors.New("auth: lifetime must be at least one second")
	}
	if slices.Contains(merchantAccountIDs, "") {
		return "", errors.New("auth: empty merchant account id")
	}
	if len(merchantAccountIDs) > 1 && slices.Contains(merchantAccountIDs, AllMerchantAccounts) {
		return "", errors.New(`auth: "*" (every merchant account) cannot be listed with other ids`)
	}
	if now.IsZero() {
		now = time.Now()
	}
	now = now.Truncate(time.Second)

	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(lifetime)),
			ID:        requestid.Generate(), // unique and never card-number shaped; signed, so it need not be secret
		},
		Scopes: slices.Clone(scopes),
	}
	if len(merchantAccountIDs) > 0 {
		ids := slices.Clone(merchantAccountIDs)
		c.MerchantAccountIDs = &ids
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES512, c)
	t.Header["kid"] = kid
	signed, err := t.SignedString(priv)
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return signed, nil
}

// File names IssueDevToken uses inside its key directory.
const (
	SigningKeyFile = "signing-key.pem" // PKCS #8 private key, mode 0600
	PublicKeysFile = "public-keys.pem" // PKIX public keys, for LoadKeySetFile
)

// IssueDevToken mints a token for local use, creating the key pair first if
// needed: keyDir (created 0700) holds SigningKeyFile and PublicKeysFile. An
// existing signing key is reused, and its public key is appended to
// PublicKeysFile if that does not hold it yet. A signing key readable by
// group or others is refused, as ssh does. The instance then verifies with
// LoadKeySetFile(filepath.Join(keyDir, PublicKeysFile), issuer). This is
// what `core-api token` wraps; see Mint for the token and its merchant
// accounts.
func IssueDevToken(keyDir, issuer string, scopes []string, lifetime time.Duration, now time.Time, merchantAccountIDs []string) (string, error) {
	if keyDir == "" {
		return "", errors.New("auth: empty key directory")
	}
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	priv, err := loadOrCreateSigningKey(filepath.Join(keyDir, SigningKeyFile))
	if err != nil {
		return "", err
	}
	if err := ensurePublicKey(filepath.Join(keyDir, PublicKeysFile), &priv.PublicKey); err != nil {
		return "", err
	}
	return Mint(priv, issuer, scopes, lifetime, now, merchantAccountIDs)
}

// loadOrCreateSigningKey reads the key at path, or generates one and
// publishes it atomically (a complete file appears or none), so two
// concurrent first runs end up sharing one key.
func loadOrCreateSigningKey(path string) (*ecdsa.PrivateKey, error) {
	priv, err := readSigningKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return priv, err
	}
	priv, err = GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("auth: generate key: %w", err)
	}
	data, err := EncodePrivateKeyPEM(priv)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".signing-key-*.tmp") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("auth: write signing key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("auth: write signing key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("auth: write signing key: %w", err)
	}
	// Link fails if path exists: another run created the key meanwhile.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readSigningKey(path)
		}
		return nil, fmt.Errorf("auth: %w", err)
	}
	return priv, nil
}

func readSigningKey(path string) (*ecdsa.PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err // fs.ErrNotExist is the caller's cue to create one
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("auth: %s has mode %04o; a signing key must not be readable by group or others (chmod 600)", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	priv, err := ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return priv, nil
}

// ensurePublicKey adds pub to the PEM file at path unless it is there. The
// file is replaced atomically (the old content plus the new block), so a
// reader never sees half a block and racing first runs, which share one
// signing key, write the same content.
func ensurePublicKey(path string, pub *ecdsa.PublicKey) error {
	kid, err := Thumbprint(pub)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		keys, err := ParsePublicKeysPEM(data)
		if err != nil {
			return fmt.Errorf("%w (in %s)", err, path)
		}
		for _, k := range keys {
			if t, _ := Thumbprint(k); t == kid {
				return nil
			}
		}
		if data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("auth: %w", err)
	}
	block, err := EncodePublicKeyPEM(pub)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".public-keys-*.tmp")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(data, block...))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	return nil
}

// LoadSigningKeyDir returns the signing key of keyDir, laid out as
// IssueDevToken's (SigningKeyFile, PublicKeysFile): created on first use,
// and its public key appended to PublicKeysFile if that does not hold it
// yet. Rotating the key is then replacing SigningKeyFile: the previous
// public key stays in PublicKeysFile, so tokens it signed verify until
// they expire.
func LoadSigningKeyDir(keyDir string) (*ecdsa.PrivateKey, error) {
	if keyDir == "" {
		return nil, errors.New("auth: empty key directory")
	}
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	priv, err := loadOrCreateSigningKey(filepath.Join(keyDir, SigningKeyFile))
	if err != nil {
		return nil, err
	}
	if err := ensurePublicKey(filepath.Join(keyDir, PublicKeysFile), &priv.PublicKey); err != nil {
		return nil, err
	}
	return priv, nil
}
