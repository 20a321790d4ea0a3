package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	corehttp "github.com/payorch/core-api/httpapi"
	"github.com/payorch/e2e/stack"
	vphttp "github.com/payorch/vault-proxy/httpapi"
)

// Both services serve their embedded OpenAPI 3.1 document at
// /openapi.json, without a token; vault-proxy's public listener serves its
// own (not core-api's, which it would otherwise pass through).
func TestOpenAPIDocumentsAreServed(t *testing.T) {
	s := stack.Start(t)
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
		want   []byte
	}{
		{"core-api", http.DefaultClient, s.CoreURL + "/openapi.json", corehttp.OpenAPIDocument},
		{"vault-proxy public", s.PublicClient, s.PublicURL + "/openapi.json", vphttp.OpenAPIDocument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := s.Do(t, tc.client, http.MethodGet, tc.url, "", nil)
			if code != http.StatusOK || !bytes.Equal(raw, tc.want) {
				t.Fatalf("GET %s = %d, %d bytes; want 200 and the %d embedded bytes", tc.url, code, len(raw), len(tc.want))
			}
			var doc struct {
				OpenAPI string `json:"openapi"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
				t.Fatalf("openapi = %q (%v), want 3.1.x", doc.OpenAPI, err)
			}
		})
	}
}

// Health and readiness on every listener match the documents (stack.Do
// validates them; the foundation tests call these without it).
func TestOpenAPIHealthOnEveryListener(t *testing.T) {
	s := stack.Start(t)
	for _, l := range []struct {
		client *http.Client
		base   string
	}{{http.DefaultClient, s.CoreURL}, {s.PublicClient, s.PublicURL}, {s.InternalClient, s.InternalURL}, {http.DefaultClient, s.AdminURL}} {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, raw := s.Do(t, l.client, http.MethodGet, l.base+path, "", nil); code != http.StatusOK {
				t.Errorf("GET %s%s = %d %s", l.base, path, code, raw)
			}
		}
	}
}

// The schemas both documents carry (vault-proxy returns core-api's payment
// method and both share the envelopes) are the same in both.
func TestOpenAPISharedSchemasAgree(t *testing.T) {
	apis, err := stack.APIs()
	if err != nil {
		t.Fatal(err)
	}
	core, vp := apis["core-api"].Doc, apis["vault-proxy"].Doc
	shared := 0
	for name, c := range core.Components.Schemas {
		v, ok := vp.Components.Schemas[name]
		if !ok {
			continue
		}
		shared++
		cj, _ := json.Marshal(c)
		vj, _ := json.Marshal(v)
		if !bytes.Equal(cj, vj) {
			t.Errorf("components/schemas/%s differs between core-api's and vault-proxy's documents", name)
		}
	}
	for _, group := range []string{"responses", "parameters", "headers"} {
		cg, vg := componentGroup(core, group), componentGroup(vp, group)
		for name, c := range cg {
			if v, ok := vg[name]; ok {
				cj, _ := json.Marshal(c)
				vj, _ := json.Marshal(v)
				if !bytes.Equal(cj, vj) {
					t.Errorf("components/%s/%s differs between the documents", group, name)
				}
			}
		}
	}
	if shared < 8 {
		t.Fatalf("only %d shared schemas; the documents have drifted apart", shared)
	}
}

func componentGroup(doc *openapi3.T, group string) map[string]any {
	raw, _ := json.Marshal(doc.Components)
	var m map[string]map[string]any
	_ = json.Unmarshal(raw, &m)
	return m[group]
}

// The check in stack.Do is live: a response that breaks the document is
// caught (here, a health answer with an extra field, an error without its
// envelope, and a status the operation does not document).
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	s := stack.Start(t)
	for _, tc := range []struct {
		name   string
		url    string
		status int
		ctype  string
		body   string
	}{
		{"extra field", s.CoreURL + "/healthz", 200, "application/json", `{"status":"ok","uptime":3}`},
		{"error not in the envelope", s.CoreURL + "/buyers", 400, "text/plain", "bad request"},
		{"error without type", s.CoreURL + "/buyers", 404, "application/json", `{"code":"not_found","status":404,"message":"x","details":[]}`},
		{"undocumented status", s.CoreURL + "/buyers", 418, "application/json", `{"type":"error","code":"teapot","status":418,"message":"x","details":[]}`},
		{"status mismatch", s.PublicURL + "/audit-events", 403, "application/json", `{"type":"error","code":"forbidden","status":401,"message":"x","details":[]}`},
		{"bad forward config", s.PublicURL + "/vault-forward/configs", 200, "application/json", `{"items":[{"id":"x"}],"limit":20,"next_cursor":null,"previous_cursor":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Content-Type": {tc.ctype}, "X-Request-Id": {"r1"}},
				Body: io.NopCloser(strings.NewReader(tc.body))}
			rec := &recordingT{TB: t}
			s.CheckAPI(rec, req, nil, resp, []byte(tc.body))
			if !rec.failed {
				t.Fatal("the drift was not caught")
			}
		})
	}
}

// recordingT records failures instead of failing the test.
type recordingT struct {
	testing.TB
	failed bool
}

func (r *recordingT) Errorf(string, ...any) { r.failed = true }
func (r *recordingT) Helper()               {}
