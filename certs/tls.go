package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// The TLS policy, as data. Every listener and client of the project starts
// from BaseTLSConfig; nothing else sets versions, suites or curves.
var (
	// minVersion: TLS 1.2 is the floor (PCI DSS accepts it; some processors'
	// clients still need it). TLS 1.3 is preferred simply because Go
	// negotiates the highest version both sides support.
	minVersion uint16 = tls.VersionTLS12

	// tls12CipherSuites: ECDHE (forward secrecy) with AEAD only, ECDSA
	// before RSA; no CBC, no static-RSA key exchange, no 3DES. TLS 1.3
	// suites are not configurable in Go and are all AEAD.
	tls12CipherSuites = []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}

	// curvePreferences: the hybrid post-quantum X25519MLKEM768 first (TLS
	// 1.3 only), then X25519, P-256 and P-384. Listed explicitly so the
	// policy is reviewable in one place; P-521 is left out (slow, no gain).
	curvePreferences = []tls.CurveID{
		tls.X25519MLKEM768,
		tls.X25519,
		tls.CurveP256,
		tls.CurveP384,
	}
)

// BaseTLSConfig returns a new tls.Config carrying only the project's TLS
// policy (minimum version, TLS 1.2 cipher suites, key-exchange groups). Use
// it for any TLS endpoint this package does not build itself, for example an
// outbound client to a third party, so the policy stays in one place.
func BaseTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:       minVersion,
		CipherSuites:     append([]uint16(nil), tls12CipherSuites...),
		CurvePreferences: append([]tls.CurveID(nil), curvePreferences...),
	}
}

// KeyPair holds a certificate and its key loaded from two PEM files. It is
// safe for concurrent use: handshakes read the current pair through
// GetCertificate / GetClientCertificate, and Reload swaps in a new one, so a
// renewed certificate is served without restarting the listener. It never
// prints its key.
type KeyPair struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadKeyPair reads certFile (the leaf, optionally followed by
// intermediates) and keyFile (PEM PKCS#8, SEC 1 or PKCS#1). It fails if the
// files cannot be read or parsed, if the key does not match the certificate,
// or if the certificate has expired. Errors name the file at fault and never
// contain key material.
func LoadKeyPair(certFile, keyFile string) (*KeyPair, error) {
	kp := &KeyPair{certFile: certFile, keyFile: keyFile}
	if err := kp.Reload(); err != nil {
		return nil, err
	}
	return kp, nil
}

// Reload re-reads the files given to LoadKeyPair. On error the pair in use
// is kept and the error returned.
func (k *KeyPair) Reload() error {
	chain, key, err := loadPair(k.certFile, k.keyFile)
	if err != nil {
		return err
	}
	if now := time.Now(); now.After(chain[0].NotAfter) {
		return fmt.Errorf("certs: certificate in %s expired at %s",
			k.certFile, chain[0].NotAfter.UTC().Format(time.RFC3339))
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, x := range chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	k.cur.Store(c)
	return nil
}

// Leaf returns the parsed leaf certificate currently in use (nil for a
// KeyPair not made by LoadKeyPair).
func (k *KeyPair) Leaf() *x509.Certificate {
	if c := k.cur.Load(); c != nil {
		return c.Leaf
	}
	return nil
}

var errNoKeyPair = errors.New("certs: no certificate loaded (use LoadKeyPair)")

// GetCertificate is a tls.Config.GetCertificate returning the current pair.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := k.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errNoKeyPair
}

// GetClientCertificate is a tls.Config.GetClientCertificate returning the
// current pair.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c := k.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errNoKeyPair
}

func (k *KeyPair) String() string {
	if k == nil || k.Leaf() == nil {
		return "certs.KeyPair{<nil>}"
	}
	return describe("certs.KeyPair", k.Leaf())
}
func (k *KeyPair) GoString() string             { return k.String() }
func (k *KeyPair) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(k.String())) }
func (k *KeyPair) LogValue() slog.Value         { return slog.StringValue(k.String()) }
func (k *KeyPair) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// LoadCerts reads the PEM certificates of caFile (at least one), for a
// caller that builds more than one pool from them.
func LoadCerts(caFile string) ([]*x509.Certificate, error) { return readCertsFile(caFile) }

// LoadCertPool reads a PEM file of one or more CA certificates into a new
// pool (system roots are not included).
func LoadCertPool(caFile string) (*x509.CertPool, error) {
	cas, err := readCertsFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	return pool, nil
}

// ServerTLSConfig builds the tls.Config of a server listener.
//
// With clientCAFile == "" it is a plain TLS server (allowedClients must then
// be empty). With clientCAFile set, it requires a client certificate, verifies
// it against the CA(s) in that file (chain, validity, ExtKeyUsage ClientAuth)
// and then accepts the connection only if the certificate's Identity is in
// allowedClients, whose entries are service names ("core-api") or
// spiffe://payorch.local/<name> URIs. allowedClients must not be empty then:
// an allow-list that admits nobody is a misconfiguration, not a policy.
//
// The certificate is served through a KeyPair; to reload it at run time use
// LoadKeyPair and ServerTLSConfigFrom instead.
func ServerTLSConfig(certFile, keyFile, clientCAFile string, allowedClients []string) (*tls.Config, error) {
	var pool *x509.CertPool
	if clientCAFile != "" {
		p, err := LoadCertPool(clientCAFile)
		if err != nil {
			return nil, err
		}
		pool = p
	} else if len(allowedClients) > 0 {
		return nil, errors.New("certs: allowedClients given without a client CA file; client identities would be unverified")
	}
	kp, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return ServerTLSConfigFrom(kp, pool, allowedClients)
}

// ServerTLSConfigFrom is ServerTLSConfig with an already loaded KeyPair and
// client CA pool (nil for no client authentication).
func ServerTLSConfigFrom(kp *KeyPair, clientCAs *x509.CertPool, allowedClients []string) (*tls.Config, error) {
	if kp == nil || kp.Leaf() == nil {
		return nil, errors.New("certs: server key pair is nil or not loaded")
	}
	cfg := BaseTLSConfig()
	cfg.GetCertificate = kp.GetCertificate
	if clientCAs == nil {
		if len(allowedClients) > 0 {
			return nil, errors.New("certs: allowedClients given without client CAs; client identities would be unverified")
		}
		return cfg, nil
	}
	if len(allowedClients) == 0 {
		return nil, errors.New("certs: client certificates required but allowedClients is empty")
	}
	allowed, err := normalizeAllowed(allowedClients)
	if err != nil {
		return nil, err
	}
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = clientCAs
	// VerifyConnection runs after chain verification on every handshake,
	// resumed ones included (VerifyPeerCertificate is skipped on resumption).
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
			return errors.New("certs: client certificate not verified")
		}
		id, err := Identity(cs.PeerCertificates[0])
		if err != nil {
			return err
		}
		if !allowed[id] {
			return fmt.Errorf("certs: client identity %q is not allowed", id)
		}
		return nil
	}
	return cfg, nil
}

// PublicServerTLSConfig builds the tls.Config of a public (server-only TLS)
// listener such as vault-proxy's merchant-facing one.
func PublicServerTLSConfig(certFile, keyFile string) (*tls.Config, error) {
	return ServerTLSConfig(certFile, keyFile, "", nil)
}

// ClientTLSConfig builds the tls.Config of an mTLS client: it presents the
// certificate in certFile/keyFile and trusts only the CA(s) in caFile (not
// the system roots). The server name is checked as usual against the address
// dialled (or ServerName, if the caller sets it).
func ClientTLSConfig(certFile, keyFile, caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, errors.New("certs: client needs a CA file to verify the server")
	}
	roots, err := LoadCertPool(caFile)
	if err != nil {
		return nil, err
	}
	kp, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return ClientTLSConfigFrom(kp, roots)
}

// ClientTLSConfigFrom is ClientTLSConfig with an already loaded KeyPair and
// root pool.
func ClientTLSConfigFrom(kp *KeyPair, roots *x509.CertPool) (*tls.Config, error) {
	if kp == nil || kp.Leaf() == nil {
		return nil, errors.New("certs: client key pair is nil or not loaded")
	}
	if roots == nil {
		return nil, errors.New("certs: client root pool is nil")
	}
	cfg := BaseTLSConfig()
	cfg.RootCAs = roots
	cfg.GetClientCertificate = kp.GetClientCertificate
	return cfg, nil
}
