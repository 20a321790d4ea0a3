package certs

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// snapshot records the bytes and identity of each PKI file, to tell kept
// files from rewritten ones (rename always gives a new inode).
type snapshot map[string]fileState

type fileState struct {
	data []byte
	mod  time.Time
	info os.FileInfo
}

func takeSnapshot(t *testing.T, dir string) snapshot {
	t.Helper()
	s := snapshot{}
	for _, name := range devFileNames() {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		s[name] = fileState{data: data, mod: fi.ModTime(), info: fi}
	}
	return s
}

func (s snapshot) unchanged(t *testing.T, other snapshot) {
	t.Helper()
	for name, a := range s {
		b := other[name]
		if !bytes.Equal(a.data, b.data) || !a.mod.Equal(b.mod) || !os.SameFile(a.info, b.info) {
			t.Errorf("%s was rewritten", name)
		}
	}
}

func (s snapshot) allChanged(t *testing.T, other snapshot) {
	t.Helper()
	for name, a := range s {
		if bytes.Equal(a.data, other[name].data) {
			t.Errorf("%s was not regenerated", name)
		}
	}
}

func mustEnsure(t *testing.T, dir string, now time.Time) DevPKIResult {
	t.Helper()
	res, err := EnsureDevPKI(dir, now)
	if err != nil {
		t.Fatalf("EnsureDevPKI: %v", err)
	}
	return res
}

func loadCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	chain, err := readCertsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return chain[0]
}

func TestWriteDevPKIFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "certs")
	if err := WriteDevPKI(dir, t0); err != nil {
		t.Fatal(err)
	}

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("dir mode %o, want 700", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := devFileNames()
	slices.Sort(want)
	if !slices.Equal(names, want) { // also: no temporary files left behind
		t.Errorf("dir holds %v, want %v", names, want)
	}
	for _, name := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		wantMode := fs.FileMode(0o644)
		if strings.HasSuffix(name, "-key.pem") {
			wantMode = 0o600
		}
		if got := fi.Mode().Perm(); got != wantMode {
			t.Errorf("%s mode %o, want %o", name, got, wantMode)
		}
	}

	f := DevPKIFiles(dir)
	ca, err := LoadAuthority(f.CA, f.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.NotAfter.Equal(t0.Add(CALifetime)) {
		t.Errorf("CA NotAfter %s, want %s", ca.Cert.NotAfter, t0.Add(CALifetime))
	}

	tests := []struct {
		name      string
		cert, key string
		usage     x509.ExtKeyUsage
		cn        string
		hosts     []string // must verify
		notHosts  []string // must not verify
		identity  string   // "" : Identity must fail or is not checked
		uris      []string
	}{
		{"vault-proxy", f.VaultProxyCert, f.VaultProxyKey, x509.ExtKeyUsageServerAuth, "vault-proxy",
			[]string{"localhost", "127.0.0.1", "::1", "vault-proxy"}, []string{"core-api", "example.com"},
			"vault-proxy", []string{"spiffe://payorch.local/vault-proxy"}},
		{"public", f.PublicCert, f.PublicKey, x509.ExtKeyUsageServerAuth, "vault-proxy-public",
			[]string{"localhost", "127.0.0.1", "::1"}, []string{"vault-proxy", "example.com"},
			"", nil},
		{"core-api", f.CoreAPICert, f.CoreAPIKey, x509.ExtKeyUsageClientAuth, "core-api",
			nil, []string{"localhost", "127.0.0.1"},
			"core-api", []string{"spiffe://payorch.local/core-api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := loadPair(tt.cert, tt.key); err != nil {
				t.Fatalf("key pair: %v", err)
			}
			c := loadCert(t, tt.cert)
			if c.Subject.CommonName != tt.cn {
				t.Errorf("CN %q, want %q", c.Subject.CommonName, tt.cn)
			}
			if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{tt.usage}) {
				t.Errorf("ExtKeyUsage %v, want only %v", c.ExtKeyUsage, tt.usage)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("does not verify against ca.pem: %v", err)
			}
			if !c.NotAfter.Equal(t0.Add(LeafLifetime)) {
				t.Errorf("NotAfter %s, want %s", c.NotAfter, t0.Add(LeafLifetime))
			}
			for _, h := range tt.hosts {
				if err := c.VerifyHostname(h); err != nil {
					t.Errorf("SAN %s missing: %v", h, err)
				}
			}
			for _, h := range tt.notHosts {
				if err := c.VerifyHostname(h); err == nil {
					t.Errorf("unexpected SAN %s", h)
				}
			}
			var uris []string
			for _, u := range c.URIs {
				uris = append(uris, u.String())
			}
			if !slices.Equal(uris, tt.uris) {
				t.Errorf("URI SANs %v, want %v", uris, tt.uris)
			}
			if tt.identity != "" {
				if id, err := Identity(c); err != nil || id != tt.identity {
					t.Errorf("Identity %q, %v; want %q", id, err, tt.identity)
				}
			}
		})
	}
}

func TestWriteDevPKITightensDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // regardless of umask
		t.Fatal(err)
	}
	mustEnsure(t, dir, t0)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Fatalf("dir mode %o, want 700", got)
	}
}

func TestWriteDevPKIIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	first := mustEnsure(t, dir, t0)
	if !slices.Equal(first.Written, devFileNames()) || len(first.Kept) != 0 || first.Reason == "" {
		t.Fatalf("first run: %+v", first)
	}
	before := takeSnapshot(t, dir)

	// Later runs, up to just outside the renewal window, keep everything.
	for _, at := range []time.Duration{0, time.Hour, LeafLifetime - RenewBefore - time.Minute} {
		res := mustEnsure(t, dir, t0.Add(at))
		if len(res.Written) != 0 || !slices.Equal(res.Kept, devFileNames()) || res.Reason != "" {
			t.Fatalf("run at +%v: %+v", at, res)
		}
	}
	before.unchanged(t, takeSnapshot(t, dir))
}

func TestWriteDevPKIRegenerates(t *testing.T) {
	tests := []struct {
		name       string
		damage     func(t *testing.T, dir string)
		at         time.Duration // time of the second run after t0
		wantReason string
	}{
		{"leaf expiring within a week", nil, LeafLifetime - RenewBefore + time.Minute, "expires"},
		{"leaf expired", nil, LeafLifetime + time.Hour, "expire"},
		{"clock before the CA", nil, -time.Hour, "not valid yet"},
		{"CA expiring within a week", func(t *testing.T, dir string) {
			// A set whose CA ends with its leaves; the CA is checked first.
			if _, err := generateDevPKI(dir, t0, 30*24*time.Hour, 30*24*time.Hour); err != nil {
				t.Fatal(err)
			}
		}, 30*24*time.Hour - RenewBefore + time.Minute, CAFile + " expires"},
		{"missing leaf key", func(t *testing.T, dir string) { remove(t, dir, CoreAPIKeyFile) }, 0, CoreAPIKeyFile + " is missing"},
		{"missing CA key", func(t *testing.T, dir string) { remove(t, dir, CAKeyFile) }, 0, CAKeyFile + " is missing"},
		{"key readable by others", func(t *testing.T, dir string) { chmod(t, dir, VaultProxyKeyFile, 0o644) }, 0, VaultProxyKeyFile + " is accessible"},
		{"corrupt certificate", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, PublicCertFile), []byte("garbage"))
		}, 0, PublicCertFile},
		{"key of another leaf", func(t *testing.T, dir string) { copyFile(t, dir, PublicKeyFile, CoreAPIKeyFile) }, 0, "does not match"},
		{"leaf from another CA", func(t *testing.T, dir string) {
			other := filepath.Join(t.TempDir(), "other")
			mustEnsure(t, other, t0)
			for _, n := range []string{CoreAPICertFile, CoreAPIKeyFile} {
				data, err := os.ReadFile(filepath.Join(other, n))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, n), data)
			}
		}, 0, "does not verify"},
		{"certificates swapped", func(t *testing.T, dir string) {
			// vault-proxy's files in public's place: chain and key are
			// fine, the name is not.
			copyFile(t, dir, VaultProxyCertFile, PublicCertFile)
			copyFile(t, dir, VaultProxyKeyFile, PublicKeyFile)
		}, 0, "not a certificate for " + publicName},
		{"client certificate for another service", func(t *testing.T, dir string) {
			ca := loadDevCA(t, dir)
			writeLeafAs(t, dir, CoreAPICertFile, CoreAPIKeyFile, mustClient(t, ca, "reporting", t0))
		}, 0, "not a certificate for " + CoreAPIName},
		{"server certificate lacking a SAN", func(t *testing.T, dir string) {
			ca := loadDevCA(t, dir)
			writeLeafAs(t, dir, PublicCertFile, PublicKeyFile, mustServer(t, ca, publicName, []string{"localhost", "127.0.0.1"}, t0))
		}, 0, PublicCertFile + " does not cover ::1"},
		{"server certificate lacking its URI SAN", func(t *testing.T, dir string) {
			ca := loadDevCA(t, dir)
			writeLeafAs(t, dir, VaultProxyCertFile, VaultProxyKeyFile, mustServer(t, ca, VaultProxyName, []string{"localhost", "127.0.0.1", "::1", VaultProxyName}, t0))
		}, 0, "lacks URI SAN"},
		{"CA certificate not self-signed", func(t *testing.T, dir string) {
			// Same key, subject and key id, but signed by someone else:
			// the leaves still chain to it, yet it is not a root.
			ca := loadDevCA(t, dir)
			other := mustCA(t, "other", t0)
			tmpl := *ca.Cert
			der, err := x509.CreateCertificate(rand.Reader, &tmpl, other.Cert, ca.Cert.PublicKey, other.PrivateKey())
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, CAFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		}, 0, "not self-signed"},
		{"a file replaced by a directory", func(t *testing.T, dir string) {
			remove(t, dir, PublicCertFile)
			if err := os.Mkdir(filepath.Join(dir, PublicCertFile), 0o700); err != nil {
				t.Fatal(err)
			}
		}, 0, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			mustEnsure(t, dir, t0)
			before := takeSnapshot(t, dir)
			if tt.damage != nil {
				tt.damage(t, dir)
			}
			now := t0.Add(tt.at)
			res, err := EnsureDevPKI(dir, now)
			if tt.name == "a file replaced by a directory" {
				// rename cannot replace a directory; the error must say so
				// rather than leave a half-written set looking sound.
				if err == nil {
					t.Fatalf("EnsureDevPKI over a directory succeeded: %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Written, devFileNames()) || len(res.Kept) != 0 {
				t.Fatalf("want everything rewritten, got %+v", res)
			}
			if !strings.Contains(res.Reason, tt.wantReason) {
				t.Errorf("reason %q does not mention %q", res.Reason, tt.wantReason)
			}
			before.allChanged(t, takeSnapshot(t, dir))

			// The new set is sound at that time: a further run keeps it.
			again := mustEnsure(t, dir, now)
			if len(again.Written) != 0 {
				t.Fatalf("set regenerated at %v is not kept: %+v", now, again)
			}
			f := DevPKIFiles(dir)
			if c := loadCert(t, f.CoreAPICert); !c.NotAfter.Equal(now.Add(LeafLifetime)) {
				t.Errorf("new leaf NotAfter %s, want %s", c.NotAfter, now.Add(LeafLifetime))
			}
			for _, k := range []string{f.CAKey, f.VaultProxyKey, f.PublicKey, f.CoreAPIKey} {
				if fi, err := os.Stat(k); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s mode after regeneration: %v %v", k, fi.Mode(), err)
				}
			}
		})
	}
}

func TestWriteDevPKIErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, []byte("x"))
	for _, dir := range []string{"", file, filepath.Join(file, "sub")} {
		if err := WriteDevPKI(dir, t0); err == nil {
			t.Errorf("WriteDevPKI(%q) succeeded", dir)
		}
	}
}

func loadDevCA(t *testing.T, dir string) *Authority {
	t.Helper()
	ca, err := LoadAuthority(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func writeLeafAs(t *testing.T, dir, certName, keyName string, l *Leaf) {
	t.Helper()
	key, err := l.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, certName), l.CertPEM())
	writeFile(t, filepath.Join(dir, keyName), key)
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, dir, name string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, dir, from, to string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, from))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, to), data)
}
