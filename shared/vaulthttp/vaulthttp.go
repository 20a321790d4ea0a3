// Package vaulthttp builds the HTTP client both zones talk to HashiCorp
// Vault with: vault-proxy's transit client for the card keys
// (tokenizer/transit) and core-api's for payment service credentials
// (core-api/vaulttransit). Each has its own token and key; what they share
// is how the connection is made.
package vaulthttp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"
)

// NewClient is a client to Vault: TLS 1.2 or later against the system's
// roots and caFile's (none: the system's alone), no proxy, no redirects
// followed (vault/api handles the ones Vault sends itself), and up to
// maxIdle idle connections kept for the next calls.
func NewClient(caFile string, maxIdle int) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %v", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
		}
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
			TLSHandshakeTimeout: 10 * time.Second,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: maxIdle,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}
