package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/certs"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
)

// The standard test cards; each must end up only in the vault (encrypted)
// and at the processor the detokenized call was addressed to.
var testPANs = []string{"4111111111111111", "5555555555554444", "378282246310005"}

func futureExpiry() string { return time.Now().AddDate(3, 0, 0).Format("01/06") }

func vaultCard(t *testing.T, s *stack.Stack, tok, pan, cvv string) map[string]any {
	t.Helper()
	body := map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()}
	if cvv != "" {
		body["security_code"] = cvv
	}
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/payment-methods", tok, body)
	if code != http.StatusCreated {
		t.Fatalf("vault card: %d %s", code, raw)
	}
	var pm map[string]any
	if err := json.Unmarshal(raw, &pm); err != nil {
		t.Fatal(err)
	}
	return pm
}

func countRows(t *testing.T, dsn, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestVaultingACardThroughVaultProxy(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write")
	pm := vaultCard(t, s, tok, "4111 1111 1111 1111", "123")
	if pm["type"] != "payment-method" || pm["method"] != "card" || pm["scheme"] != "visa" || pm["label"] != "1111" {
		t.Fatalf("payment method: %v", pm)
	}
	id, _ := pm["id"].(string)
	var meta zone.CardMetadata
	code, raw := s.Do(t, s.InternalClient, http.MethodGet, s.InternalURL+"/internal/cards/"+id, "", nil, accountid.Header, "default")
	if code != 200 || json.Unmarshal(raw, &meta) != nil || meta.Label != "1111" || meta.BIN != "41111111" || meta.Fingerprint == "" {
		t.Fatalf("vault metadata: %d %s", code, raw)
	}
	if pm["fingerprint"] != meta.Fingerprint {
		t.Fatalf("core fingerprint %v differs from the vault's", pm["fingerprint"])
	}
	// The same card again: a new token, the same fingerprint.
	again := vaultCard(t, s, tok, "4111111111111111", "")
	if again["id"] == pm["id"] || again["fingerprint"] != pm["fingerprint"] {
		t.Fatalf("duplicate card: %v vs %v", again, pm)
	}
}

func TestBadVaultRequestsAreRefusedAndStoreNothing(t *testing.T) {
	s := stack.Start(t)
	write := s.Token(t, "payment-methods.write")
	read := s.Token(t, "payment-methods.read")
	exp := futureExpiry()
	cases := []struct {
		name     string
		token    string
		body     string
		status   int
		code     string
		pointers []string
	}{
		{"no token", "", `{"method":"card","number":"4111111111111111","expiration_date":"` + exp + `"}`, 401, "unauthorized", nil},
		{"read-only token", read, `{"method":"card","number":"4111111111111111","expiration_date":"` + exp + `"}`, 403, "forbidden", nil},
		{"luhn and past expiry", write, `{"method":"card","number":"4111111111111112","expiration_date":"01/20"}`, 400, "bad_request", []string{"/number", "/expiration_date"}},
		{"letters", write, `{"method":"card","number":"4111abcd11111111","expiration_date":"` + exp + `"}`, 400, "bad_request", []string{"/number"}},
		{"missing number", write, `{"method":"card","expiration_date":"` + exp + `"}`, 400, "bad_request", []string{"/number"}},
		{"amex code too short", write, `{"method":"card","number":"378282246310005","expiration_date":"` + exp + `","security_code":"123"}`, 400, "bad_request", []string{"/security_code"}},
		{"unknown field", write, `{"method":"card","number":"4111111111111111","expiration_date":"` + exp + `","cvv":"123"}`, 400, "bad_request", []string{"/cvv"}},
		{"wrong type", write, `{"method":"card","number":4111111111111111,"expiration_date":"` + exp + `"}`, 400, "bad_request", []string{"/number"}},
		{"not json", write, `{"method":"card","number":"4111111111111111"`, 400, "bad_request", nil},
		{"unknown buyer: core refuses, vault rolls back", write, `{"method":"card","number":"4111111111111111","expiration_date":"` + exp + `","buyer_id":"7f0c1d2e-0000-4000-8000-000000000000"}`, 400, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/payment-methods", tc.token, tc.body)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, raw)
			}
			e, err := apierror.Parse(raw)
			if err != nil {
				t.Fatalf("not the error envelope: %s", raw)
			}
			if tc.code != "" && e.Code != tc.code {
				t.Fatalf("code %s, want %s", e.Code, tc.code)
			}
			var got []string
			for _, d := range e.Details {
				got = append(got, d.Pointer)
			}
			for _, p := range tc.pointers {
				if !strings.Contains(strings.Join(got, " "), p) {
					t.Fatalf("details %v do not point at %s", got, p)
				}
			}
			logging.AssertNoPANIn(t, "error response", string(raw), testPANs...)
		})
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != 0 {
		t.Fatalf("%d cards left in the vault after refused requests", n)
	}
}

// processor is a stand-in for a card processor: a real HTTPS server on
// loopback with its own CA, recording what it receives.
type processor struct {
	srv    *httptest.Server
	caFile string
	mu     sync.Mutex
	seen   []seenRequest
	hits   atomic.Int64
	// received counts the bytes that reached the listener, TLS included:
	// a request refused before vault-proxy sends it moves it not at all,
	// even one the server would refuse as malformed (and so never count
	// in hits).
	received atomic.Int64
}

func newProcessor(t *testing.T) *processor {
	t.Helper()
	return newProcessorAnswering(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"auth_1","status":"approved"}`))
	})
}

// newProcessorAnswering is a processor whose answer is written by answer,
// given the request and its body.
func newProcessorAnswering(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *processor {
	t.Helper()
	p := &processor{}
	ca, err := certs.NewCA("processor-test-ca", time.Now(), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.IssueServer("processor", []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.caFile = filepath.Join(t.TempDir(), "processor-ca.pem")
	if err := os.WriteFile(p.caFile, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.seen = append(p.seen, seenRequest{line: r.Method + " " + r.RequestURI, body: string(b)})
		p.mu.Unlock()
		answer(w, r, b)
	}))
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLSCertificate()}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.srv.Listener = countingListener{ln, &p.received}
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

// countingListener counts the bytes read from its connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// seenRequest is what a processor received of one request.
type seenRequest struct {
	line string // method and target
	body string
}

// lastSeen is the last request received (zero before any).
func (p *processor) lastSeen() seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return seenRequest{}
	}
	return p.seen[len(p.seen)-1]
}

// last is the body of the last request received.
func (p *processor) last() string { return p.lastSeen().body }

func detokenize(t *testing.T, s *stack.Stack, merchant string, req zone.DetokenizeRequest) (int, []byte) {
	t.Helper()
	return s.Do(t, s.InternalClient, http.MethodPost, s.InternalURL+zone.DetokenizePath, "", req, accountid.Header, merchant, zone.ActorHeader, "test")
}

func TestDetokenizedCallReachesTheProcessorWithCardData(t *testing.T) {
	proc := newProcessor(t)
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	tok := s.Token(t, "payment-methods.write")
	pm := vaultCard(t, s, tok, "5555555555554444", "737")
	id := pm["id"].(string)
	tmpl := `{"card":{"number":"{{ CARD_NUMBER_1 }}","month":"{{ CARD_EXPIRATION_DATE_MM_1 }}","year":"{{CARD_EXPIRATION_DATE_YYYY_1}}","cvc":"{{ CARD_SECURITY_CODE_1 }}"},"amount":1299}`
	req := zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: "/v1/authorizations", Body: tmpl, PaymentMethod: []string{id}, Purpose: "authorization",
		Headers: map[string]string{"content-type": "application/json"}}

	code, raw := detokenize(t, s, "default", req)
	if code != 200 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}
	var out zone.DetokenizeResponse
	if err := json.Unmarshal(raw, &out); err != nil || out.Status != 201 || !strings.Contains(string(out.Body), "approved") {
		t.Fatalf("processor answer not passed back: %s", raw)
	}
	var got struct {
		Card struct{ Number, Month, Year, Cvc string }
	}
	if err := json.Unmarshal([]byte(proc.last()), &got); err != nil {
		t.Fatalf("processor received invalid JSON: %v", err)
	}
	exp := futureExpiry()
	if got.Card.Number != "5555555555554444" || got.Card.Month != exp[:2] || got.Card.Year != "20"+exp[3:] || got.Card.Cvc != "737" {
		t.Fatalf("processor received %+v", got.Card)
	}
	logging.AssertNoPANIn(t, "detokenize response", string(raw), testPANs...)

	// A second card whose security code is still held, for the refusals
	// that must not depend on the first one's code being used up.
	held := vaultCard(t, s, tok, "4111111111111111", "123")["id"].(string)
	number := `{"n":"{{ CARD_NUMBER_1 }}"}`
	before := proc.hits.Load()
	refusals := []struct {
		name     string
		merchant string
		mutate   func(*zone.DetokenizeRequest)
		status   int
		says     string // in the error's message or its detail's type
	}{
		{"security code is one use", "default", func(r *zone.DetokenizeRequest) {}, 400, "value_error.placeholder.value_unavailable"},
		{"unknown placeholder", "default", func(r *zone.DetokenizeRequest) { r.Body = `{"n":"{{ CARD_PIN_1 }}"}` }, 400, "value_error.placeholder.unknown_placeholder"},
		{"index out of range", "default", func(r *zone.DetokenizeRequest) { r.Body = `{"n":"{{ CARD_NUMBER_2 }}"}` }, 400, "value_error.placeholder.index_out_of_range"},
		{"another merchant's token", "other", func(r *zone.DetokenizeRequest) { r.Body = number }, 404, "not found"},
		{"unknown destination", "default", func(r *zone.DetokenizeRequest) { r.Destination = "evil"; r.Body = `{}` }, 422, "not configured"},
		{"absolute URL as path", "default", func(r *zone.DetokenizeRequest) { r.Path = "https://evil.example/x"; r.Body = number }, 400, "path must be an absolute path"},
		{"security code outside an authorization", "default", func(r *zone.DetokenizeRequest) { r.Purpose = "refund"; r.PaymentMethod = []string{held} }, 400,
			"value_error.placeholder.placeholder_not_allowed"},
		// core-api is not trusted with the request's framing: a header
		// name or value that would smuggle headers to the processor.
		{"header name with CR LF", "default", func(r *zone.DetokenizeRequest) {
			r.Body, r.Headers = number, map[string]string{"X-A\r\nTransfer-Encoding: chunked\r\nHost: evil.example\r\nX-B": "v"}
		}, 400, "value_error.header"},
		{"header value with CR LF", "default", func(r *zone.DetokenizeRequest) {
			r.Body, r.Headers = number, map[string]string{"X-A": "v\r\nHost: evil.example"}
		}, 400, "value_error.header"},
		{"header name with a space", "default", func(r *zone.DetokenizeRequest) {
			r.Body, r.Headers = number, map[string]string{"Host ": "evil.example"}
		}, 400, "value_error.header"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := req
			tc.mutate(&r)
			code, raw := detokenize(t, s, tc.merchant, r)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, raw)
			}
			e, err := apierror.Parse(raw)
			if err != nil {
				t.Fatalf("not the error envelope: %s", raw)
			}
			if !strings.Contains(e.Message, tc.says) && (len(e.Details) == 0 || e.Details[0].Type != tc.says) {
				t.Fatalf("the refusal is not for its reason (%s): %s", tc.says, raw)
			}
		})
	}
	// The refused authorizations of the second card kept its code.
	code, raw = detokenize(t, s, "default", zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: "/v1/authorizations",
		Body: tmpl, PaymentMethod: []string{held}, Purpose: "authorization", Headers: map[string]string{"content-type": "application/json"}})
	if code != 200 || !strings.Contains(proc.last(), `"cvc":"123"`) {
		t.Fatalf("the held code after refused requests: %d %s", code, raw)
	}
	before++ // that one reached the processor
	if proc.hits.Load() != before {
		t.Fatalf("the processor was called %d times by refused requests", proc.hits.Load()-before)
	}
}

// After vaulting the test cards and using them, no card number is in any
// core-api response, any log line of either service, or either database
// (the vault's holds only ciphertext).
func TestCardNumbersStayInTheVault(t *testing.T) {
	proc := newProcessor(t)
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	tok := s.Token(t, "payment-methods.write", "payment-methods.read")
	var responses []string
	var ids []string
	for _, pan := range testPANs {
		pm := vaultCard(t, s, tok, pan, "")
		raw, _ := json.Marshal(pm)
		responses = append(responses, string(raw))
		ids = append(ids, pm["id"].(string))
	}
	for _, id := range ids {
		_, raw := s.Do(t, http.DefaultClient, http.MethodGet, s.CoreURL+"/payment-methods/"+id, tok, nil)
		responses = append(responses, string(raw))
		_, raw = s.Do(t, s.InternalClient, http.MethodGet, s.InternalURL+"/internal/cards/"+id, "", nil, accountid.Header, "default")
		responses = append(responses, string(raw))
	}
	code, raw := detokenize(t, s, "default", zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: "/pay",
		Body: `{"a":"{{ CARD_NUMBER_1 }}","b":"{{ CARD_NUMBER_2 }}","c":"{{ CARD_NUMBER_3 }}"}`, PaymentMethod: ids, Purpose: "authorization"})
	if code != 200 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}
	responses = append(responses, string(raw))
	for _, pan := range testPANs {
		if !strings.Contains(proc.last(), pan) {
			t.Fatal("the processor did not receive the card numbers; the test proves nothing")
		}
	}
	for i, r := range responses {
		logging.AssertNoPANIn(t, "response "+string(rune('0'+i)), r, testPANs...)
	}
	assertNoCardDataLogged(t, s, testPANs...)
	logging.AssertNoPANIn(t, "core database dump", s.Dump(t, "core"), testPANs...)
	vaultDump := s.Dump(t, "vault")
	if !strings.Contains(vaultDump, "vaulted_cards") {
		t.Fatal("vault dump has no cards; the test proves nothing")
	}
	logging.AssertNoPANIn(t, "vault database dump", vaultDump, testPANs...)
}

func TestAuditLogHasItsOwnScopeAndNoValues(t *testing.T) {
	s := stack.Start(t)
	pm := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")
	code, _ := s.Do(t, s.PublicClient, http.MethodGet, s.PublicURL+"/audit-events", s.Token(t, "payment-methods.write"), nil)
	if code != http.StatusForbidden {
		t.Fatalf("payment-methods.write read the audit log: %d", code)
	}
	code, raw := s.Do(t, s.PublicClient, http.MethodGet, s.PublicURL+"/audit-events?limit=10", s.Token(t, "audit-events.read"), nil)
	if code != 200 {
		t.Fatalf("audit log: %d %s", code, raw)
	}
	var page struct {
		Items []struct {
			Action, Outcome, Actor string
			Tokens                 []string `json:"payment_method_ids"`
		}
	}
	if err := json.Unmarshal(raw, &page); err != nil || len(page.Items) == 0 {
		t.Fatalf("audit page: %s", raw)
	}
	first := page.Items[len(page.Items)-1]
	if first.Action != "vault" || first.Outcome != "success" || len(first.Tokens) != 1 || first.Tokens[0] != pm["id"] || !strings.HasPrefix(first.Actor, "token:") {
		t.Fatalf("audit event: %+v", first)
	}
	logging.AssertNoPANIn(t, "audit log", string(raw), testPANs...)
	code, _ = s.Do(t, s.PublicClient, http.MethodGet, s.PublicURL+"/audit-events?limit=0", s.Token(t, "audit-events.read"), nil)
	if code != 400 {
		t.Fatalf("limit=0: %d", code)
	}
}
