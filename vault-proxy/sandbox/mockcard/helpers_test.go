package mockcard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/logging"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// sim is one simulator on loopback port 0 and a client for it.
type sim struct {
	*mockcard.Main
	logs   *logging.LogCatcher
	client *http.Client
	base   string
}

// now is the simulator's clock in the tests: expiries are judged by it.
var now = time.Date(2030, time.June, 15, 12, 0, 0, 0, time.UTC)

// start runs a simulator with cfg (zero fields take their defaults) and
// closes it when t ends.
func start(t testing.TB, cfg mockcard.Config) *sim {
	t.Helper()
	if cfg.Environment == "" {
		cfg.Environment = config.Sandbox
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	logs := &logging.LogCatcher{}
	m, err := mockcard.New(cfg, logging.New(logs, slog.LevelDebug))
	if err != nil {
		t.Fatalf("mock-card: %v", err)
	}
	m.Now = func() time.Time { return now }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.Listener = ln
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("mock-card: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &sim{Main: m, logs: logs, client: &http.Client{Timeout: 10 * time.Second}, base: m.URL()}
}

// testAPIKey is a key of the test form, which mock-card accepts.
const testAPIKey = mockcard.TestKeyPrefix + "helpers0key"

// call sends body (a string as it is, anything else as JSON; nil: no body)
// with the Idempotency-Key key (none when empty) and returns the answer.
func (s *sim) call(t testing.TB, method, path, key string, body any) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, bodyReader(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw, resp.Header
}

func bodyReader(t testing.TB, body any) io.Reader {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.NewReader(raw)
	}
}

// wireFields are the fields of an authorization, as
// docs/sandbox/mock-card.md lists them: every one always present.
var wireFields = []string{"amount", "authorized_amount", "avs_result", "captured_amount", "captures", "cart_items", "created_at", "currency",
	"cvv_result", "decline_code", "id", "idempotency_key", "merchant_descriptor", "merchant_initiated", "payment_source",
	"previous_scheme_transaction_id", "refunded_amount", "refunds",
	"response_code", "response_message", "scheme", "scheme_transaction_id", "soft_descriptor", "status", "three_d_secure", "type", "voided_at"}

// decode reads an authorization, holding its fields to wireFields.
func decode(t testing.TB, raw []byte) mockcard.Authorization {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, wireFields) {
		t.Fatalf("fields %v, want %v: %s", got, wireFields, raw)
	}
	var a mockcard.Authorization
	if err := json.Unmarshal(raw, &a); err != nil || a.Type != "authorization" {
		t.Fatalf("not an authorization: %v: %s", err, raw)
	}
	return a
}

// str reads a nullable string field ("<null>" for null).
func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// request is an authorization request with a Visa test card, approved at
// any amount the table does not name; mutate changes it.
func request(amount int64, mutate ...func(r map[string]any)) map[string]any {
	r := map[string]any{
		"amount": amount, "currency": "EUR", "capture": false,
		"card":           map[string]any{"number": "4111111111111111", "expiry_month": "12", "expiry_year": "2031", "security_code": "123"},
		"billing":        map[string]any{"postal_code": "10115"},
		"payment_source": "ecommerce",
		"options":        map[string]any{"merchant_id": "m-1", "descriptor": "SHOP"},
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

func cardField(name string, v any) func(map[string]any) {
	return func(r map[string]any) { r["card"].(map[string]any)[name] = v }
}

func withoutCardField(name string) func(map[string]any) {
	return func(r map[string]any) { delete(r["card"].(map[string]any), name) }
}

func field(name string, v any) func(map[string]any) {
	return func(r map[string]any) { r[name] = v }
}

// authorize creates an authorization and insists on 201.
func (s *sim) authorize(t *testing.T, key string, body any) mockcard.Authorization {
	t.Helper()
	code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", key, body)
	if code != http.StatusCreated {
		t.Fatalf("authorize: %d %s", code, raw)
	}
	return decode(t, raw)
}

// stats is GET /sandbox/stats for one idempotency key.
func (s *sim) stats(t *testing.T, key string) mockcard.Stats {
	t.Helper()
	code, raw, _ := s.call(t, http.MethodGet, "/sandbox/stats?idempotency_key="+key, "", nil)
	var st mockcard.Stats
	if code != http.StatusOK || json.Unmarshal(raw, &st) != nil || st.Key == nil {
		t.Fatalf("stats: %d %s", code, raw)
	}
	return st
}

// apiError decodes the error envelope and checks its status and code.
func apiError(t *testing.T, code int, raw []byte, wantStatus int, wantCode string) map[string]any {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(raw, &e); err != nil || e["type"] != "error" {
		t.Fatalf("not the error envelope: %d %s", code, raw)
	}
	if code != wantStatus || e["code"] != wantCode || e["status"] != float64(wantStatus) {
		t.Fatalf("got %d %s, want %d %s", code, raw, wantStatus, wantCode)
	}
	return e
}
