package mockcard_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// Every bad request is 400 (or 413, 415) in the error envelope, with a
// detail pointing at each problem, and never repeats a card number.
func TestBadRequestsAreRefused(t *testing.T) {
	s := start(t, mockcard.Config{})
	const pan = "4111111111111111"
	cases := []struct {
		name     string
		key      string
		body     any
		ct       string
		status   int
		code     string
		pointers []string
	}{
		{"no idempotency key", "", request(1000), "", 400, "bad_request", []string{"Idempotency-Key"}},
		{"idempotency key too long", strings.Repeat("k", 256), request(1000), "", 400, "bad_request", []string{"Idempotency-Key"}},
		{"idempotency key with a space", "a b", request(1000), "", 400, "bad_request", []string{"Idempotency-Key"}},
		{"idempotency key holding a card number", "order-4111111111111111", request(1000), "", 400, "bad_request", []string{"Idempotency-Key"}},
		{"not JSON", "k", `{"amount":`, "", 400, "bad_request", nil},
		{"trailing data", "k", `{"amount":1} {}`, "", 400, "bad_request", nil},
		{"empty body", "k", "", "", 400, "bad_request", nil},
		{"not JSON content", "k", request(1000), "text/plain", 415, "unsupported_media_type", nil},
		{"too large", "k", `{"amount":1,"options":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, "", 413, "too_large", nil},
		{"unknown field", "k", request(1000, field("cvv", "123")), "", 400, "bad_request", []string{""}},
		{"card number as a JSON number", "k", `{"amount":1000,"currency":"EUR","card":{"number":4111111111111111,"expiry_month":"12","expiry_year":"2031"}}`, "", 400, "bad_request", []string{"/card/number"}},
		{"amount as a string", "k", request(0, field("amount", "1000")), "", 400, "bad_request", []string{"/amount"}},
		{"amount with a fraction", "k", `{"amount":10.5,"currency":"EUR","card":{"number":"4111111111111111","expiry_month":"12","expiry_year":"2031"}}`, "", 400, "bad_request", []string{"/amount"}},
		{"everything missing", "k", `{}`, "", 400, "bad_request", []string{"/amount", "/currency", "/card/number", "/card/expiry_month", "/card/expiry_year"}},
		{"bad values", "k", request(-1, field("currency", "eur"), cardField("number", "4111 1111 1111 1111"), cardField("expiry_month", "13"),
			cardField("expiry_year", "31"), cardField("security_code", "12"), field("payment_source", "pos")), "", 400, "bad_request",
			[]string{"/amount", "/currency", "/card/number", "/card/expiry_month", "/card/expiry_year", "/card/security_code", "/payment_source"}},
		{"amount too large", "k", request(100_000_000_000), "", 400, "bad_request", []string{"/amount"}},
		{"card number too long", "k", request(1000, cardField("number", "41111111111111111111")), "", 400, "bad_request", []string{"/card/number"}},
		{"options not an object", "k", request(1000, field("options", []int{1})), "", 400, "bad_request", []string{"/options"}},
		{"descriptors too long or with other characters", "k", request(1000, field("merchant_descriptor", strings.Repeat("A", 23)),
			field("soft_descriptor", "{{ CARD_NUMBER_1 }}")), "", 400, "bad_request", []string{"/merchant_descriptor", "/soft_descriptor"}},
		{"cart items without a name or quantity, or a negative price", "k", request(1000, field("cart_items", []map[string]any{
			{"name": "", "quantity": 0, "unit_amount": -1}})), "", 400, "bad_request",
			[]string{"/cart_items/0/name", "/cart_items/0/quantity", "/cart_items/0/unit_amount"}},
		{"merchant-initiated e-commerce", "k", request(1000, field("merchant_initiated", true), field("previous_scheme_transaction_id", "123456789012345")), "", 400, "bad_request",
			[]string{"/payment_source"}},
		{"previous id not alphanumeric", "k", request(1000, field("previous_scheme_transaction_id", "12-34")), "", 400, "bad_request",
			[]string{"/previous_scheme_transaction_id"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.base+"/v1/authorizations", bodyReader(t, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			ct := tc.ct
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+testAPIKey)
			if tc.key != "" {
				req.Header.Set("Idempotency-Key", tc.key)
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Type, Code string
				Status     int
				Details    []struct{ Location, Pointer, Message, Type string }
				RequestID  string `json:"request_id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || e.Code != tc.code || e.RequestID == "" || e.RequestID != resp.Header.Get("X-Request-Id") {
				t.Fatalf("got %d %+v, want %d %s", resp.StatusCode, e, tc.status, tc.code)
			}
			var got []string
			for _, d := range e.Details {
				got = append(got, d.Pointer)
				if strings.Contains(d.Message, pan) || strings.Contains(d.Message, "4111 1111") {
					t.Fatalf("a detail repeats the card number: %+v", d)
				}
			}
			if tc.pointers != nil && strings.Join(got, " ") != strings.Join(tc.pointers, " ") {
				t.Fatalf("details point at %q, want %q: %+v", got, tc.pointers, e.Details)
			}
		})
	}
	if st := s.stats(t, "k"); st.Charges != 0 {
		t.Fatalf("refused requests charged: %+v", st)
	}
}

// Unknown routes and methods answer in the envelope; the health routes
// are there.
func TestRoutes(t *testing.T) {
	s := start(t, mockcard.Config{})
	code, raw, _ := s.call(t, http.MethodGet, "/v1/charges", "", nil)
	apiError(t, code, raw, http.StatusNotFound, "not_found")
	code, raw, h := s.call(t, http.MethodDelete, "/v1/authorizations", "", nil)
	apiError(t, code, raw, http.StatusMethodNotAllowed, "method_not_allowed")
	if h.Get("Allow") != "GET, POST" {
		t.Fatalf("Allow: %q", h.Get("Allow"))
	}
	code, raw, _ = s.call(t, http.MethodGet, "/v1/authorizations", "", nil)
	apiError(t, code, raw, http.StatusBadRequest, "bad_request")
	// A key is echoed in answers: one holding a card number is refused,
	// and not repeated.
	for _, path := range []string{"/v1/authorizations?idempotency_key=k-4111111111111111", "/sandbox/stats?idempotency_key=4111-1111-1111-1111"} {
		code, raw, _ = s.call(t, http.MethodGet, path, "", nil)
		apiError(t, code, raw, http.StatusBadRequest, "bad_request")
		logging.AssertNoPANIn(t, "the refusal", string(raw), "4111111111111111")
	}
	if code, raw, _ = s.call(t, http.MethodGet, "/healthz", "", nil); code != 200 || !strings.Contains(string(raw), `"ok"`) {
		t.Fatalf("healthz: %d %s", code, raw)
	}
	if code, raw, _ = s.call(t, http.MethodGet, "/readyz", "", nil); code != 200 || !strings.Contains(string(raw), `"ready"`) {
		t.Fatalf("readyz: %d %s", code, raw)
	}
}

// Card numbers reach the simulator and go no further: not into its logs,
// not into its answers, not into its errors.
func TestNoCardNumberInLogsOrAnswers(t *testing.T) {
	s := start(t, mockcard.Config{})
	pans := []string{"4111111111111111", "5555555555554444", "378282246310005", "4111111111111112"}
	var answers strings.Builder
	for i, pan := range pans {
		for _, amt := range []int64{1000, 4051, 4096, mockcard.AmountProcessorError} {
			_, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", "pan-"+strconv.Itoa(i)+"-"+strconv.FormatInt(amt, 10),
				request(amt, cardField("number", pan), cardField("security_code", "1234")))
			answers.Write(raw)
			answers.WriteByte('\n')
		}
		_, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", "bad", request(-1, cardField("number", pan+"0")))
		answers.Write(raw)
		answers.WriteByte('\n')
	}
	logging.AssertNoPANIn(t, "answers", answers.String(), pans...)
	s.logs.AssertNoPAN(t, pans...)
	if strings.Contains(s.logs.String(), panscan.Replacement) {
		t.Fatal("some code tried to log a card number (the redactor caught it)")
	}
	if len(s.logs.Lines()) == 0 {
		t.Fatal("no log lines: the test proves nothing")
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeServerCert(t, dir)
	cases := []struct {
		name string
		env  map[string]string
		err  string // "" when valid
	}{
		{"defaults", map[string]string{"ENVIRONMENT": "sandbox"}, ""},
		{"development", map[string]string{"ENVIRONMENT": "development"}, ""},
		{"production", map[string]string{"ENVIRONMENT": "production"}, "never runs in production"},
		{"no environment", map[string]string{}, "ENVIRONMENT"},
		{"off loopback without TLS", map[string]string{"ENVIRONMENT": "sandbox", "MOCK_CARD_ADDR": "0.0.0.0:9700"}, "MOCK_CARD_ADDR"},
		{"off loopback with TLS", map[string]string{"ENVIRONMENT": "sandbox", "MOCK_CARD_ADDR": ":9700", "MOCK_CARD_CERT_FILE": certFile, "MOCK_CARD_KEY_FILE": keyFile}, ""},
		{"certificate without key", map[string]string{"ENVIRONMENT": "sandbox", "MOCK_CARD_CERT_FILE": certFile}, "MOCK_CARD_KEY_FILE"},
		{"bound", map[string]string{"ENVIRONMENT": "sandbox", "MOCK_CARD_MAX_AUTHORIZATIONS": "0"}, "MOCK_CARD_MAX_AUTHORIZATIONS"},
		{"hold", map[string]string{"ENVIRONMENT": "sandbox", "MOCK_CARD_HOLD": "30"}, "MOCK_CARD_HOLD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := config.NewLoader(config.MapLookup(tc.env))
			cfg := mockcard.LoadConfig(l)
			err := l.Err()
			if err == nil {
				_, err = mockcard.New(cfg, logging.New(&logging.LogCatcher{}, slog.LevelInfo))
			}
			if tc.err == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want one naming %q", err, tc.err)
			}
			if tc.name == "defaults" && (cfg.Addr != "127.0.0.1:9700" || cfg.MaxAuthorizations != 50000 || cfg.Hold != 2*time.Minute) {
				t.Fatalf("defaults: %+v", cfg)
			}
		})
	}
}

// With a certificate the simulator serves TLS only.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeServerCert(t, dir)
	m, err := mockcard.New(mockcard.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile},
		logging.New(&logging.LogCatcher{}, slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if !strings.HasPrefix(m.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s", m.URL())
	}
	pool, err := certs.LoadCertPool(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{Main: m, base: m.URL(), client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
	if a := s.authorize(t, "tls", request(1000)); a.Status != "authorized" {
		t.Fatalf("over TLS: %+v", a)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + m.Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP served")
		}
	}
}

// writeServerCert writes a CA (ca.pem) and a server certificate for
// 127.0.0.1 signed by it into dir.
func writeServerCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	ca, err := certs.NewCA("mock-card-test-ca", time.Now(), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.IssueServer("mock-card", []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key, err := leaf.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "mock-card.pem"), filepath.Join(dir, "mock-card-key.pem")
	for name, data := range map[string][]byte{"ca.pem": ca.CertPEM(), "mock-card.pem": leaf.CertPEM(), "mock-card-key.pem": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}
