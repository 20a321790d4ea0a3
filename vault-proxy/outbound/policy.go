package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/netip"
	"time"
)

// Defaults applied by New for zero Policy fields.
const (
	DefaultMaxResponseBytes = 10 << 20
	DefaultMaxRequestBytes  = 10 << 20
	DefaultTimeout          = 30 * time.Second // x-vault-forward-timeout's default (docs/vault-forward.md)
	DefaultMaxTimeout       = 60 * time.Second // x-vault-forward-timeout's maximum
	DefaultMaxConnsPerHost  = 512
	DefaultMaxTLSClients    = 64
)

// Policy is what a Client may reach and how. It is fixed for the life of a
// Client; per-call narrowing goes in CallOptions.
type Policy struct {
	// AllowLoopback admits 127.0.0.0/8 and ::1 (nothing else: not
	// 0.0.0.0/8, not ::, not an IPv4 embedded in a translation prefix) for
	// destinations explicitly listed in AllowedHosts or
	// CallOptions.AllowedHosts. The caller sets it only for a development
	// or sandbox instance started with VAULT_FORWARD_ALLOW_LOOPBACK=true.
	AllowLoopback bool

	// AllowedHosts ("host" or "host:port"; see NormalizeHost) restricts
	// every call of the Client. An entry without a port matches only the
	// scheme's default port. Empty means any public host (sandbox), unless
	// RequireAllowedHosts is set.
	AllowedHosts []string

	// RequireAllowedHosts (production) refuses a destination that is not
	// matched by a non-empty allow-list: AllowedHosts or the call's
	// CallOptions.AllowedHosts (the forwarding config's hosts). With it an
	// empty list refuses everything instead of meaning "any public host".
	RequireAllowedHosts bool

	// RequireHTTPS (production) refuses http:// destinations.
	RequireHTTPS bool

	// ExtraRootCAs (VAULT_FORWARD_EXTRA_CA_FILE) is trusted for every call,
	// on top of the system roots.
	ExtraRootCAs *x509.CertPool

	// MaxResponseBytes caps response bodies (default 10 MiB); a larger one
	// fails with CodeResponseTooLarge.
	MaxResponseBytes int
	// MaxRequestBytes caps request bodies (default 10 MiB); a larger one
	// fails with CodeRequestTooLarge before anything is sent.
	MaxRequestBytes int

	// DefaultTimeout (default 30s) applies when CallOptions.Timeout is
	// zero; MaxTimeout (default 60s) caps CallOptions.Timeout and is the
	// client's read and write timeout.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration

	// MaxConnsPerHost (default 512) caps connections per destination and
	// client identity. A call that finds them all busy waits for a free
	// one until its deadline.
	MaxConnsPerHost int

	// MaxTLSClients (default 64) bounds the cache of per-identity clients
	// (one per distinct client certificate and extra root pool). The least
	// recently used is dropped when it is full.
	MaxTLSClients int

	// Resolver resolves destination names at connect time. Nil means
	// net.DefaultResolver (/etc/hosts, then DNS). Whatever it answers,
	// every address is checked; tests inject a stub.
	Resolver Resolver
}

// Resolver is the part of *net.Resolver the dialer uses. host is the
// canonical name, without a trailing dot.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CallOptions are per call.
type CallOptions struct {
	// Timeout bounds the whole call: resolution, connect, TLS, writing the
	// request and reading the response. Zero means Policy.DefaultTimeout;
	// more than Policy.MaxTimeout is cut to it. A deadline on the context
	// given to Do, if earlier, wins.
	Timeout time.Duration

	// AllowedHosts is the forwarding config's host list. When non-empty
	// the destination must match one of its entries (as well as
	// Policy.AllowedHosts). Entries are matched as NormalizeHost would
	// normalise them; an invalid entry matches nothing.
	AllowedHosts []string

	// ClientCertificate is presented to the destination (mtls
	// authentication method). Its private key must match its leaf.
	ClientCertificate *tls.Certificate

	// ExtraRootCAs (the mtls method's ca_certificate) is trusted for this
	// call on top of the system roots and Policy.ExtraRootCAs. Reuse the
	// same pool for the same method: clients are cached per pool.
	ExtraRootCAs *x509.CertPool
}
