package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	corehttp "github.com/payorch/core-api/httpapi"
	vphttp "github.com/payorch/vault-proxy/httpapi"
)

// API is one service's OpenAPI document, loaded and routed by kin-openapi.
type API struct {
	Name   string
	Doc    *openapi3.T
	router routers.Router
}

// APIs are the two documents, loaded once per test binary from the bytes
// the services embed (and serve at GET /openapi.json).
var APIs = sync.OnceValues(func() (map[string]*API, error) {
	out := map[string]*API{}
	for name, raw := range map[string][]byte{"core-api": corehttp.OpenAPIDocument, "vault-proxy": vphttp.OpenAPIDocument} {
		doc, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			return nil, fmt.Errorf("openapi: load %s: %w", name, err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", name, err)
		}
		// Route on the path alone: the stack listens on loopback port 0,
		// not on the documents' servers.
		routed := *doc
		routed.Servers = nil
		r, err := legacy.NewRouter(&routed)
		if err != nil {
			return nil, fmt.Errorf("openapi: router %s: %w", name, err)
		}
		out[name] = &API{Name: name, Doc: doc, router: r}
	}
	return out, nil
})

// apisFor returns the documents that describe a request to url, in the
// order to try them: core-api's listener, vault-proxy's public listener
// (which passes routes it does not serve to core-api), its internal and
// admin listeners. A URL of none of them (a test's own target server) has
// none.
func (s *Stack) apisFor(url string) []string {
	switch {
	case s.CoreURL != "" && strings.HasPrefix(url, s.CoreURL+"/"):
		return []string{"core-api"}
	case s.PublicURL != "" && strings.HasPrefix(url, s.PublicURL+"/"):
		return []string{"vault-proxy", "core-api"}
	case s.InternalURL != "" && strings.HasPrefix(url, s.InternalURL+"/"),
		s.AdminURL != "" && strings.HasPrefix(url, s.AdminURL+"/"):
		return []string{"vault-proxy"}
	}
	return nil
}

// undocumented remembers the routes already reported, so a test that
// calls one many times reports it once.
var undocumented sync.Map

// CheckAPI validates an exchange with one of the stack's listeners against
// the service's OpenAPI document and fails t on a mismatch:
//
//   - every response (status, X-Request-Id and other declared headers,
//     content type, body) against the operation's documented response; a
//     status the operation does not document is a mismatch;
//   - the request (parameters and body) only when the service accepted it
//     (2xx): tests send malformed requests on purpose, and what the
//     service refuses need not match the document, but what it accepts
//     must;
//   - a route in no document is reported (t.Logf) and not validated,
//     except that an error response must still be the Error envelope.
//
// reqBody is the body that was sent (nil for none).
func (s *Stack) CheckAPI(t testing.TB, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	t.Helper()
	names := s.apisFor(req.URL.String())
	if len(names) == 0 {
		return
	}
	apis, err := APIs()
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	var api *API
	var route *routers.Route
	var params map[string]string
	for _, n := range names {
		if route, params, err = apis[n].router.FindRoute(req); err == nil {
			api = apis[n]
			break
		}
	}
	if api == nil {
		key := names[0] + " " + req.Method + " " + req.URL.Path
		if _, seen := undocumented.LoadOrStore(key, true); !seen {
			t.Logf("openapi: %s %s is in no document (%s); not validated", req.Method, req.URL.Path, strings.Join(names, ", "))
		}
		if resp.StatusCode >= 400 {
			if err := validateError(apis[names[len(names)-1]].Doc, resp, respBody); err != nil {
				t.Errorf("openapi: %s %s -> %d: error body: %v", req.Method, req.URL.Path, resp.StatusCode, err)
			}
		}
		return
	}

	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{
		Request:    requestWithBody(req, reqBody),
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
			SkipSettingDefaults: true,
			MultiError:          true,
		},
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("openapi: %s %s -> %d: the service accepted a request its document (%s) refuses: %v",
				req.Method, req.URL.Path, resp.StatusCode, api.Name, err)
		}
	}

	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(respBody)
	// An operation that relays a third party's answer (POST /vault-forward)
	// names the header that marks it; such a response is described by the
	// operation's default response, whatever its status, and its body is
	// the third party's.
	if h, ok := route.Operation.Extensions["x-upstream-status-header"].(string); ok && resp.Header.Get(h) != "" {
		op := *route.Operation
		op.Responses = openapi3.NewResponses()
		op.Responses.Set("default", route.Operation.Responses.Default())
		r := *route
		r.Operation = &op
		in.Route = &r
		out.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("openapi: %s %s -> %d does not match %s's document (%s %s): %v\nbody: %s",
			req.Method, req.URL.Path, resp.StatusCode, api.Name, route.Method, route.Path, err, truncate(respBody))
	}
}

// validateError checks an error response against the Error schema alone.
func validateError(doc *openapi3.T, resp *http.Response, body []byte) error {
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content type %q, want application/json", ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("not JSON: %w: %s", err, truncate(body))
	}
	schema := doc.Components.Schemas["Error"]
	if schema == nil || schema.Value == nil {
		return errors.New("the document has no Error schema")
	}
	if err := schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("%w: %s", err, truncate(body))
	}
	return nil
}

func requestWithBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(context.Background())
	r.Body = http.NoBody
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	return r
}

func truncate(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// UndocumentedRoutes lists the routes CheckAPI found in no document so far
// ("service METHOD /path"), sorted.
func UndocumentedRoutes() []string {
	var out []string
	undocumented.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	sort.Strings(out)
	return out
}
