package transit

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vault/api reads environment variables of its own, leniently; none may
// change the link to Vault, whose answers carry data keys: not TLS checks
// (VAULT_SKIP_VERIFY), not a proxy (VAULT_HTTP_PROXY, VAULT_PROXY_ADDR),
// not the roots (VAULT_CACERT: the service's loader reads it into
// Config.CAFile), not a namespace or extra headers.
func TestTheLibrarysEnvironmentDoesNotReachTheClient(t *testing.T) {
	var reached int
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		if r.Header.Get("X-Injected") != "" || r.Header.Get("X-Vault-Namespace") != "" || r.Header.Get("X-Vault-Request") != "true" {
			t.Errorf("request carried %v", r.Header)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"initialized":true,"sealed":false,"standby":false}`))
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"VAULT_SKIP_VERIFY": "TRUE", "VAULT_HTTP_PROXY": "http://127.0.0.1:1", "VAULT_PROXY_ADDR": "http://127.0.0.1:1",
		"VAULT_CACERT": caFile, "VAULT_NAMESPACE": "elsewhere", "VAULT_HEADERS": `{"X-Injected":"1"}`,
	} {
		t.Setenv(k, v)
	}

	// Without Config.CAFile the test server's certificate is not trusted,
	// whatever VAULT_SKIP_VERIFY and VAULT_CACERT say.
	c, err := New(Config{Addr: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an untrusted certificate was accepted: %v", err)
	}
	if reached != 0 {
		t.Fatal("a request reached the server over an unverified connection")
	}
	// With it, the request goes straight to the server: no proxy, no
	// namespace, no injected header.
	c, err = New(Config{Addr: srv.URL, Token: "t", CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatalf("health through the configured CA: %v", err)
	}
	if reached == 0 {
		t.Fatal("the request did not reach the server")
	}
	if _, err := New(Config{Addr: srv.URL, Token: "t", CAFile: filepath.Join(t.TempDir(), "missing.pem")}); !errors.Is(err, ErrVault) {
		t.Fatalf("a missing CA file: %v", err)
	}
}
