// Package processordest maps the connector names core-api may name in a
// detokenized call to base URLs configured in vault-proxy. core-api never
// supplies a host: a compromised core can reach only what is listed here.
package processordest

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/payorch/certs"
	"github.com/valyala/fasthttp"
)

// Set is the configured destinations and the client that reaches them.
type Set struct {
	bases  map[string]*url.URL
	client *fasthttp.Client
}

// Parse reads "name=https://base,name2=http://base2" (VAULT_PROXY_DESTINATIONS).
// extraCAs, when set, are trusted on top of the system roots (a sandbox
// simulator or test target with its own CA).
func Parse(spec string, extraCAs []*x509.Certificate) (*Set, error) {
	s := &Set{bases: map[string]*url.URL{}}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, raw, ok := strings.Cut(part, "=")
		u, err := url.Parse(raw)
		if !ok || name == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("destinations: %q is not name=http(s)://host[/base]", part)
		}
		s.bases[name] = u
	}
	tlsCfg := certs.BaseTLSConfig() // TLS 1.2+, AEAD suites only
	if len(extraCAs) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		for _, c := range extraCAs {
			roots.AddCert(c)
		}
		tlsCfg.RootCAs = roots
	}
	s.client = &fasthttp.Client{
		Name:                          "vault-proxy",
		NoDefaultUserAgentHeader:      true,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: true,
		ReadTimeout:                   60 * time.Second,
		WriteTimeout:                  60 * time.Second,
		MaxResponseBodySize:           10 << 20,
		MaxIdemponentCallAttempts:     1,
		// An authorization is never sent twice by this hop.
		RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		TLSConfig:  tlsCfg,
	}
	return s, nil
}

// ErrUnknown is returned for a destination that is not configured.
var ErrUnknown = errors.New("destinations: unknown destination")

// URL joins the destination's base with path (which must be absolute and may
// carry a query).
func (s *Set) URL(name, path string) (*url.URL, error) {
	base, ok := s.bases[name]
	if !ok {
		return nil, ErrUnknown
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "://") {
		return nil, fmt.Errorf("destinations: path must be absolute")
	}
	rel, err := url.Parse(path)
	if err != nil || rel.Host != "" || rel.User != nil {
		return nil, fmt.Errorf("destinations: bad path")
	}
	u := *base
	u.Path = strings.TrimRight(base.Path, "/") + rel.Path
	u.RawPath = ""
	u.RawQuery = rel.RawQuery
	return &u, nil
}

// Do sends req (no redirects, no retries) within timeout.
func (s *Set) Do(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return s.client.DoDeadline(req, resp, deadline)
}

// Bases returns the configured base URLs by name, for configuration checks.
func (s *Set) Bases() map[string]*url.URL { return s.bases }
