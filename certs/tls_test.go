package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientConfig builds a client config that trusts roots and presents leaf
// (nil: no certificate), bypassing file loading so that certificates the
// loader would refuse (expired ones) can be presented.
func clientConfig(roots *x509.CertPool, leaf *Leaf) *tls.Config {
	cfg := BaseTLSConfig()
	cfg.RootCAs = roots
	if leaf != nil {
		c := leaf.TLSCertificate()
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	return cfg
}

// customLeaf issues a client-auth leaf from ca with an arbitrary subject and
// URI SANs, for identities IssueClient would never produce.
func customLeaf(t *testing.T, ca *Authority, cn string, uris []string) *Leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, s := range uris {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.PrivateKey())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{Cert: cert, key: key}
}

func TestServerTLSConfigMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	now := time.Now()
	other := mustCA(t, "other CA", now)
	dir := t.TempDir()
	certFile, keyFile := writeLeaf(t, dir, "vault-proxy", pki.vaultProxy)
	caFile := writeCA(t, dir, pki.ca)

	expiredCA, err := NewCA("test CA", now.Add(-200*24*time.Hour), CALifetime)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := expiredCA.IssueClient(CoreAPIName, now.Add(-100*24*time.Hour), LeafLifetime)
	if err != nil {
		t.Fatal(err)
	}
	// The expired leaf is from a CA the server does not trust; add that CA
	// to the server's pool in its own case so only expiry is at fault.
	expiredPool := pki.ca.Pool()
	expiredPool.AddCert(expiredCA.Cert)

	tests := []struct {
		name        string
		clientCert  *Leaf
		allowed     []string
		serverPool  *x509.CertPool // nil: caFile via ServerTLSConfig
		wantID      string         // "" means the connection must fail
		wantSrvErr  string         // substring of the server's handshake error
		wantPeerLen int
	}{
		{name: "right cert", clientCert: pki.coreAPI, allowed: []string{CoreAPIName}, wantID: CoreAPIName},
		{name: "right cert, allow-list by URI", clientCert: pki.coreAPI, allowed: []string{"spiffe://payorch.local/core-api"}, wantID: CoreAPIName},
		{name: "right cert among several allowed", clientCert: pki.coreAPI, allowed: []string{"reporting", CoreAPIName}, wantID: CoreAPIName},
		{name: "no client cert", clientCert: nil, allowed: []string{CoreAPIName}, wantSrvErr: "client didn't provide a certificate"},
		{name: "client cert from another CA", clientCert: mustClient(t, other, CoreAPIName, now), allowed: []string{CoreAPIName}, wantSrvErr: "unknown authority"},
		{name: "right CA, identity not allowed", clientCert: mustClient(t, pki.ca, "reporting", now), allowed: []string{CoreAPIName}, wantSrvErr: `client identity "reporting" is not allowed`},
		{name: "right CA, server certificate used as client", clientCert: pki.vaultProxy, allowed: []string{VaultProxyName}, wantSrvErr: "incompatible key usage"},
		{name: "right CA, CN disagrees with URI SAN", clientCert: customLeaf(t, pki.ca, CoreAPIName, []string{"spiffe://payorch.local/reporting"}), allowed: []string{CoreAPIName, "reporting"}, wantSrvErr: "disagrees"},
		{name: "right CA, foreign trust domain", clientCert: customLeaf(t, pki.ca, "", []string{"spiffe://evil.example/core-api"}), allowed: []string{CoreAPIName}, wantSrvErr: "not an identity"},
		{name: "right CA, CN only", clientCert: customLeaf(t, pki.ca, CoreAPIName, nil), allowed: []string{CoreAPIName}, wantID: CoreAPIName},
		{name: "expired client cert", clientCert: expired, allowed: []string{CoreAPIName}, serverPool: expiredPool, wantSrvErr: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg *tls.Config
			var err error
			if tt.serverPool == nil {
				cfg, err = ServerTLSConfig(certFile, keyFile, caFile, tt.allowed)
			} else {
				var kp *KeyPair
				if kp, err = LoadKeyPair(certFile, keyFile); err == nil {
					cfg, err = ServerTLSConfigFrom(kp, tt.serverPool, tt.allowed)
				}
			}
			if err != nil {
				t.Fatalf("server config: %v", err)
			}
			if cfg.ClientAuth != tls.RequireAndVerifyClientCert {
				t.Fatalf("ClientAuth = %v, want RequireAndVerifyClientCert", cfg.ClientAuth)
			}
			addr, results := startTLSServer(t, cfg)

			line, cerr := dialAndRead(t, addr, clientConfig(pki.ca.Pool(), tt.clientCert))
			res := waitResult(t, results)

			if tt.wantID != "" {
				if cerr != nil || res.err != nil {
					t.Fatalf("want success; client error %v, server error %v", cerr, res.err)
				}
				if res.idErr != nil || res.identity != tt.wantID {
					t.Fatalf("server saw identity %q (%v), want %q", res.identity, res.idErr, tt.wantID)
				}
				if want := "hello " + tt.wantID + "\n"; line != want {
					t.Fatalf("client read %q, want %q", line, want)
				}
				if res.state.Version != tls.VersionTLS13 {
					t.Errorf("negotiated %s, want TLS 1.3", tls.VersionName(res.state.Version))
				}
				return
			}
			if cerr == nil {
				t.Fatalf("client connection succeeded (read %q), want failure", line)
			}
			if res.err == nil {
				t.Fatalf("server handshake succeeded with identity %q, want failure", res.identity)
			}
			if !strings.Contains(res.err.Error(), tt.wantSrvErr) {
				t.Fatalf("server error %q does not mention %q", res.err, tt.wantSrvErr)
			}
		})
	}
}

// TestInternalLinkOverHTTP runs the real thing: the files WriteDevPKI
// writes, net/http on both sides, the handler reading the caller's identity.
func TestInternalLinkOverHTTP(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := WriteDevPKI(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	f := DevPKIFiles(dir)
	srvCfg, err := ServerTLSConfig(f.VaultProxyCert, f.VaultProxyKey, f.CA, []string{CoreAPIName})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := PeerIdentity(r.TLS)
			if err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
			_, _ = io.WriteString(w, id)
		}),
		TLSConfig:         srvCfg,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	coreAPICfg, err := ClientTLSConfig(f.CoreAPICert, f.CoreAPIKey, f.CA)
	if err != nil {
		t.Fatal(err)
	}
	noCertCfg := BaseTLSConfig()
	noCertCfg.RootCAs, err = LoadCertPool(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	// The public certificate is a server certificate from the same CA; it
	// must not open the internal link.
	publicAsClient, err := ClientTLSConfig(f.PublicCert, f.PublicKey, f.CA)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		cfg        *tls.Config
		host       string // dialled, and checked against the certificate
		serverName string // checked instead of host when set
		wantBody   string // "" means the request must fail
	}{
		{"core-api via 127.0.0.1", coreAPICfg, "127.0.0.1", "", CoreAPIName},
		{"core-api via localhost", coreAPICfg, "localhost", "", CoreAPIName},
		// The server listens on 127.0.0.1 only; naming ::1 makes the client
		// check the IP SAN ::1 without needing an IPv6 loopback here.
		{"core-api naming ::1", coreAPICfg, "127.0.0.1", "::1", CoreAPIName},
		{"core-api naming vault-proxy", coreAPICfg, "127.0.0.1", VaultProxyName, CoreAPIName},
		{"client refuses a name the server certificate lacks", coreAPICfg, "127.0.0.1", "payorch.example", ""},
		{"no client certificate", noCertCfg, "127.0.0.1", "", ""},
		{"public server certificate as client", publicAsClient, "127.0.0.1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.Clone()
			cfg.ServerName = tt.serverName
			client := &http.Client{
				Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true},
				Timeout:   5 * time.Second,
			}
			defer client.CloseIdleConnections()
			host := tt.host
			resp, err := client.Get("https://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/")
			if tt.wantBody == "" {
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					t.Fatalf("request succeeded (%d %q), want failure", resp.StatusCode, body)
				}
				return
			}
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(body) != tt.wantBody {
				t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, body, tt.wantBody)
			}
			if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
				t.Errorf("response not over TLS 1.3: %+v", resp.TLS)
			}
		})
	}
}

func TestPublicServerTLSConfig(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	certFile, keyFile := writeLeaf(t, dir, "public", pki.public)
	cfg, err := PublicServerTLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAuth != tls.NoClientCert || cfg.ClientCAs != nil || cfg.VerifyConnection != nil {
		t.Fatalf("public listener must not ask for client certificates: %v", cfg.ClientAuth)
	}
	addr, results := startTLSServer(t, cfg)
	roots := pki.ca.Pool()

	tls12GCM := clientConfig(roots, nil)
	tls12GCM.MaxVersion = tls.VersionTLS12
	tls12CBC := clientConfig(roots, nil)
	tls12CBC.MaxVersion = tls.VersionTLS12
	tls12CBC.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA}
	tls11 := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	wrongName := clientConfig(roots, nil)
	wrongName.ServerName = VaultProxyName // the public cert does not carry it
	otherRoots := mustCA(t, "other CA", time.Now()).Pool()

	tests := []struct {
		name        string
		cfg         *tls.Config
		wantVersion uint16 // 0 means the handshake must fail
	}{
		{"default client gets TLS 1.3", clientConfig(roots, nil), tls.VersionTLS13},
		{"TLS 1.2 with AEAD suite", tls12GCM, tls.VersionTLS12},
		{"TLS 1.2 with CBC suites only", tls12CBC, 0},
		{"TLS 1.1", tls11, 0},
		{"client checks the host name", wrongName, 0},
		{"client checks the CA", clientConfig(otherRoots, nil), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := dialAndRead(t, addr, tt.cfg)
			res := waitResult(t, results)
			if tt.wantVersion == 0 {
				if err == nil || res.err == nil {
					t.Fatalf("want failure; client error %v, server error %v", err, res.err)
				}
				return
			}
			if err != nil || res.err != nil {
				t.Fatalf("client error %v, server error %v", err, res.err)
			}
			if line != "hello \n" {
				t.Fatalf("read %q", line)
			}
			if res.state.Version != tt.wantVersion {
				t.Fatalf("negotiated %s, want %s", tls.VersionName(res.state.Version), tls.VersionName(tt.wantVersion))
			}
			if res.idErr == nil {
				t.Fatalf("PeerIdentity on a connection without client certificate returned %q, want error", res.identity)
			}
		})
	}
}

func TestKeyPairReload(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	certFile, keyFile := writeLeaf(t, dir, "public", pki.public)
	kp, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ServerTLSConfigFrom(kp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, results := startTLSServer(t, cfg)
	serial := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, clientConfig(pki.ca.Pool(), nil))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		waitResult(t, results)
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}

	first := serial()
	if want := pki.public.Cert.SerialNumber.String(); first != want {
		t.Fatalf("served serial %s, want %s", first, want)
	}

	renewed := mustServer(t, pki.ca, publicName, []string{"127.0.0.1"}, time.Now())
	writeLeaf(t, dir, "public", renewed)
	if got := serial(); got != first {
		t.Fatalf("certificate changed before Reload: %s", got)
	}
	if err := kp.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := serial(), renewed.Cert.SerialNumber.String(); got != want {
		t.Fatalf("after Reload served %s, want %s", got, want)
	}

	// A broken file: Reload fails and the current pair stays in service.
	writeFile(t, keyFile, []byte("not a key"))
	if err := kp.Reload(); err == nil {
		t.Fatal("Reload of a broken key file succeeded")
	}
	if got, want := serial(), renewed.Cert.SerialNumber.String(); got != want {
		t.Fatalf("after failed Reload served %s, want %s", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	certFile, keyFile := writeLeaf(t, dir, "vault-proxy", pki.vaultProxy)
	_, otherKey := writeLeaf(t, dir, "core-api", pki.coreAPI)
	caFile := writeCA(t, dir, pki.ca)
	missing := filepath.Join(dir, "missing.pem")

	// A key file whose PEM body is damaged: the error must name the file
	// and must not quote the body.
	keyPEM, _ := pki.vaultProxy.KeyPEM()
	block, _ := pem.Decode(keyPEM)
	block.Bytes = block.Bytes[:len(block.Bytes)-7]
	damaged := filepath.Join(dir, "damaged-key.pem")
	damagedPEM := pem.EncodeToMemory(block)
	writeFile(t, damaged, damagedPEM)
	damagedBody := strings.Split(string(damagedPEM), "\n")[1]

	expiredCA, _ := NewCA("old", time.Now().Add(-365*24*time.Hour), CALifetime)
	expiredLeaf, err := expiredCA.IssueServer("old", []string{"localhost"}, time.Now().Add(-100*24*time.Hour), LeafLifetime)
	if err != nil {
		t.Fatal(err)
	}
	expiredCert, expiredKey := writeLeaf(t, dir, "expired", expiredLeaf)

	tests := []struct {
		name    string
		build   func() error
		wantIn  []string
		wantOut []string
	}{
		{"missing cert file", func() error { _, err := ServerTLSConfig(missing, keyFile, "", nil); return err }, []string{missing}, nil},
		{"missing key file", func() error { _, err := PublicServerTLSConfig(certFile, missing); return err }, []string{missing}, nil},
		{"missing CA file", func() error { _, err := ServerTLSConfig(certFile, keyFile, missing, []string{CoreAPIName}); return err }, []string{missing}, nil},
		{"missing client CA file", func() error { _, err := ClientTLSConfig(certFile, keyFile, missing); return err }, []string{missing}, nil},
		{"key does not match", func() error { _, err := PublicServerTLSConfig(certFile, otherKey); return err }, []string{otherKey, certFile, "does not match"}, nil},
		{"damaged key", func() error { _, err := PublicServerTLSConfig(certFile, damaged); return err }, []string{damaged}, []string{damagedBody}},
		{"cert and key swapped", func() error { _, err := PublicServerTLSConfig(keyFile, certFile); return err }, []string{keyFile, "private key"}, nil},
		{"key file holds a certificate", func() error { _, err := PublicServerTLSConfig(certFile, certFile); return err }, []string{certFile, "CERTIFICATE"}, nil},
		{"expired certificate", func() error { _, err := PublicServerTLSConfig(expiredCert, expiredKey); return err }, []string{expiredCert, "expired"}, nil},
		{"allow-list without CA", func() error { _, err := ServerTLSConfig(certFile, keyFile, "", []string{CoreAPIName}); return err }, []string{"without a client CA"}, nil},
		{"CA without allow-list", func() error { _, err := ServerTLSConfig(certFile, keyFile, caFile, nil); return err }, []string{"allowedClients is empty"}, nil},
		{"allow-list entry from another trust domain", func() error {
			_, err := ServerTLSConfig(certFile, keyFile, caFile, []string{"spiffe://evil.example/core-api"})
			return err
		}, []string{"evil.example"}, nil},
		{"allow-list entry with a space", func() error { _, err := ServerTLSConfig(certFile, keyFile, caFile, []string{"core-api "}); return err }, []string{`"core-api "`}, nil},
		{"client without CA", func() error { _, err := ClientTLSConfig(certFile, keyFile, ""); return err }, []string{"CA file"}, nil},
		{"CA file without certificates", func() error { _, err := LoadCertPool(keyFile); return err }, []string{keyFile}, nil},
		{"nil key pair", func() error { _, err := ServerTLSConfigFrom(nil, nil, nil); return err }, []string{"nil"}, nil},
		{"unloaded key pair", func() error { _, err := ClientTLSConfigFrom(&KeyPair{}, x509.NewCertPool()); return err }, []string{"not loaded"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.build()
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, s := range tt.wantOut {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
		})
	}
}

func TestBaseTLSConfigPolicy(t *testing.T) {
	cfg := BaseTLSConfig()
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion = %s", tls.VersionName(cfg.MinVersion))
	}
	if cfg.MaxVersion != 0 {
		t.Errorf("MaxVersion = %s; leave it open so TLS 1.3 (and later) is used", tls.VersionName(cfg.MaxVersion))
	}
	insecure := map[uint16]bool{}
	for _, s := range tls.InsecureCipherSuites() {
		insecure[s.ID] = true
	}
	for _, id := range cfg.CipherSuites {
		name := tls.CipherSuiteName(id)
		if insecure[id] || !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20")) {
			t.Errorf("cipher suite %s is not ECDHE+AEAD", name)
		}
	}
	// Each call returns its own slices: a caller's change stays local.
	cfg.CipherSuites[0] = 0
	if BaseTLSConfig().CipherSuites[0] == 0 {
		t.Error("BaseTLSConfig shares its cipher suite slice")
	}
	// The configs this package builds all carry the policy.
	dir := t.TempDir()
	pki := newTestPKI(t)
	c, k := writeLeaf(t, dir, "p", pki.public)
	ca := writeCA(t, dir, pki.ca)
	built := map[string]func() (*tls.Config, error){
		"public": func() (*tls.Config, error) { return PublicServerTLSConfig(c, k) },
		"server": func() (*tls.Config, error) { return ServerTLSConfig(c, k, ca, []string{CoreAPIName}) },
		"client": func() (*tls.Config, error) { return ClientTLSConfig(c, k, ca) },
	}
	for name, f := range built {
		cfg, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg.MinVersion != tls.VersionTLS12 || len(cfg.CipherSuites) != len(tls12CipherSuites) || len(cfg.CurvePreferences) != len(curvePreferences) {
			t.Errorf("%s config does not carry the policy", name)
		}
		if len(cfg.Certificates) != 0 {
			t.Errorf("%s config sets Certificates; it must go through the reloadable KeyPair", name)
		}
		if cfg.InsecureSkipVerify {
			t.Errorf("%s config skips verification", name)
		}
	}
}
