package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// File names of the development PKI inside its directory.
const (
	CAFile             = "ca.pem"
	CAKeyFile          = "ca-key.pem"
	VaultProxyCertFile = "vault-proxy.pem"
	VaultProxyKeyFile  = "vault-proxy-key.pem"
	PublicCertFile     = "public.pem"
	PublicKeyFile      = "public-key.pem"
	CoreAPICertFile    = "core-api.pem"
	CoreAPIKeyFile     = "core-api-key.pem"
)

// Modes of the development PKI. The directory holds the CA key, so only its
// owner may list or enter it.
const (
	dirMode  fs.FileMode = 0o700
	keyMode  fs.FileMode = 0o600
	certMode fs.FileMode = 0o644
)

// DevFiles are the paths of the development PKI's files under Dir.
type DevFiles struct {
	Dir                           string
	CA, CAKey                     string
	VaultProxyCert, VaultProxyKey string // vault-proxy's internal (mTLS) listener
	PublicCert, PublicKey         string // vault-proxy's public TLS listener
	CoreAPICert, CoreAPIKey       string // core-api's client certificate
}

// DevPKIFiles returns the paths WriteDevPKI uses under dir, for wiring the
// services to the files it writes.
func DevPKIFiles(dir string) DevFiles {
	j := func(name string) string { return filepath.Join(dir, name) }
	return DevFiles{
		Dir: dir,
		CA:  j(CAFile), CAKey: j(CAKeyFile),
		VaultProxyCert: j(VaultProxyCertFile), VaultProxyKey: j(VaultProxyKeyFile),
		PublicCert: j(PublicCertFile), PublicKey: j(PublicKeyFile),
		CoreAPICert: j(CoreAPICertFile), CoreAPIKey: j(CoreAPIKeyFile),
	}
}

// DevPKIResult says what EnsureDevPKI did. File names are relative to the
// directory, in the order written (or checked).
type DevPKIResult struct {
	Written []string
	Kept    []string
	// Reason is why the PKI was (re)generated; empty when everything was kept.
	Reason string
}

// devLeaf describes one leaf of the development PKI.
type devLeaf struct {
	name, certFile, keyFile string
	client                  bool
	hosts                   []string // server SANs; for clients the identity is name
}

// publicName is the Common Name of vault-proxy's public certificate. It has
// no URI SAN: it is not a service identity.
const publicName = "vault-proxy-public"

var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

func devLeaves() []devLeaf {
	return []devLeaf{
		{
			name: VaultProxyName, certFile: VaultProxyCertFile, keyFile: VaultProxyKeyFile,
			hosts: append(append([]string{}, loopbackHosts...), VaultProxyName, SPIFFEID(VaultProxyName).String()),
		},
		{
			name: publicName, certFile: PublicCertFile, keyFile: PublicKeyFile,
			hosts: append([]string{}, loopbackHosts...),
		},
		{
			name: CoreAPIName, certFile: CoreAPICertFile, keyFile: CoreAPIKeyFile,
			client: true,
		},
	}
}

func devFileNames() []string {
	names := []string{CAFile, CAKeyFile}
	for _, l := range devLeaves() {
		names = append(names, l.certFile, l.keyFile)
	}
	return names
}

// WriteDevPKI makes sure dir holds a usable development PKI: a CA (ca.pem,
// ca-key.pem) and three leaves signed by it: vault-proxy.pem (server
// certificate of vault-proxy's internal mTLS listener; SANs localhost,
// 127.0.0.1, ::1, vault-proxy, spiffe://payorch.local/vault-proxy),
// public.pem (vault-proxy's public listener; SANs localhost, 127.0.0.1, ::1)
// and core-api.pem (client certificate; identity core-api), each with its
// -key.pem.
//
// It is idempotent: if every file is present and sound (parses, keys match,
// leaves chain to the CA with the right usage and names, key files not
// readable by others) and nothing expires within RenewBefore of now, it
// changes nothing. Otherwise it regenerates all of them, CA included, so the
// set on disk is always consistent; services pick up the new files when
// restarted (KeyPair.Reload can swap a leaf in place, but a regenerated set
// has a new CA, and the services read their CA pools once, at start). The directory is created with
// mode 0700 (and tightened to 0700 if it is looser), keys are written 0600,
// certificates 0644, each by an atomic write (temporary file and rename).
func WriteDevPKI(dir string, now time.Time) error {
	_, err := EnsureDevPKI(dir, now)
	return err
}

// EnsureDevPKI is WriteDevPKI, reporting which files it wrote or kept.
func EnsureDevPKI(dir string, now time.Time) (DevPKIResult, error) {
	if dir == "" {
		return DevPKIResult{}, errors.New("certs: dev PKI directory is empty")
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return DevPKIResult{}, fmt.Errorf("certs: create dev PKI directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return DevPKIResult{}, fmt.Errorf("certs: dev PKI directory: %w", err)
	}
	if !fi.IsDir() {
		return DevPKIResult{}, fmt.Errorf("certs: dev PKI path %s is not a directory", dir)
	}
	if fi.Mode().Perm() != dirMode {
		if err := os.Chmod(dir, dirMode); err != nil {
			return DevPKIResult{}, fmt.Errorf("certs: restrict dev PKI directory: %w", err)
		}
	}

	reason := checkDevPKI(dir, now)
	if reason == "" {
		return DevPKIResult{Kept: devFileNames()}, nil
	}
	written, err := generateDevPKI(dir, now, CALifetime, LeafLifetime)
	return DevPKIResult{Written: written, Reason: reason}, err
}

// checkDevPKI returns why the PKI in dir must be regenerated, or "" if it
// can be kept.
func checkDevPKI(dir string, now time.Time) string {
	f := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range devFileNames() {
		fi, err := os.Lstat(f(name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return name + " is missing"
		case err != nil:
			return fmt.Sprintf("%s: %v", name, err)
		case !fi.Mode().IsRegular():
			return name + " is not a regular file"
		}
	}
	for _, name := range []string{CAKeyFile, VaultProxyKeyFile, PublicKeyFile, CoreAPIKeyFile} {
		// A key others could read may have been copied: treat it as exposed.
		if fi, err := os.Stat(f(name)); err != nil || fi.Mode().Perm()&^keyMode != 0 {
			return name + " is accessible to group or others"
		}
	}
	renewAt := now.Add(RenewBefore)

	ca, err := LoadAuthority(f(CAFile), f(CAKeyFile))
	if err != nil {
		return err.Error()
	}
	if err := ca.Cert.CheckSignatureFrom(ca.Cert); err != nil {
		return CAFile + " is not self-signed"
	}
	if now.Before(ca.Cert.NotBefore) {
		return CAFile + " is not valid yet"
	}
	if renewAt.After(ca.Cert.NotAfter) {
		return fmt.Sprintf("%s expires %s", CAFile, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, l := range devLeaves() {
		chain, _, err := loadPair(f(l.certFile), f(l.keyFile))
		if err != nil {
			return err.Error()
		}
		leaf := chain[0]
		usage := x509.ExtKeyUsageServerAuth
		if l.client {
			usage = x509.ExtKeyUsageClientAuth
		}
		if _, err := leaf.Verify(x509.VerifyOptions{
			Roots:       ca.Pool(),
			CurrentTime: now,
			KeyUsages:   []x509.ExtKeyUsage{usage},
		}); err != nil {
			return fmt.Sprintf("%s does not verify against %s: %v", l.certFile, CAFile, err)
		}
		if renewAt.After(leaf.NotAfter) {
			return fmt.Sprintf("%s expires %s", l.certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		if l.client {
			if id, err := Identity(leaf); err != nil || id != l.name {
				return fmt.Sprintf("%s is not a certificate for %s", l.certFile, l.name)
			}
			continue
		}
		if leaf.Subject.CommonName != l.name {
			return fmt.Sprintf("%s is not a certificate for %s", l.certFile, l.name)
		}
		for _, h := range l.hosts {
			if h == SPIFFEID(l.name).String() {
				if len(leaf.URIs) != 1 || leaf.URIs[0].String() != h {
					return fmt.Sprintf("%s lacks URI SAN %s", l.certFile, h)
				}
				continue
			}
			if err := leaf.VerifyHostname(h); err != nil {
				return fmt.Sprintf("%s does not cover %s", l.certFile, h)
			}
		}
	}
	return ""
}

// generateDevPKI issues a new CA and leaves and writes them all, returning
// the names written.
func generateDevPKI(dir string, now time.Time, caLifetime, leafLifetime time.Duration) ([]string, error) {
	ca, err := NewCA("payorch development CA", now, caLifetime)
	if err != nil {
		return nil, err
	}
	type file struct {
		name string
		data []byte
		mode fs.FileMode
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	files := []file{{CAFile, ca.CertPEM(), certMode}, {CAKeyFile, caKey, keyMode}}
	for _, l := range devLeaves() {
		var leaf *Leaf
		if l.client {
			leaf, err = ca.IssueClient(l.name, now, leafLifetime)
		} else {
			leaf, err = ca.IssueServer(l.name, l.hosts, now, leafLifetime)
		}
		if err != nil {
			return nil, err
		}
		key, err := leaf.KeyPEM()
		if err != nil {
			return nil, err
		}
		files = append(files, file{l.certFile, leaf.CertPEM(), certMode}, file{l.keyFile, key, keyMode})
	}
	// A crash part-way leaves a mixed set; checkDevPKI then finds a leaf
	// that does not verify against ca.pem and the next run starts over.
	var written []string
	for _, fl := range files {
		if err := writeFileAtomic(dir, fl.name, fl.data, fl.mode); err != nil {
			return written, err
		}
		written = append(written, fl.name)
	}
	syncDir(dir)
	return written, nil
}

// writeFileAtomic writes data to dir/name through a temporary file in the
// same directory, created with mode 0600 and set to mode before any data is
// written, synced, then renamed over the target.
func writeFileAtomic(dir, name string, data []byte, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("certs: write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// Chmod on the open file is not subject to the umask.
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("certs: write %s: %w", name, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("certs: write %s: %w", name, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("certs: write %s: %w", name, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", name, err)
	}
	if err = os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("certs: write %s: %w", name, err)
	}
	return nil
}

// syncDir makes the renames durable. Best effort: some file systems refuse
// to sync a directory, and the files themselves are already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
