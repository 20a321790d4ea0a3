package e2e

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
)

func getJSON(t *testing.T, c *http.Client, url string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Request-Id", "probe-123")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s: body is not JSON: %q", url, raw)
	}
	return resp.StatusCode, body, resp.Header
}

func TestEveryListenerIsHealthyAndReady(t *testing.T) {
	s := stack.Start(t)
	listeners := []struct {
		name   string
		client *http.Client
		base   string
		checks []string
	}{
		{"vault-proxy public", s.PublicClient, s.PublicURL, []string{"postgres", "vault", "audit-spool"}},
		{"vault-proxy internal", s.InternalClient, s.InternalURL, []string{"postgres", "vault", "audit-spool"}},
		{"vault-proxy admin", http.DefaultClient, s.AdminURL, []string{"postgres", "vault", "audit-spool"}},
		{"core-api", http.DefaultClient, s.CoreURL, []string{"postgres", "vault-proxy"}},
	}
	for _, l := range listeners {
		t.Run(l.name, func(t *testing.T) {
			code, body, hdr := getJSON(t, l.client, l.base+"/healthz")
			if code != 200 || body["status"] != "ok" {
				t.Fatalf("/healthz = %d %v", code, body)
			}
			if hdr.Get("X-Request-Id") != "probe-123" {
				t.Fatalf("request id not echoed: %q", hdr.Get("X-Request-Id"))
			}
			code, body, _ = getJSON(t, l.client, l.base+"/readyz")
			if code != 200 || body["status"] != "ready" {
				t.Fatalf("/readyz = %d %v", code, body)
			}
			checks, _ := body["checks"].(map[string]any)
			for _, c := range l.checks {
				if checks[c] != "ok" {
					t.Fatalf("/readyz check %s = %v", c, checks[c])
				}
			}
		})
	}
}

func TestUnknownRouteAnswersInTheErrorEnvelope(t *testing.T) {
	s := stack.Start(t)
	for _, u := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"core-api", http.DefaultClient, s.CoreURL + "/no-such-route"},
		{"vault-proxy internal", s.InternalClient, s.InternalURL + "/no-such-route"},
	} {
		t.Run(u.name, func(t *testing.T) {
			resp, err := u.client.Get(u.url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			e, err := apierror.Parse(raw)
			if err != nil {
				t.Fatalf("not an error envelope: %q", raw)
			}
			if resp.StatusCode != 404 || e.Code != "not_found" || e.RequestID == "" || e.Details == nil {
				t.Fatalf("got %d %+v", resp.StatusCode, e)
			}
		})
	}
}

// The internal listener is the door to detokenized calls: only core-api's
// certificate from the project CA opens it.
func TestInternalListenerRequiresCoreAPICertificate(t *testing.T) {
	s := stack.Start(t)
	pool, err := certs.LoadCertPool(s.PKI.CA)
	if err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	if err := certs.WriteDevPKI(otherDir, time.Now()); err != nil {
		t.Fatal(err)
	}
	other := certs.DevPKIFiles(otherDir)
	foreign, err := tls.LoadX509KeyPair(other.CoreAPICert, other.CoreAPIKey)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := tls.LoadX509KeyPair(s.PKI.CoreAPICert, s.PKI.CoreAPIKey)
	if err != nil {
		t.Fatal(err)
	}
	wrongIdentity, err := tls.LoadX509KeyPair(s.PKI.VaultProxyCert, s.PKI.VaultProxyKey)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cert []tls.Certificate
		ok   bool
	}{
		{"no client certificate", nil, false},
		{"core-api certificate from another CA", []tls.Certificate{foreign}, false},
		{"our CA but not a client identity", []tls.Certificate{wrongIdentity}, false},
		{"core-api certificate from our CA", []tls.Certificate{ours}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: tc.cert, MinVersion: tls.VersionTLS12},
			}}
			resp, err := c.Get(s.InternalURL + "/healthz")
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("accepted with status %d; want the handshake refused", resp.StatusCode)
			}
			if !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("unexpected failure: %v", err)
			}
		})
	}
}

func TestReadinessFailsWhenADependencyIsDown(t *testing.T) {
	s := stack.Start(t)
	if err := s.VaultProxy.Close(); err != nil {
		t.Fatal(err)
	}
	code, body, _ := getJSON(t, http.DefaultClient, s.CoreURL+"/readyz")
	checks, _ := body["checks"].(map[string]any)
	if code != http.StatusServiceUnavailable || body["status"] != "not_ready" || checks["vault-proxy"] != "failed" || checks["postgres"] != "ok" {
		t.Fatalf("/readyz with vault-proxy down = %d %v", code, body)
	}
	if strings.Contains(s.Logs.String(), "PRIVATE KEY") {
		t.Fatal("a key reached the logs")
	}
}
