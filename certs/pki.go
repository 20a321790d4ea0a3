package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Lifetimes of the development PKI.
//
// The CA lives two years: long enough that a developer's checkout does not
// need a new trust anchor every few weeks, short enough that a dev CA key
// left on a laptop does not stay useful for a decade. Leaves live 90 days,
// the lifetime public CAs use for automated issuance: it keeps expiry and
// renewal a routine event (WriteDevPKI re-issues within RenewBefore of the
// end) instead of a surprise, and bounds the life of a leaked leaf key.
const (
	CALifetime   = 2 * 365 * 24 * time.Hour
	LeafLifetime = 90 * 24 * time.Hour
	// RenewBefore is how long before expiry WriteDevPKI regenerates.
	RenewBefore = 7 * 24 * time.Hour
	// backdate tolerates small clock differences between the machine that
	// issues and the ones that verify.
	backdate = time.Minute
)

// Authority is a certificate authority: its self-signed certificate and its
// private key. It never prints its key (see Format); the key is reached
// only through PrivateKey.
type Authority struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Leaf is an issued end-entity certificate and its private key. Like
// Authority it never prints its key.
type Leaf struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA creates a self-signed ECDSA P-256 CA named name, valid from now
// (less a minute of clock-skew allowance) for lifetime. It may sign leaves
// only (path length 0).
func NewCA(name string, now time.Time, lifetime time.Duration) (*Authority, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("certs: CA name is empty")
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("certs: CA lifetime %v is not positive", lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"payorch"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse new CA certificate: %w", err)
	}
	return &Authority{Cert: cert, key: key}, nil
}

// LoadAuthority reads a CA certificate and its private key from PEM files.
// Only ECDSA keys are supported (this package issues nothing else).
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	chain, signer, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cert := chain[0]
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("certs: certificate file %s: not a CA certificate", certFile)
	}
	key, ok := signer.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("certs: key file %s: CA key must be ECDSA, got %T", keyFile, signer)
	}
	return &Authority{Cert: cert, key: key}, nil
}

// PrivateKey returns the CA's private key.
func (a *Authority) PrivateKey() *ecdsa.PrivateKey { return a.key }

// CertPEM returns the CA certificate as a PEM "CERTIFICATE" block.
func (a *Authority) CertPEM() []byte { return EncodeCertPEM(a.Cert) }

// KeyPEM returns the CA key as a PKCS#8 PEM "PRIVATE KEY" block.
func (a *Authority) KeyPEM() ([]byte, error) { return EncodeKeyPEM(a.key) }

// Pool returns a certificate pool holding only this CA.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.Cert)
	return p
}

// IssueServer issues a TLS server certificate (ExtKeyUsage ServerAuth) with
// Common Name name. Each entry of hosts becomes a SAN: an IP address becomes
// an IP SAN, an entry containing "://" a URI SAN (for example
// SPIFFEID("vault-proxy").String()), anything else a DNS SAN. hosts must not
// be empty: modern clients ignore the Common Name.
func (a *Authority) IssueServer(name string, hosts []string, now time.Time, lifetime time.Duration) (*Leaf, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("certs: server certificate %q needs at least one host", name)
	}
	tmpl := &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		switch {
		case h == "":
			return nil, fmt.Errorf("certs: server certificate %q: empty host", name)
		case net.ParseIP(h) != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(h))
		case strings.Contains(h, "://"):
			u, err := url.Parse(h)
			if err != nil {
				return nil, fmt.Errorf("certs: server certificate %q: URI SAN %q: %w", name, h, err)
			}
			tmpl.URIs = append(tmpl.URIs, u)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return a.issue(name, tmpl, now, lifetime)
}

// IssueClient issues a TLS client certificate (ExtKeyUsage ClientAuth) for
// the service name: Common Name name and the single URI SAN SPIFFEID(name),
// so that Identity(cert) == name.
func (a *Authority) IssueClient(name string, now time.Time, lifetime time.Duration) (*Leaf, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("certs: client certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{SPIFFEID(name)},
	}
	return a.issue(name, tmpl, now, lifetime)
}

func (a *Authority) issue(name string, tmpl *x509.Certificate, now time.Time, lifetime time.Duration) (*Leaf, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("certs: certificate name is empty")
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("certs: certificate %q: lifetime %v is not positive", name, lifetime)
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(a.Cert.NotAfter) {
		return nil, fmt.Errorf("certs: certificate %q would expire %s, after its CA (%s)",
			name, notAfter.UTC().Format(time.RFC3339), a.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate key for %q: %w", name, err)
	}
	tmpl.SerialNumber = newSerial()
	tmpl.Subject = pkix.Name{CommonName: name, Organization: []string{"payorch"}}
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = notAfter
	// ECDSA keys sign; they never encipher keys, so no KeyEncipherment.
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("certs: create certificate %q: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse new certificate %q: %w", name, err)
	}
	return &Leaf{Cert: cert, key: key}, nil
}

// PrivateKey returns the leaf's private key.
func (l *Leaf) PrivateKey() *ecdsa.PrivateKey { return l.key }

// CertPEM returns the leaf certificate as a PEM "CERTIFICATE" block. The
// leaf is signed directly by the root, so there is no intermediate to append.
func (l *Leaf) CertPEM() []byte { return EncodeCertPEM(l.Cert) }

// KeyPEM returns the leaf key as a PKCS#8 PEM "PRIVATE KEY" block.
func (l *Leaf) KeyPEM() ([]byte, error) { return EncodeKeyPEM(l.key) }

// TLSCertificate returns the leaf as a tls.Certificate (Leaf field set).
func (l *Leaf) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.key, Leaf: l.Cert}
}

// EncodeCertPEM encodes a certificate as a PEM "CERTIFICATE" block.
func EncodeCertPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// EncodeKeyPEM encodes a private key as a PKCS#8 PEM "PRIVATE KEY" block.
func EncodeKeyPEM(key crypto.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newSerial returns a random positive 128-bit serial number (RFC 5280 allows
// up to 20 octets; CA/Browser Forum asks for at least 64 bits of entropy).
func newSerial() *big.Int {
	b := make([]byte, 16)
	for {
		_, _ = rand.Read(b) // crypto/rand.Read never returns an error since Go 1.24.
		if n := new(big.Int).SetBytes(b); n.Sign() > 0 {
			return n
		}
	}
}

// loadPair reads a certificate chain and its matching private key. Errors
// name the file at fault and never include key material.
func loadPair(certFile, keyFile string) ([]*x509.Certificate, crypto.Signer, error) {
	chain, err := readCertsFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	key, err := readKeyFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(chain[0].PublicKey) {
		return nil, nil, fmt.Errorf("certs: key file %s does not match the certificate in %s", keyFile, certFile)
	}
	return chain, key, nil
}

// readCertsFile parses every CERTIFICATE block of a PEM file, leaf first.
func readCertsFile(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: read certificate file: %w", err)
	}
	var chain []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			if strings.Contains(block.Type, "PRIVATE KEY") {
				return nil, fmt.Errorf("certs: certificate file %s holds a private key, not a certificate", path)
			}
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: certificate file %s: %w", path, err)
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("certs: certificate file %s: no PEM CERTIFICATE block", path)
	}
	return chain, nil
}

// readKeyFile parses the first private key block of a PEM file: PKCS#8
// ("PRIVATE KEY"), SEC 1 ("EC PRIVATE KEY") or PKCS#1 ("RSA PRIVATE KEY").
// Errors name the file and the block type, never the file's contents.
func readKeyFile(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: read key file: %w", err)
	}
	var seen []string
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		var key any
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			seen = append(seen, block.Type)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("certs: key file %s: cannot parse %s block: %w", path, block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("certs: key file %s: unsupported key type %T", path, key)
		}
		return signer, nil
	}
	if len(seen) > 0 {
		return nil, fmt.Errorf("certs: key file %s: no private key PEM block (found %s)", path, strings.Join(seen, ", "))
	}
	return nil, fmt.Errorf("certs: key file %s: no PEM private key block", path)
}

// describe is the redacted, printable form of a certificate holder.
func describe(kind string, c *x509.Certificate) string {
	if c == nil {
		return kind + "{<nil>}"
	}
	return fmt.Sprintf("%s{CN=%s serial=%x notAfter=%s key=REDACTED}",
		kind, c.Subject.CommonName, c.SerialNumber, c.NotAfter.UTC().Format(time.RFC3339))
}

// String, GoString, Format and LogValue keep the private key out of every
// fmt verb and slog handler.

func (a Authority) String() string               { return describe("certs.Authority", a.Cert) }
func (a Authority) GoString() string             { return a.String() }
func (a Authority) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(a.String())) }
func (a Authority) LogValue() slog.Value         { return slog.StringValue(a.String()) }
func (a Authority) MarshalText() ([]byte, error) { return []byte(a.String()), nil }
func (l Leaf) String() string                    { return describe("certs.Leaf", l.Cert) }
func (l Leaf) GoString() string                  { return l.String() }
func (l Leaf) Format(f fmt.State, _ rune)        { _, _ = f.Write([]byte(l.String())) }
func (l Leaf) LogValue() slog.Value              { return slog.StringValue(l.String()) }
func (l Leaf) MarshalText() ([]byte, error)      { return []byte(l.String()), nil }
