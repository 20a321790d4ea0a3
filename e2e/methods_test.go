package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
)

// Unknown routes and methods answer in the error envelope; on vault-proxy's
// public listener a method vault-proxy does not serve on a path is core-api's.
func TestRoutesAndMethods(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "*.read", "*.write")
	cases := []struct {
		name   string
		client *http.Client
		method string
		url    string
		status int
		code   string
	}{
		{"core: unknown route", http.DefaultClient, http.MethodGet, s.CoreURL + "/nope", 404, "not_found"},
		{"core: wrong method", http.DefaultClient, http.MethodPatch, s.CoreURL + "/buyers", 405, "method_not_allowed"},
		{"vault-proxy: GET /payment-methods passes through to core-api's list", s.PublicClient, http.MethodGet, s.PublicURL + "/payment-methods", 200, ""},
		{"vault-proxy: GET /buyers passes through", s.PublicClient, http.MethodGet, s.PublicURL + "/buyers", 200, ""},
		{"vault-proxy: wrong method on a core route", s.PublicClient, http.MethodPatch, s.PublicURL + "/buyers", 405, "method_not_allowed"},
		{"vault-proxy internal: wrong method", s.InternalClient, http.MethodGet, s.InternalURL + "/internal/detokenize", 405, "method_not_allowed"},
		{"vault-proxy: wrong method on its own route", s.PublicClient, http.MethodPatch, s.PublicURL + "/vault-forward/configs", 405, "method_not_allowed"},
		{"vault-proxy: GET /vault-forward", s.PublicClient, http.MethodGet, s.PublicURL + "/vault-forward", 405, "method_not_allowed"},
		{"vault-proxy: wrong method on a config", s.PublicClient, http.MethodPost, s.PublicURL + "/vault-forward/configs/00000000-0000-4000-8000-000000000000", 405, "method_not_allowed"},
		{"vault-proxy: wrong method on a network token", s.PublicClient, http.MethodPut,
			s.PublicURL + "/payment-methods/00000000-0000-4000-8000-000000000000/network-tokens/00000000-0000-4000-8000-000000000000", 405, "method_not_allowed"},
		{"vault-proxy: DELETE /audit-events", s.PublicClient, http.MethodDelete, s.PublicURL + "/audit-events", 405, "method_not_allowed"},
		{"vault-proxy: a path both serve passes the method on", s.PublicClient, http.MethodGet, s.PublicURL + "/three-ds-scenarios", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := s.Do(t, tc.client, tc.method, tc.url, tok, nil)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, raw)
			}
			if tc.code != "" {
				e, err := apierror.Parse(raw)
				if err != nil || e.Code != tc.code {
					t.Fatalf("body %s, want code %s", raw, tc.code)
				}
			}
		})
	}
	t.Run("vault-proxy's 405 names the methods it serves", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPatch, s.PublicURL+"/vault-forward/configs", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := s.PublicClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, POST" {
			t.Fatalf("%d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
}

// A body over the size limit is refused from its Content-Length, before it
// is read, in the error envelope. (A client that keeps writing the body
// after the answer sees its connection reset, so the test speaks HTTP on
// a raw TLS connection.)
func TestOversizedBodyGets413InTheEnvelope(t *testing.T) {
	s := stack.Start(t)
	status, raw := rawRequest(t, s, fmt.Sprintf("POST /payment-methods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 5<<20))
	e, err := apierror.Parse(raw)
	if status != http.StatusRequestEntityTooLarge || err != nil || e.Code != "too_large" || e.RequestID == "" {
		t.Fatalf("got %d %s", status, raw)
	}
}

// rawRequest writes req as it is to vault-proxy's public listener, on a
// TLS connection of its own, and reads one answer: for requests Go's
// client will not write.
func rawRequest(t *testing.T, s *stack.Stack, req string) (int, []byte) {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.PublicURL, "https://"), s.PublicClient.Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
