package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
)

// core-api chooses a detokenized call's method and path, and core-api is
// outside the PCI zone: neither may break the request line vault-proxy
// writes to the processor (a second request smuggled after a CR LF, a
// space ending the target early). Each is refused with 400 naming the
// field, before any card is opened: not one byte reaches the processor.
func TestDetokenizedCallRefusesARequestLineCoreAPICouldBreak(t *testing.T) {
	proc := newProcessor(t)
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	tok := s.Token(t, "payment-methods.write")
	id := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
	req := zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: "/v1/authorizations",
		Body: `{"n":"{{ CARD_NUMBER_1 }}"}`, PaymentMethod: []string{id}, Purpose: "authorization"}

	refusals := []struct {
		name         string
		method, path string
		pointer      string
	}{
		{"method with CR LF and a header", "POST\r\nX-Smuggled: 1", "", "/method"},
		{"method smuggling a whole request", "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nPOST", "", "/method"},
		{"method with a space", "POST /x", "", "/method"},
		{"TRACE", "TRACE", "", "/method"},
		{"CONNECT", "CONNECT", "", "/method"},
		{"OPTIONS", "OPTIONS", "", "/method"},
		{"HEAD", "head", "", "/method"},
		{"query with a space", "", "/v1/authorizations?x=1 HTTP/1.0", "/path"},
		{"query with CR LF", "", "/v1/authorizations?x=1\r\nHost: evil.example", "/path"},
		{"query with NUL", "", "/v1/authorizations?x=\x00", "/path"},
		{"query with a tab", "", "/v1/authorizations?x=\t1", "/path"},
		{"query with another control character", "", "/v1/authorizations?x=\x1b", "/path"},
		{"query with DEL", "", "/v1/authorizations?x=\x7f", "/path"},
		{"query with non-ASCII", "", "/v1/authorizations?x=\u00e9", "/path"},
		{"path with LF", "", "/v1/author\nizations", "/path"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := req
			if tc.method != "" {
				r.Method = tc.method
			}
			if tc.path != "" {
				r.Path = tc.path
			}
			code, raw := detokenize(t, s, "default", r)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", code, raw)
			}
			e, err := apierror.Parse(raw)
			if err != nil {
				t.Fatalf("not the error envelope: %s", raw)
			}
			if len(e.Details) != 1 || e.Details[0].Pointer != tc.pointer || e.Details[0].Location != apierror.LocationBody {
				t.Fatalf("the refusal does not name %s: %s", tc.pointer, raw)
			}
			if strings.Contains(string(raw), "Smuggled") || strings.Contains(string(raw), "evil.example") {
				t.Fatalf("the refusal echoes the request: %s", raw)
			}
		})
	}
	if n, hits := proc.received.Load(), proc.hits.Load(); n != 0 || hits != 0 {
		t.Fatalf("refused calls reached the processor: %d bytes, %d requests", n, hits)
	}

	// The allowed methods in any case, and none at all (POST), are sent
	// in their canonical form.
	for _, tc := range []struct{ method, line string }{
		{"post", "POST /v1/authorizations?x=1%20a"},
		{"Put", "PUT /v1/authorizations?x=1%20a"},
		{"", "POST /v1/authorizations?x=1%20a"},
	} {
		r := req
		r.Method, r.Path = tc.method, "/v1/authorizations?x=1%20a"
		code, raw := detokenize(t, s, "default", r)
		if code != 200 {
			t.Fatalf("method %q: %d %s", tc.method, code, raw)
		}
		if got := proc.lastLine(); got != tc.line {
			t.Fatalf("method %q: the processor received %q, want %q", tc.method, got, tc.line)
		}
	}
	assertNoCardDataLogged(t, s, testPANs...)
}
