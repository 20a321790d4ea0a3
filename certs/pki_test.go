package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNewCA(t *testing.T) {
	ca := mustCA(t, "payorch test CA", t0)
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero || c.MaxPathLen != 0 {
		t.Errorf("CA constraints: IsCA=%v valid=%v MaxPathLen=%d zero=%v", c.IsCA, c.BasicConstraintsValid, c.MaxPathLen, c.MaxPathLenZero)
	}
	if c.KeyUsage&x509.KeyUsageCertSign == 0 || c.KeyUsage&x509.KeyUsageCRLSign == 0 {
		t.Errorf("CA KeyUsage = %b, want CertSign|CRLSign", c.KeyUsage)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
	if c.Subject.CommonName != "payorch test CA" {
		t.Errorf("CN = %q", c.Subject.CommonName)
	}
	if !c.NotAfter.Equal(t0.Add(CALifetime)) || c.NotBefore.After(t0) {
		t.Errorf("validity %s .. %s, want .. %s", c.NotBefore, c.NotAfter, t0.Add(CALifetime))
	}
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want ECDSA P-256", c.PublicKey)
	}
	if len(c.SubjectKeyId) == 0 {
		t.Error("CA has no SubjectKeyId")
	}

	for _, bad := range []struct {
		name     string
		lifetime time.Duration
	}{{"", CALifetime}, {"  ", CALifetime}, {"x", 0}, {"x", -time.Hour}} {
		if _, err := NewCA(bad.name, t0, bad.lifetime); err == nil {
			t.Errorf("NewCA(%q, %v) succeeded", bad.name, bad.lifetime)
		}
	}
}

func TestIssue(t *testing.T) {
	ca := mustCA(t, "CA", t0)
	server := mustServer(t, ca, VaultProxyName, []string{"localhost", "127.0.0.1", "::1", VaultProxyName, "spiffe://payorch.local/vault-proxy"}, t0)
	client := mustClient(t, ca, CoreAPIName, t0)

	tests := []struct {
		name     string
		leaf     *Leaf
		usage    x509.ExtKeyUsage
		notUsage x509.ExtKeyUsage
		dns      []string
		ips      []string
		uris     []string
	}{
		{"server", server, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth,
			[]string{"localhost", VaultProxyName}, []string{"127.0.0.1", "::1"}, []string{"spiffe://payorch.local/vault-proxy"}},
		{"client", client, x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth,
			nil, nil, []string{"spiffe://payorch.local/core-api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.leaf.Cert
			if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{tt.usage}) {
				t.Errorf("ExtKeyUsage = %v, want only %v", c.ExtKeyUsage, tt.usage)
			}
			if c.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("KeyUsage = %b, want DigitalSignature only", c.KeyUsage)
			}
			if c.IsCA {
				t.Error("leaf is a CA")
			}
			if !slices.Equal(c.DNSNames, tt.dns) {
				t.Errorf("DNS SANs = %v, want %v", c.DNSNames, tt.dns)
			}
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, tt.ips) {
				t.Errorf("IP SANs = %v, want %v", ips, tt.ips)
			}
			var uris []string
			for _, u := range c.URIs {
				uris = append(uris, u.String())
			}
			if !slices.Equal(uris, tt.uris) {
				t.Errorf("URI SANs = %v, want %v", uris, tt.uris)
			}
			if !c.NotAfter.Equal(t0.Add(LeafLifetime)) {
				t.Errorf("NotAfter = %s, want %s", c.NotAfter, t0.Add(LeafLifetime))
			}
			opts := x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{tt.usage}}
			if _, err := c.Verify(opts); err != nil {
				t.Errorf("does not verify for %v: %v", tt.usage, err)
			}
			opts.KeyUsages = []x509.ExtKeyUsage{tt.notUsage}
			if _, err := c.Verify(opts); err == nil {
				t.Errorf("verifies for %v too", tt.notUsage)
			}
			opts.KeyUsages = []x509.ExtKeyUsage{tt.usage}
			opts.CurrentTime = t0.Add(LeafLifetime + time.Second)
			if _, err := c.Verify(opts); err == nil {
				t.Error("verifies after NotAfter")
			}
			if !bytes.Equal(c.AuthorityKeyId, ca.Cert.SubjectKeyId) {
				t.Error("AuthorityKeyId does not name the CA")
			}
		})
	}

	if err := server.Cert.VerifyHostname("vault-proxy"); err != nil {
		t.Error(err)
	}
	if id, err := Identity(client.Cert); err != nil || id != CoreAPIName {
		t.Errorf("Identity(client) = %q, %v", id, err)
	}
}

func TestIssueErrors(t *testing.T) {
	ca := mustCA(t, "CA", t0)
	tests := []struct {
		name  string
		issue func() (*Leaf, error)
	}{
		{"server without hosts", func() (*Leaf, error) { return ca.IssueServer("x", nil, t0, LeafLifetime) }},
		{"server with empty host", func() (*Leaf, error) { return ca.IssueServer("x", []string{""}, t0, LeafLifetime) }},
		{"server without name", func() (*Leaf, error) { return ca.IssueServer("", []string{"localhost"}, t0, LeafLifetime) }},
		{"zero lifetime", func() (*Leaf, error) { return ca.IssueServer("x", []string{"localhost"}, t0, 0) }},
		{"outlives its CA", func() (*Leaf, error) { return ca.IssueClient("x", t0.Add(CALifetime-time.Hour), LeafLifetime) }},
		{"client name with slash", func() (*Leaf, error) { return ca.IssueClient("core/api", t0, LeafLifetime) }},
		{"client name empty", func() (*Leaf, error) { return ca.IssueClient("", t0, LeafLifetime) }},
		{"client name dot-dot", func() (*Leaf, error) { return ca.IssueClient("..", t0, LeafLifetime) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if l, err := tt.issue(); err == nil {
				t.Fatalf("issued %v, want error", l)
			}
		})
	}
}

func TestSerialNumbers(t *testing.T) {
	ca := mustCA(t, "CA", t0)
	seen := map[string]bool{ca.Cert.SerialNumber.String(): true}
	for range 50 {
		l := mustClient(t, ca, "x", t0)
		s := l.Cert.SerialNumber
		if s.Sign() <= 0 || s.BitLen() > 128 {
			t.Fatalf("serial %x: sign %d, %d bits", s, s.Sign(), s.BitLen())
		}
		if seen[s.String()] {
			t.Fatalf("serial %x repeated", s)
		}
		seen[s.String()] = true
	}
	// 50 random 128-bit serials that all fit in 64 bits would mean the
	// generator is not using 128 bits.
	wide := 0
	for s := range seen {
		n, _ := new(big.Int).SetString(s, 10)
		if n.BitLen() > 64 {
			wide++
		}
	}
	if wide == 0 {
		t.Fatal("no serial wider than 64 bits")
	}
}

func TestPEMEncoding(t *testing.T) {
	ca := mustCA(t, "CA", t0)
	leaf := mustClient(t, ca, CoreAPIName, t0)
	for name, enc := range map[string]func() ([]byte, error){"CA": ca.KeyPEM, "leaf": leaf.KeyPEM} {
		data, err := enc()
		if err != nil {
			t.Fatal(err)
		}
		block, rest := pem.Decode(data)
		if block == nil || block.Type != "PRIVATE KEY" || len(bytes.TrimSpace(rest)) != 0 {
			t.Fatalf("%s key PEM is not a single PRIVATE KEY block: %q", name, data[:min(len(data), 40)])
		}
		if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
			t.Fatalf("%s key is not PKCS#8: %v", name, err)
		}
	}
	block, _ := pem.Decode(leaf.CertPEM())
	if block == nil || block.Type != "CERTIFICATE" || !bytes.Equal(block.Bytes, leaf.Cert.Raw) {
		t.Fatal("CertPEM does not round-trip")
	}
}

func TestLoadAuthority(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, "CA", t0)
	key, _ := ca.KeyPEM()
	writeFile(t, dir+"/ca.pem", ca.CertPEM())
	writeFile(t, dir+"/ca-key.pem", key)
	got, err := LoadAuthority(dir+"/ca.pem", dir+"/ca-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cert.Equal(ca.Cert) || !got.PrivateKey().Equal(ca.PrivateKey()) {
		t.Fatal("loaded CA differs")
	}
	// A leaf is not a CA.
	leaf := mustClient(t, ca, "x", t0)
	c, k := writeLeaf(t, dir, "leaf", leaf)
	if _, err := LoadAuthority(c, k); err == nil || !strings.Contains(err.Error(), c) {
		t.Fatalf("LoadAuthority(leaf) = %v, want error naming %s", err, c)
	}
}

// TestRedaction: no fmt verb, JSON or slog rendering of a holder of a
// private key shows the key.
func TestRedaction(t *testing.T) {
	ca := mustCA(t, "CA", time.Now())
	leaf := mustClient(t, ca, CoreAPIName, time.Now())
	dir := t.TempDir()
	c, k := writeLeaf(t, dir, "leaf", leaf)
	kp, err := LoadKeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]*ecdsa.PrivateKey{"CA": ca.PrivateKey(), "leaf": leaf.PrivateKey()}
	values := map[string]any{"Authority": ca, "*Authority": ca, "Leaf": *leaf, "*Leaf": leaf, "*KeyPair": kp}
	values["Authority"] = *ca
	for vname, v := range values {
		var outs []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x"} {
			outs = append(outs, fmt.Sprintf(verb, v))
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: json: %v", vname, err)
		}
		outs = append(outs, string(j))
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "v", v)
		slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "v", v)
		outs = append(outs, buf.String())
		for _, out := range outs {
			if !strings.Contains(out, "REDACTED") {
				t.Errorf("%s rendered without the redaction marker: %.200s", vname, out)
			}
			for kname, key := range secrets {
				d, err := key.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				for _, form := range []string{new(big.Int).SetBytes(d).String(), fmt.Sprintf("%x", d), fmt.Sprintf("%X", d)} {
					if strings.Contains(out, form) {
						t.Errorf("%s rendering shows the %s private key: %.200s", vname, kname, out)
					}
				}
			}
		}
	}
}
