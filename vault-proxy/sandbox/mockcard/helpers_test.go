package mockcard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
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
func start(t *testing.T, cfg mockcard.Config) *sim {
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

// call sends body (a string as it is, anything else as JSON; nil: no body)
// with the Idempotency-Key key (none when empty) and returns the answer.
func (s *sim) call(t *testing.T, method, path, key string, body any) (int, []byte, http.Header) {
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

func bodyReader(t *testing.T, body any) io.Reader {
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

// authorization is the simulator's answer, decoded.
type authorization struct {
	Type                string      `json:"type"`
	ID                  string      `json:"id"`
	IdempotencyKey      string      `json:"idempotency_key"`
	Status              string      `json:"status"`
	Amount              int64       `json:"amount"`
	Currency            string      `json:"currency"`
	AuthorizedAmount    int64       `json:"authorized_amount"`
	CapturedAmount      int64       `json:"captured_amount"`
	RefundedAmount      int64       `json:"refunded_amount"`
	ResponseCode        string      `json:"response_code"`
	ResponseMessage     string      `json:"response_message"`
	DeclineCode         *string     `json:"decline_code"`
	AVSResult           *string     `json:"avs_result"`
	CVVResult           *string     `json:"cvv_result"`
	Scheme              *string     `json:"scheme"`
	SchemeTransactionID *string     `json:"scheme_transaction_id"`
	MerchantInitiated   bool        `json:"merchant_initiated"`
	PaymentSource       string      `json:"payment_source"`
	Captures            []operation `json:"captures"`
	Refunds             []operation `json:"refunds"`
	CreatedAt           string      `json:"created_at"`
	VoidedAt            *string     `json:"voided_at"`
}

// operation is a capture or a refund in an authorization's lists.
type operation struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
	Amount         int64  `json:"amount"`
	CreatedAt      string `json:"created_at"`
}

func decode(t *testing.T, raw []byte) authorization {
	t.Helper()
	var a authorization
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // the doc lists every field; a new one belongs there too
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("not an authorization: %v: %s", err, raw)
	}
	if a.Type != "authorization" {
		t.Fatalf("type %q: %s", a.Type, raw)
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
func (s *sim) authorize(t *testing.T, key string, body any) authorization {
	t.Helper()
	code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", key, body)
	if code != http.StatusCreated {
		t.Fatalf("authorize: %d %s", code, raw)
	}
	return decode(t, raw)
}

// stats is GET /sandbox/stats for one idempotency key.
type stats struct {
	AuthorizationRequests int64 `json:"authorization_requests"`
	Replays               int64 `json:"replays"`
	Charges               int64 `json:"charges"`
	Captures              int64 `json:"captures"`
	Voids                 int64 `json:"voids"`
	Refunds               int64 `json:"refunds"`
	Stored                int   `json:"stored_authorizations"`
	Forgotten             int64 `json:"forgotten_authorizations"`
	Key                   *struct {
		Key      string `json:"key"`
		Requests int64  `json:"requests"`
		Charges  int64  `json:"charges"`
	} `json:"idempotency_key"`
}

func (s *sim) stats(t *testing.T, key string) stats {
	t.Helper()
	code, raw, _ := s.call(t, http.MethodGet, "/sandbox/stats?idempotency_key="+key, "", nil)
	var st stats
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
