package certs

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"strings"
	"testing"
)

func TestIdentity(t *testing.T) {
	mk := func(cn string, uris ...string) *x509.Certificate {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		for _, s := range uris {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			c.URIs = append(c.URIs, u)
		}
		return c
	}
	tests := []struct {
		name    string
		cert    *x509.Certificate
		want    string
		wantErr string
	}{
		{"CN and matching URI", mk("core-api", "spiffe://payorch.local/core-api"), "core-api", ""},
		{"URI only", mk("", "spiffe://payorch.local/core-api"), "core-api", ""},
		{"CN only", mk("core-api"), "core-api", ""},
		{"nothing", mk(""), "", "empty"},
		{"CN disagrees with URI", mk("core-api", "spiffe://payorch.local/vault-proxy"), "", "disagrees"},
		{"two URIs", mk("core-api", "spiffe://payorch.local/core-api", "spiffe://payorch.local/x"), "", "exactly one"},
		{"other trust domain", mk("", "spiffe://other.example/core-api"), "", "not an identity"},
		{"other scheme", mk("core-api", "https://payorch.local/core-api"), "", "not an identity"},
		{"nested path", mk("", "spiffe://payorch.local/ns/core-api"), "", "outside"},
		{"empty path", mk("", "spiffe://payorch.local/"), "", "empty"},
		{"query", mk("", "spiffe://payorch.local/core-api?x=1"), "", "not an identity"},
		{"CN with space", mk("core api"), "", "outside"},
		{"nil", nil, "", "no certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Identity(tt.cert)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Identity = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Identity = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPeerIdentityNeedsVerifiedChain(t *testing.T) {
	ca := mustCA(t, "CA", t0)
	leaf := mustClient(t, ca, CoreAPIName, t0)
	tests := []struct {
		name string
		cs   *tls.ConnectionState
		want string
	}{
		{"nil", nil, ""},
		{"no peer", &tls.ConnectionState{}, ""},
		// With tls.RequestClientCert a peer certificate arrives unverified;
		// it must not yield an identity.
		{"unverified peer", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf.Cert}}, ""},
		{"verified peer", &tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{leaf.Cert},
			VerifiedChains:   [][]*x509.Certificate{{leaf.Cert, ca.Cert}},
		}, CoreAPIName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PeerIdentity(tt.cs)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("PeerIdentity = %q, want error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("PeerIdentity = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSPIFFEID(t *testing.T) {
	if got := SPIFFEID(CoreAPIName).String(); got != "spiffe://payorch.local/core-api" {
		t.Fatalf("SPIFFEID = %q", got)
	}
}
