package certs

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testPKI is a CA plus the usual leaves, issued at time.Now() so that the
// TLS stack (which uses the real clock) accepts them.
type testPKI struct {
	ca         *Authority
	vaultProxy *Leaf // server, internal listener
	public     *Leaf // server, public listener
	coreAPI    *Leaf // client
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	now := time.Now()
	ca := mustCA(t, "test CA", now)
	return &testPKI{
		ca:         ca,
		vaultProxy: mustServer(t, ca, VaultProxyName, []string{"localhost", "127.0.0.1", "::1", VaultProxyName, SPIFFEID(VaultProxyName).String()}, now),
		public:     mustServer(t, ca, publicName, []string{"localhost", "127.0.0.1", "::1"}, now),
		coreAPI:    mustClient(t, ca, CoreAPIName, now),
	}
}

func mustCA(t *testing.T, name string, now time.Time) *Authority {
	t.Helper()
	ca, err := NewCA(name, now, CALifetime)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func mustServer(t *testing.T, ca *Authority, name string, hosts []string, now time.Time) *Leaf {
	t.Helper()
	l, err := ca.IssueServer(name, hosts, now, LeafLifetime)
	if err != nil {
		t.Fatalf("IssueServer(%q): %v", name, err)
	}
	return l
}

func mustClient(t *testing.T, ca *Authority, name string, now time.Time) *Leaf {
	t.Helper()
	l, err := ca.IssueClient(name, now, LeafLifetime)
	if err != nil {
		t.Fatalf("IssueClient(%q): %v", name, err)
	}
	return l
}

// writeLeaf writes a leaf's certificate and key as <name>.pem and
// <name>-key.pem under dir and returns their paths.
func writeLeaf(t *testing.T, dir, name string, l *Leaf) (certFile, keyFile string) {
	t.Helper()
	key, err := l.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(dir, name+".pem")
	keyFile = filepath.Join(dir, name+"-key.pem")
	writeFile(t, certFile, l.CertPEM())
	writeFile(t, keyFile, key)
	return certFile, keyFile
}

func writeCA(t *testing.T, dir string, ca *Authority) string {
	t.Helper()
	p := filepath.Join(dir, "ca-"+strings.ReplaceAll(ca.Cert.Subject.CommonName, " ", "_")+".pem")
	writeFile(t, p, ca.CertPEM())
	return p
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// handshakeResult is what the test server saw of one connection.
type handshakeResult struct {
	err      error
	identity string // PeerIdentity, when the handshake succeeded
	idErr    error
	state    tls.ConnectionState
}

// startTLSServer accepts TLS connections on 127.0.0.1 with cfg. For each it
// completes the handshake, reports the outcome on the returned channel and,
// on success, writes "hello <identity>\n" before closing.
func startTLSServer(t *testing.T, cfg *tls.Config) (addr string, results <-chan handshakeResult) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan handshakeResult, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				tc := tls.Server(conn, cfg)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := tc.HandshakeContext(ctx); err != nil {
					ch <- handshakeResult{err: err}
					return
				}
				cs := tc.ConnectionState()
				id, idErr := PeerIdentity(&cs)
				ch <- handshakeResult{identity: id, idErr: idErr, state: cs}
				_, _ = tc.Write([]byte("hello " + id + "\n"))
				_ = tc.CloseWrite()
				// Let the client read before the socket goes away.
				_ = tc.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _ = bufio.NewReader(tc).ReadString('\n')
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), ch
}

// dialAndRead dials addr with cfg and reads the server's greeting line. In
// TLS 1.3 a client learns that the server rejected its certificate only when
// it reads, so a rejection shows up here, not only in Handshake.
func dialAndRead(t *testing.T, addr string, cfg *tls.Config) (string, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", err
	}
	return line, nil
}

func waitResult(t *testing.T, results <-chan handshakeResult) handshakeResult {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("server saw no handshake")
		return handshakeResult{}
	}
}
