package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// TrustDomain is the SPIFFE-style trust domain of the project's service
// identities. It is a name, not a DNS zone that has to resolve.
const TrustDomain = "payorch.local"

// Service names used by the development PKI and as client identities.
const (
	VaultProxyName = "vault-proxy"
	CoreAPIName    = "core-api"
)

// SPIFFEID returns the URI identity of a service: spiffe://payorch.local/<name>.
func SPIFFEID(name string) *url.URL {
	return &url.URL{Scheme: "spiffe", Host: TrustDomain, Path: "/" + name}
}

// Identity returns the service name a certificate speaks for.
//
// The rule, chosen so that a certificate has exactly one identity:
//   - if the certificate has URI SANs, it must have exactly one, of the form
//     spiffe://payorch.local/<name>, and its Common Name must be empty or
//     equal to <name>; the identity is <name>;
//   - otherwise the identity is the Common Name, which must not be empty.
//
// A certificate that breaks the rule (two URI SANs, another trust domain, a
// Common Name that disagrees with its URI) has no identity and is refused.
func Identity(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", errors.New("certs: no certificate")
	}
	cn := cert.Subject.CommonName
	switch len(cert.URIs) {
	case 0:
		if err := validName(cn); err != nil {
			return "", fmt.Errorf("certs: certificate identity (Common Name): %w", err)
		}
		return cn, nil
	case 1:
		name, err := nameFromURI(cert.URIs[0])
		if err != nil {
			return "", err
		}
		if cn != "" && cn != name {
			return "", fmt.Errorf("certs: certificate Common Name %q disagrees with its URI SAN %q", cn, cert.URIs[0])
		}
		return name, nil
	default:
		return "", fmt.Errorf("certs: certificate has %d URI SANs; an identity needs exactly one", len(cert.URIs))
	}
}

// PeerIdentity returns the identity (see Identity) of the verified peer of a
// TLS connection, for example r.TLS in an HTTP handler behind a listener
// built by ServerTLSConfig with a client CA. It fails if the peer presented
// no certificate or the certificate was not verified against a CA.
func PeerIdentity(cs *tls.ConnectionState) (string, error) {
	if cs == nil {
		return "", errors.New("certs: not a TLS connection")
	}
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return "", errors.New("certs: peer presented no verified certificate")
	}
	return Identity(cs.PeerCertificates[0])
}

func nameFromURI(u *url.URL) (string, error) {
	if u.Scheme != "spiffe" || u.Host != TrustDomain || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("certs: URI SAN %q is not an identity in spiffe://%s/", u, TrustDomain)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if err := validName(name); err != nil {
		return "", fmt.Errorf("certs: URI SAN %q: %w", u, err)
	}
	return name, nil
}

// normalizeAllowed turns an allow-list whose entries are service names or
// spiffe://payorch.local/<name> URIs into a set of names. A malformed entry
// is an error: a typo in an allow-list must not silently deny or allow.
func normalizeAllowed(allowed []string) (map[string]bool, error) {
	set := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		name := a
		if strings.Contains(a, "://") {
			u, err := url.Parse(a)
			if err != nil {
				return nil, fmt.Errorf("certs: allowed client %q: %w", a, err)
			}
			if name, err = nameFromURI(u); err != nil {
				return nil, fmt.Errorf("certs: allowed client %q: %w", a, err)
			}
		} else if err := validName(a); err != nil {
			return nil, fmt.Errorf("certs: allowed client %q: %w", a, err)
		}
		set[name] = true
	}
	return set, nil
}

// validName accepts a single SPIFFE path segment: letters, digits, '.', '-'
// and '_', not "." or "..".
func validName(name string) error {
	if name == "" {
		return errors.New("empty service name")
	}
	if name == "." || name == ".." {
		return fmt.Errorf("service name %q is not allowed", name)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		default:
			return fmt.Errorf("service name %q has a character outside [A-Za-z0-9._-]", name)
		}
	}
	return nil
}
