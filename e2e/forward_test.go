package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"
	"github.com/payorch/certs"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
)

// --- targets: real HTTPS servers on loopback that record what they get ---

// fwdPKI is the test CA that issues the targets' server certificates; the
// stack trusts it through VAULT_FORWARD_EXTRA_CA_FILE.
type fwdPKI struct {
	ca     *certs.Authority
	caFile string
}

func newFwdPKI(t *testing.T) *fwdPKI {
	t.Helper()
	ca, err := certs.NewCA("forward-targets-ca", time.Now(), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &fwdPKI{ca: ca, caFile: filepath.Join(t.TempDir(), "targets-ca.pem")}
	if err := os.WriteFile(p.caFile, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type fwdReq struct {
	Method, Host, RequestURI string
	Header                   http.Header
	Body                     []byte
	PeerCN                   string
}

type fwdTarget struct {
	srv  *httptest.Server
	URL  string // https://127.0.0.1:port
	Host string // 127.0.0.1:port
	hits atomic.Int64
	mu   sync.Mutex
	reqs []fwdReq
}

// newTarget starts a target whose certificate is issued by ca; respond
// writes the answer (nil: 200 {"ok":true}); tlsMut adjusts its TLS config.
func newTarget(t *testing.T, ca *certs.Authority, respond http.HandlerFunc, tlsMut func(*tls.Config)) *fwdTarget {
	t.Helper()
	leaf, err := ca.IssueServer("target", []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tg := &fwdTarget{}
	tg.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		rec := fwdReq{Method: r.Method, Host: r.Host, RequestURI: r.RequestURI, Header: r.Header.Clone(), Body: b}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			rec.PeerCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		tg.mu.Lock()
		tg.reqs = append(tg.reqs, rec)
		tg.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		if respond != nil {
			respond(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	tg.srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLSCertificate()}, MinVersion: tls.VersionTLS12}
	if tlsMut != nil {
		tlsMut(tg.srv.TLS)
	}
	tg.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg.srv.Listener = ln
	tg.srv.StartTLS()
	t.Cleanup(tg.srv.Close)
	tg.URL = tg.srv.URL
	tg.Host = strings.TrimPrefix(tg.srv.URL, "https://")
	return tg
}

func (tg *fwdTarget) last(t *testing.T) fwdReq {
	t.Helper()
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if len(tg.reqs) == 0 {
		t.Fatal("the target received nothing")
	}
	return tg.reqs[len(tg.reqs)-1]
}

// --- API helpers ---

type fwdResult struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r fwdResult) apiError(t *testing.T) *apierror.Error {
	t.Helper()
	e, err := apierror.Parse(r.Body)
	if err != nil {
		t.Fatalf("not the error envelope (%d): %s", r.Status, r.Body)
	}
	return e
}

// doForward sends POST /vault-forward with the given headers (pairs).
// Content-Type defaults to application/json.
func doForward(t *testing.T, s *stack.Stack, tok, body string, hdr ...string) fwdResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.PublicURL+"/vault-forward", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.PublicClient.Do(req)
	if err != nil {
		t.Fatalf("forward: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s.CheckAPI(t, req, []byte(body), resp, raw) // as stack.Do does
	return fwdResult{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

func createForwardConfig(t *testing.T, s *stack.Stack, tok string, hosts ...string) string {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/vault-forward/configs", tok,
		map[string]any{"display_name": "test target", "hosts": hosts})
	if code != http.StatusCreated {
		t.Fatalf("create config: %d %s", code, raw)
	}
	var c struct{ ID string }
	if err := json.Unmarshal(raw, &c); err != nil || c.ID == "" {
		t.Fatalf("config: %s", raw)
	}
	return c.ID
}

// addAuthMethod adds a method; fields are key/value pairs.
func addAuthMethod(t *testing.T, s *stack.Stack, tok, configID, kind string, kv ...string) string {
	t.Helper()
	var fields []map[string]string
	for i := 0; i+1 < len(kv); i += 2 {
		fields = append(fields, map[string]string{"key": kv[i], "value": kv[i+1]})
	}
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/vault-forward/configs/"+configID+"/authentications", tok,
		map[string]any{"kind": kind, "display_name": kind + " method", "fields": fields})
	if code != http.StatusCreated {
		t.Fatalf("add %s method: %d %s", kind, code, raw)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		t.Fatalf("method: %s", raw)
	}
	return m.ID
}

// forwardStack starts the product in sandbox with loopback forwarding
// allowed and the targets' CA trusted.
// oneCardForward is a stack with one answering target that a forwarding
// config lists, one vaulted card and a vault-forward.write token.
func oneCardForward(t *testing.T, pan string) (s *stack.Stack, tg *fwdTarget, pm, tok string) {
	t.Helper()
	s, pki := forwardStack(t)
	tg = newTarget(t, pki.ca, nil, nil)
	createForwardConfig(t, s, s.Token(t, "vault-forward-configs.write"), tg.Host)
	pm = vaultCard(t, s, s.Token(t, "payment-methods.write"), pan, "")["id"].(string)
	return s, tg, pm, s.Token(t, "vault-forward.write")
}

func forwardStack(t *testing.T) (*stack.Stack, *fwdPKI) {
	t.Helper()
	pki := newFwdPKI(t)
	s := stack.Start(t, stack.WithForwardLoopback(pki.caFile))
	return s, pki
}

type auditRow struct {
	Action, Outcome string
	Tokens          []string
	Detail          map[string]any
}

// auditCount counts the vault's stored audit events matching where, with
// $1.. bound to args. Records still in the spool are not counted: flush
// first (s.FlushAudit) while vault-proxy runs.
func auditCount(t *testing.T, s *stack.Stack, where string, args ...any) int {
	t.Helper()
	return vaultCount(t, s, `SELECT count(*) FROM audit_events WHERE `+where, args...)
}

// vaultCount runs a count query on the vault's database.
func vaultCount(t *testing.T, s *stack.Stack, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.DBs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// forwardAudit reads the vault's audit log straight from its database
// (GET /audit-events is tested in vault_test.go), newest first, and returns
// it with its raw text for searching.
func forwardAudit(t *testing.T, s *stack.Stack) ([]auditRow, string) {
	t.Helper()
	s.FlushAudit(t)
	conn, err := pgx.Connect(context.Background(), s.DBs.VaultDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT action, outcome, tokens::text[], detail::text FROM audit_events ORDER BY id DESC`)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditRow
	var all strings.Builder
	for rows.Next() {
		var e auditRow
		var detail string
		if err := rows.Scan(&e.Action, &e.Outcome, &e.Tokens, &detail); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(detail), &e.Detail); err != nil {
			t.Fatal(err)
		}
		all.WriteString(e.Action + " " + e.Outcome + " " + strings.Join(e.Tokens, ",") + " " + detail + "\n")
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, all.String()
}

// assertNoCardDataLogged: no card number in the logs, and no trace that
// code tried to log one (the redactor would have masked it, so the logs
// alone would not show it).
func assertNoCardDataLogged(t *testing.T, s *stack.Stack, pans ...string) {
	t.Helper()
	s.Logs.AssertNoPAN(t, pans...)
	if strings.Contains(s.Logs.String(), "REDACTED-PAN") {
		t.Fatal("some code tried to log a card number (the redactor caught it)")
	}
}

// --- tests ---

func TestForwardSubstitutesCardsAndPassesTheAnswerBack(t *testing.T) {
	s, pki := forwardStack(t)
	tg := newTarget(t, pki.ca, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Processor-Ref", "ref_123")
		w.Header().Set("Proxy-Authenticate", "Basic")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "1")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"id":"auth_9","status":"accepted"}`))
	}, nil)
	cfgTok := s.Token(t, "vault-forward-configs.write")
	createForwardConfig(t, s, cfgTok, tg.Host)
	pmTok := s.Token(t, "payment-methods.write")
	pm1 := vaultCard(t, s, pmTok, "4111111111111111", "")["id"].(string)
	pm2 := vaultCard(t, s, pmTok, "5555555555554444", "")["id"].(string)
	tok := s.Token(t, "vault-forward.write")
	exp := futureExpiry()

	tmpl := `{"cards":[{"number":"{{ CARD_NUMBER_1 }}","expiry":"{{CARD_EXPIRATION_DATE_1}}"},` +
		`{"number":"{{ CARD_NUMBER_2 }}","year":"{{ CARD_EXPIRATION_DATE_YYYY_2 }}"}],"amount":1299}`
	res := doForward(t, s, tok, tmpl,
		"x-vault-forward-url", tg.URL+"/v1/charges?mode=test",
		"x-vault-forward-http-method", "PUT",
		"x-vault-forward-payment-methods", pm1+", "+pm2,
		"x-vault-forward-header-authorization", "Bearer processor-secret-token",
		"x-vault-forward-header-x-idempotency", "idem-1",
		"x-service-merchant-account-id", "default")
	if res.Status != http.StatusAccepted {
		t.Fatalf("forward: %d %s", res.Status, res.Body)
	}
	if string(res.Body) != `{"id":"auth_9","status":"accepted"}` {
		t.Fatalf("body not passed back: %s", res.Body)
	}
	if got := res.Header.Get("x-vault-forward-upstream-status"); got != "202" {
		t.Fatalf("x-vault-forward-upstream-status %q", got)
	}
	if res.Header.Get("X-Processor-Ref") != "ref_123" || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("target headers not passed back: %v", res.Header)
	}
	if res.Header.Get("Proxy-Authenticate") != "" || res.Header.Get("X-Hop") != "" {
		t.Fatalf("hop-by-hop headers passed back: %v", res.Header)
	}
	if res.Header.Get("X-Request-Id") == "" {
		t.Fatal("no request id on the answer")
	}

	got := tg.last(t)
	if got.Method != http.MethodPut || got.RequestURI != "/v1/charges?mode=test" {
		t.Fatalf("target got %s %s", got.Method, got.RequestURI)
	}
	var sent struct {
		Cards []struct{ Number, Expiry, Year string }
	}
	if err := json.Unmarshal(got.Body, &sent); err != nil || len(sent.Cards) != 2 {
		t.Fatalf("target received invalid JSON: %v", err)
	}
	if sent.Cards[0].Number != "4111111111111111" || sent.Cards[0].Expiry != exp ||
		sent.Cards[1].Number != "5555555555554444" || sent.Cards[1].Year != "20"+exp[3:] {
		t.Fatal("the target did not receive the substituted card values")
	}
	if got.Header.Get("Authorization") != "Bearer processor-secret-token" || got.Header.Get("X-Idempotency") != "idem-1" {
		t.Fatalf("forwarded headers missing: %v", got.Header)
	}
	for _, h := range []string{"X-Vault-Forward-Url", "X-Service-Merchant-Account-Id", "X-Vault-Forward-Payment-Methods"} {
		if got.Header.Get(h) != "" {
			t.Fatalf("proxy header %s reached the target", h)
		}
	}
	if !strings.HasPrefix(got.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("content-type not kept: %q", got.Header.Get("Content-Type"))
	}

	// The target's own errors are passed through as they are.
	tgErr := newTarget(t, pki.ca, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("processor down"))
	}, nil)
	createForwardConfig(t, s, cfgTok, tgErr.Host)
	res = doForward(t, s, tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, "x-vault-forward-url", tgErr.URL+"/x", "x-vault-forward-payment-methods", pm1)
	if res.Status != http.StatusBadGateway || string(res.Body) != "processor down" || res.Header.Get("x-vault-forward-upstream-status") != "502" {
		t.Fatalf("target error not passed through: %d %v %s", res.Status, res.Header, res.Body)
	}

	// The merchant's own destination's answer is the merchant's: a card
	// number in it is passed back as it is, unlike a detokenized call's
	// answer to core-api.
	tgEcho := newTarget(t, pki.ca, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Card", string(b))
		_, _ = w.Write(b)
	}, nil)
	createForwardConfig(t, s, cfgTok, tgEcho.Host)
	res = doForward(t, s, tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, "x-vault-forward-url", tgEcho.URL+"/issue", "x-vault-forward-payment-methods", pm1)
	if want := `{"n":"4111111111111111"}`; res.Status != http.StatusOK || string(res.Body) != want || res.Header.Get("X-Card") != want {
		t.Fatalf("the destination's answer was changed: %d %v %s", res.Status, res.Header, res.Body)
	}

	// The audit log names the destination, placeholders and status; never values.
	events, raw := forwardAudit(t, s)
	found := false
	for _, e := range events {
		if e.Action == "forward" && e.Outcome == "success" && e.Detail["host"] == tg.Host {
			found = true
			if len(e.Tokens) != 2 || e.Detail["status"] != float64(202) || e.Detail["duration_ms"] == nil {
				t.Fatalf("forward audit event: %+v", e)
			}
			names, _ := json.Marshal(e.Detail["placeholders"])
			if string(names) != `["CARD_NUMBER_1","CARD_EXPIRATION_DATE_1","CARD_NUMBER_2","CARD_EXPIRATION_DATE_YYYY_2"]` {
				t.Fatalf("audited placeholders %s", names)
			}
		}
	}
	if !found {
		t.Fatalf("no forward audit event: %s", raw)
	}
	logging.AssertNoPANIn(t, "audit log", string(raw), testPANs...)
	if strings.Contains(string(raw), "processor-secret-token") {
		t.Fatal("a forwarded header value reached the audit log")
	}
	// The audit spool's files hold the same records on vault-proxy's disk.
	stored := s.Dump(t, "vault")
	if !strings.Contains(stored, `"action":"forward"`) {
		t.Fatal("the audit spool holds no forward record; searching it proves nothing")
	}
	logging.AssertNoPANIn(t, "vault database and audit spool", stored, testPANs...)
	if strings.Contains(stored, "processor-secret-token") {
		t.Fatal("a forwarded header value reached the audit spool")
	}
	assertNoCardDataLogged(t, s, testPANs...)
}

func TestForwardEscapesPerContentType(t *testing.T) {
	s, tg, pm, tok := oneCardForward(t, "378282246310005")
	exp := futureExpiry()

	t.Run("xml", func(t *testing.T) {
		res := doForward(t, s, tok, `<?xml version="1.0"?><card><number>{{ CARD_NUMBER_1 }}</number><expiry attr="{{ CARD_EXPIRATION_DATE_1 }}">{{ CARD_EXPIRATION_DATE_1 }}</expiry></card>`,
			"Content-Type", "application/xml", "x-vault-forward-url", tg.URL+"/xml", "x-vault-forward-payment-methods", pm)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		var doc struct {
			Number string `xml:"number"`
			Expiry struct {
				Attr string `xml:"attr,attr"`
				Text string `xml:",chardata"`
			} `xml:"expiry"`
		}
		got := tg.last(t)
		if err := xml.Unmarshal(got.Body, &doc); err != nil {
			t.Fatalf("target received invalid XML: %v", err)
		}
		if doc.Number != "378282246310005" || doc.Expiry.Attr != exp || doc.Expiry.Text != exp || got.Header.Get("Content-Type") != "application/xml" {
			t.Fatalf("xml values wrong (content-type %q)", got.Header.Get("Content-Type"))
		}
	})
	t.Run("form", func(t *testing.T) {
		res := doForward(t, s, tok, `number={{ CARD_NUMBER_1 }}&expiry={{ CARD_EXPIRATION_DATE_1 }}&note=a%2Bb`,
			"Content-Type", "application/x-www-form-urlencoded", "x-vault-forward-url", tg.URL+"/form", "x-vault-forward-payment-methods", pm)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		got := tg.last(t)
		if !strings.Contains(string(got.Body), "expiry="+url.QueryEscape(exp)) {
			t.Fatal("the expiry's slash was not form-encoded")
		}
		q, err := url.ParseQuery(string(got.Body))
		if err != nil || q.Get("number") != "378282246310005" || q.Get("expiry") != exp || q.Get("note") != "a+b" {
			t.Fatalf("form values wrong: %v", err)
		}
	})
	t.Run("plain text with GET", func(t *testing.T) {
		res := doForward(t, s, tok, `card {{ CARD_NUMBER_1 }} exp {{ CARD_EXPIRATION_DATE_MM_1 }}`,
			"Content-Type", "text/plain", "x-vault-forward-url", tg.URL+"/plain", "x-vault-forward-http-method", "get", "x-vault-forward-payment-methods", pm)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		got := tg.last(t)
		if got.Method != http.MethodGet || string(got.Body) != "card 378282246310005 exp "+exp[:2] {
			t.Fatalf("plain body wrong (%s)", got.Method)
		}
	})
	assertNoCardDataLogged(t, s, testPANs...)
}

// --- an independent RFC 9421 verifier (not the product's signing package) ---

// sfMember returns the raw text of a Structured Field Dictionary member,
// splitting on top-level commas (outside strings, inner lists and byte
// sequences).
func sfMember(dict, label string) (string, bool) {
	var parts []string
	depth, inStr, inBytes, start := 0, false, false, 0
	for i := 0; i < len(dict); i++ {
		c := dict[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case inBytes:
			if c == ':' {
				inBytes = false
			}
		case c == '"':
			inStr = true
		case c == ':':
			inBytes = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, dict[start:i])
			start = i + 1
		}
	}
	parts = append(parts, dict[start:])
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if k, v, ok := strings.Cut(p, "="); ok && k == label {
			return v, true
		}
	}
	return "", false
}

// verifyRFC9421 rebuilds the signature base from the request as received
// (RFC 9421 section 2.5) and checks the signature with verify. It also
// checks Content-Digest against the body when present (RFC 9530).
func verifyRFC9421(t *testing.T, r fwdReq, label string, verify func(base, sig []byte) bool) (params string) {
	t.Helper()
	input, ok := sfMember(r.Header.Get("Signature-Input"), label)
	if !ok {
		t.Fatalf("no %s in Signature-Input %q", label, r.Header.Get("Signature-Input"))
	}
	sigItem, ok := sfMember(r.Header.Get("Signature"), label)
	if !ok || len(sigItem) < 2 || sigItem[0] != ':' || sigItem[len(sigItem)-1] != ':' {
		t.Fatalf("no %s byte sequence in Signature %q", label, r.Header.Get("Signature"))
	}
	sig, err := base64.StdEncoding.DecodeString(sigItem[1 : len(sigItem)-1])
	if err != nil {
		t.Fatalf("signature is not base64: %v", err)
	}
	end := strings.IndexByte(input, ')')
	if input[0] != '(' || end < 0 {
		t.Fatalf("Signature-Input member is not an inner list: %q", input)
	}
	var base strings.Builder
	path, query, _ := strings.Cut(r.RequestURI, "?")
	for _, c := range strings.Fields(input[1:end]) {
		name := strings.Trim(c, `"`)
		var v string
		switch name {
		case "@method":
			v = r.Method
		case "@target-uri":
			v = "https://" + r.Host + r.RequestURI
		case "@authority":
			v = strings.ToLower(r.Host)
		case "@scheme":
			v = "https"
		case "@path":
			v = path
		case "@query":
			v = "?" + query
		case "@request-target":
			v = r.RequestURI
		default:
			vals := r.Header.Values(name)
			if len(vals) == 0 {
				t.Fatalf("covered field %s is not in the request", name)
			}
			for i := range vals {
				vals[i] = strings.TrimSpace(vals[i])
			}
			v = strings.Join(vals, ", ")
		}
		base.WriteString(`"` + name + `": ` + v + "\n")
	}
	base.WriteString(`"@signature-params": ` + input)
	if !verify([]byte(base.String()), sig) {
		t.Fatalf("signature %s does not verify over base:\n%s", label, base.String())
	}
	if cd := r.Header.Get("Content-Digest"); cd != "" {
		sum := sha256.Sum256(r.Body)
		if want := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"; cd != want {
			t.Fatalf("Content-Digest %q does not describe the body (%q)", cd, want)
		}
	}
	return input[end+1:]
}

// assertNoDigestOf fails when anything the target received (URI, headers,
// body) carries the SHA-256 of plain, in base64 (RFC 9530) or hex. The
// digest of a card-bearing body whose other bytes are known is a guessing
// oracle for the card number, so it must never travel beside a JWE.
func assertNoDigestOf(t *testing.T, r fwdReq, plain []byte) {
	t.Helper()
	sum := sha256.Sum256(plain)
	var got strings.Builder
	got.WriteString(r.RequestURI + "\n")
	got.Write(r.Body)
	for k, vs := range r.Header {
		got.WriteString("\n" + k + ": " + strings.Join(vs, ", "))
	}
	text := got.String()
	for _, form := range []string{
		base64.StdEncoding.EncodeToString(sum[:]), base64.RawStdEncoding.EncodeToString(sum[:]),
		base64.URLEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:]),
	} {
		if strings.Contains(text, form) {
			t.Errorf("the SHA-256 of the plaintext body travelled beside the JWE (%s)", form)
		}
	}
	if strings.Contains(strings.ToLower(text), hex.EncodeToString(sum[:])) {
		t.Error("the SHA-256 of the plaintext body travelled beside the JWE (hex)")
	}
}

func TestForwardAuthenticationMethods(t *testing.T) {
	s, pki := forwardStack(t)
	tg := newTarget(t, pki.ca, nil, nil)
	cfgTok := s.Token(t, "vault-forward-configs.write")
	cfg := createForwardConfig(t, s, cfgTok, tg.Host)
	pm := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")["id"].(string)
	tok := s.Token(t, "vault-forward.write")
	body := `{"number":"{{ CARD_NUMBER_1 }}"}`
	send := func(t *testing.T, auths string) fwdResult {
		t.Helper()
		// A path fasthttp would normalise (%40 decoded, "//" merged): the
		// signature must cover it as the target receives it.
		return doForward(t, s, tok, body, "x-vault-forward-url", tg.URL+"/v1/customers/a%40b.com//cards?x=1", "x-vault-forward-payment-methods", pm,
			"x-vault-forward-authentications", auths)
	}

	hmacSecret := make([]byte, 32)
	_, _ = rand.Read(hmacSecret)
	hmacKey := base64.StdEncoding.EncodeToString(hmacSecret)
	hmacID := addAuthMethod(t, s, cfgTok, cfg, "signature", "algorithm", "hmac-sha256", "key_id", "hk1", "key", hmacKey)
	// The same secret under another label: a second signature of a forward.
	hmacID2 := addAuthMethod(t, s, cfgTok, cfg, "signature", "algorithm", "hmac-sha256", "key_id", "hk1", "key", hmacKey, "label", "sig2")
	verifyHMAC := func(base, sig []byte) bool {
		m := hmac.New(sha256.New, hmacSecret)
		m.Write(base)
		return hmac.Equal(m.Sum(nil), sig)
	}

	t.Run("signature hmac-sha256", func(t *testing.T) {
		res := send(t, hmacID)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		got := tg.last(t)
		var seenBase, seenSig []byte
		params := verifyRFC9421(t, got, "sig1", func(base, sig []byte) bool {
			seenBase, seenSig = base, sig
			return verifyHMAC(base, sig)
		})
		// Negative control: the verifier is not a rubber stamp.
		if verifyHMAC(bytes.Replace(seenBase, []byte(`"@method": POST`), []byte(`"@method": GET`), 1), seenSig) ||
			verifyHMAC(append([]byte{}, append(seenBase, ' ')...), seenSig) {
			t.Fatal("the independent verifier accepts a different signature base")
		}
		if !strings.Contains(params, `keyid="hk1"`) || !strings.Contains(params, `alg="hmac-sha256"`) || !strings.Contains(params, ";created=") {
			t.Fatalf("signature params %q", params)
		}
		if got.Header.Get("Content-Digest") == "" || !strings.Contains(string(got.Body), "4111111111111111") {
			t.Fatal("no Content-Digest, or the body was not substituted before signing")
		}
	})

	t.Run("signature over a URL with no path", func(t *testing.T) {
		// Sent as "POST /?x=1": the signature covers that, not "?x=1".
		res := doForward(t, s, tok, body, "x-vault-forward-url", tg.URL+"?x=1", "x-vault-forward-payment-methods", pm,
			"x-vault-forward-authentications", hmacID)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		verifyRFC9421(t, tg.last(t), "sig1", verifyHMAC)
	})

	t.Run("signature ed25519 with chosen components", func(t *testing.T) {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		der, _ := x509.MarshalPKCS8PrivateKey(priv)
		keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		id := addAuthMethod(t, s, cfgTok, cfg, "signature", "algorithm", "ed25519", "key_id", "ed1", "key", keyPEM,
			"covered_components", "@method @authority @path @query content-digest", "label", "merchant", "expires_in", "300")
		res := send(t, id)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		params := verifyRFC9421(t, tg.last(t), "merchant", func(base, sig []byte) bool { return ed25519.Verify(pub, base, sig) })
		if !strings.Contains(params, ";expires=") || !strings.Contains(params, `alg="ed25519"`) {
			t.Fatalf("signature params %q", params)
		}
	})

	// mle: the target decrypts with an independent JOSE library.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	mlePub := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	mleID := addAuthMethod(t, s, cfgTok, cfg, "mle", "public_key", mlePub, "key_id", "enc-key-1")
	decrypt := func(t *testing.T, got fwdReq) []byte {
		t.Helper()
		if got.Header.Get("Content-Type") != "application/jose" {
			t.Fatalf("content-type %q", got.Header.Get("Content-Type"))
		}
		if strings.Contains(string(got.Body), "4111111111111111") {
			t.Fatal("the card number travelled in clear beside the JWE")
		}
		msg, err := jwe.Parse(got.Body)
		if err != nil {
			t.Fatalf("not a JWE: %v", err)
		}
		if kid, _ := msg.ProtectedHeaders().KeyID(); kid != "enc-key-1" {
			t.Fatalf("kid %q", kid)
		}
		plain, err := jwe.Decrypt(got.Body, jwe.WithKey(jwa.RSA_OAEP_256(), rsaKey))
		if err != nil {
			t.Fatalf("target cannot decrypt: %v", err)
		}
		return plain
	}
	t.Run("mle", func(t *testing.T) {
		res := send(t, mleID)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		if plain := decrypt(t, tg.last(t)); string(plain) != `{"number":"4111111111111111"}` {
			t.Fatal("decrypted body is not the substituted template")
		}
	})
	plain := []byte(`{"number":"4111111111111111"}`) // the body as rendered, before encryption
	t.Run("mle then signature: the signature covers the encrypted body", func(t *testing.T) {
		res := send(t, mleID+","+hmacID)
		if res.Status != 200 {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
		got := tg.last(t)
		verifyRFC9421(t, got, "sig1", verifyHMAC) // Content-Digest is checked over the JWE
		if got := decrypt(t, got); !bytes.Equal(got, plain) {
			t.Fatal("decrypted body is not the substituted template")
		}
		assertNoDigestOf(t, got, plain)
	})
	// Signing first would put the digest of the card-bearing plaintext
	// beside the JWE, under a signature the target cannot verify (the body
	// and content-type it covers are not the ones sent): refused.
	refusedOrder := func(t *testing.T, target *fwdTarget, url, auths string, ids ...string) {
		t.Helper()
		before := target.hits.Load()
		res := doForward(t, s, tok, body, "x-vault-forward-url", url, "x-vault-forward-payment-methods", pm,
			"x-vault-forward-authentications", auths)
		if target.hits.Load() != before {
			assertNoDigestOf(t, target.last(t), plain)
			t.Errorf("the target received a request (%d)", res.Status)
		}
		e := res.apiError(t)
		if res.Status != http.StatusBadRequest || e.Code != "authentication_order_invalid" || len(e.Details) != 1 ||
			e.Details[0].Pointer != "x-vault-forward-authentications" || e.Details[0].Type != "value_error.authentication_order" {
			t.Fatalf("signature before mle: %d %s", res.Status, res.Body)
		}
		for _, id := range ids {
			if !strings.Contains(e.Message, id) {
				t.Fatalf("the error does not name method %s: %s", id, e.Message)
			}
		}
	}
	t.Run("signature then mle: refused, nothing sent", func(t *testing.T) {
		refusedOrder(t, tg, tg.URL+"/pay", hmacID+","+mleID, hmacID, mleID)
		// A signature after the mle does not make up for one before it.
		refusedOrder(t, tg, tg.URL+"/pay", hmacID+","+mleID+","+hmacID2, hmacID, mleID)
	})

	t.Run("bad hmac key: authentication_failed and nothing sent", func(t *testing.T) {
		badKey := hmacKey + " " // stored as entered, decoded strictly
		id := addAuthMethod(t, s, cfgTok, cfg, "signature", "algorithm", "hmac-sha256", "key", badKey)
		opened, err := s.VaultProxy.ForwardConfigs.Open(context.Background(), "default", []uuid.UUID{uuid.MustParse(id)})
		if err != nil || len(opened) != 1 || opened[0].Fields["key"] != badKey {
			t.Fatalf("the sealed credential did not open byte-identical: %v", err)
		}
		before := tg.hits.Load()
		res := send(t, id)
		if res.Status != http.StatusBadRequest || res.apiError(t).Code != "authentication_failed" {
			t.Fatalf("bad key: %d %s", res.Status, res.Body)
		}
		if strings.Contains(string(res.Body), hmacKey) {
			t.Fatal("the error echoes the key")
		}
		// An earlier method in the list does not send anything either.
		res = send(t, mleID+","+id)
		if res.Status != http.StatusBadRequest || tg.hits.Load() != before {
			t.Fatalf("the target was called %d times by failed forwards (%d)", tg.hits.Load()-before, res.Status)
		}
	})

	// mtls: a target that requires a client certificate from its own CA.
	clientCA, err := certs.NewCA("merchant-client-ca", time.Now(), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientLeaf, err := clientCA.IssueClient("merchant-client", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientKey, _ := clientLeaf.KeyPEM()
	mtlsTarget := newTarget(t, pki.ca, nil, func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = clientCA.Pool()
	})
	mtlsCfg := createForwardConfig(t, s, cfgTok, mtlsTarget.Host)
	mtlsID := addAuthMethod(t, s, cfgTok, mtlsCfg, "mtls", "certificate", string(clientLeaf.CertPEM()), "private_key", string(clientKey))
	t.Run("mtls", func(t *testing.T) {
		res := doForward(t, s, tok, body, "x-vault-forward-url", mtlsTarget.URL+"/secure", "x-vault-forward-payment-methods", pm,
			"x-vault-forward-authentications", mtlsID)
		if res.Status != 200 || mtlsTarget.last(t).PeerCN != "merchant-client" {
			t.Fatalf("mtls forward: %d %s", res.Status, res.Body)
		}
		res = doForward(t, s, tok, body, "x-vault-forward-url", mtlsTarget.URL+"/secure", "x-vault-forward-payment-methods", pm)
		if res.Status != http.StatusBadGateway || res.apiError(t).Code != "forward_tls_failed" {
			t.Fatalf("without the method: %d %s", res.Status, res.Body)
		}
		if mtlsTarget.hits.Load() != 1 {
			t.Fatalf("target hits %d", mtlsTarget.hits.Load())
		}
	})
	t.Run("mtls anywhere in the list, with mle then signature", func(t *testing.T) {
		// mtls acts on the connection, not the request: its place in the
		// list changes nothing; signature before mle is refused wherever
		// mtls stands.
		mleOnTLS := addAuthMethod(t, s, cfgTok, mtlsCfg, "mle", "public_key", mlePub, "key_id", "enc-key-1")
		hmacOnTLS := addAuthMethod(t, s, cfgTok, mtlsCfg, "signature", "algorithm", "hmac-sha256", "key_id", "hk1", "key", hmacKey)
		for _, auths := range []string{
			mtlsID + "," + mleOnTLS + "," + hmacOnTLS,
			mleOnTLS + "," + mtlsID + "," + hmacOnTLS,
			mleOnTLS + "," + hmacOnTLS + "," + mtlsID,
		} {
			res := doForward(t, s, tok, body, "x-vault-forward-url", mtlsTarget.URL+"/secure", "x-vault-forward-payment-methods", pm,
				"x-vault-forward-authentications", auths)
			if res.Status != 200 {
				t.Fatalf("forward with %s: %d %s", auths, res.Status, res.Body)
			}
			got := mtlsTarget.last(t)
			if got.PeerCN != "merchant-client" {
				t.Fatalf("no client certificate with %s", auths)
			}
			verifyRFC9421(t, got, "sig1", verifyHMAC)
			if got := decrypt(t, got); !bytes.Equal(got, plain) {
				t.Fatal("decrypted body is not the substituted template")
			}
			assertNoDigestOf(t, got, plain)
		}
		refusedOrder(t, mtlsTarget, mtlsTarget.URL+"/secure", hmacOnTLS+","+mtlsID+","+mleOnTLS, hmacOnTLS, mleOnTLS)
	})
	t.Run("mtls with ca_certificate for a target of another CA", func(t *testing.T) {
		otherCA, err := certs.NewCA("target-private-ca", time.Now(), 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		priv := newTarget(t, otherCA, nil, func(c *tls.Config) {
			c.ClientAuth = tls.RequireAndVerifyClientCert
			c.ClientCAs = clientCA.Pool()
		})
		c := createForwardConfig(t, s, cfgTok, priv.Host)
		id := addAuthMethod(t, s, cfgTok, c, "mtls", "certificate", string(clientLeaf.CertPEM()), "private_key", string(clientKey),
			"ca_certificate", string(otherCA.CertPEM()))
		res := doForward(t, s, tok, body, "x-vault-forward-url", priv.URL+"/secure", "x-vault-forward-payment-methods", pm,
			"x-vault-forward-authentications", id)
		if res.Status != 200 || priv.last(t).PeerCN != "merchant-client" {
			t.Fatalf("mtls with ca_certificate: %d %s", res.Status, res.Body)
		}
	})

	t.Run("a method goes only to its config's hosts", func(t *testing.T) {
		res := doForward(t, s, tok, body, "x-vault-forward-url", tg.URL+"/pay", "x-vault-forward-payment-methods", pm,
			"x-vault-forward-authentications", mtlsID)
		if res.Status != http.StatusUnprocessableEntity || res.apiError(t).Code != "forward_authentication_not_allowed" {
			t.Fatalf("method of another config: %d %s", res.Status, res.Body)
		}
	})

	// The audit record names the methods applied.
	events, raw := forwardAudit(t, s)
	if !slices.ContainsFunc(events, func(e auditRow) bool {
		ids, _ := e.Detail["authentications"].([]any)
		return e.Outcome == "success" && len(ids) == 2 && ids[0] == mleID && ids[1] == hmacID
	}) {
		t.Fatalf("audit log does not name the methods: %s", raw)
	}
	if strings.Contains(raw, hmacKey) {
		t.Fatal("a credential reached the audit log")
	}
	if strings.Contains(s.Logs.String(), hmacKey) {
		t.Fatal("a credential reached the logs")
	}
	assertNoCardDataLogged(t, s, testPANs...)
}

func TestForwardRefusalsSendNothing(t *testing.T) {
	s, pki := forwardStack(t)
	tg := newTarget(t, pki.ca, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(2500 * time.Millisecond)
		}
		_, _ = w.Write([]byte("ok"))
	}, nil)
	unlisted := newTarget(t, pki.ca, nil, nil)
	cfgTok := s.Token(t, "vault-forward-configs.write")
	createForwardConfig(t, s, cfgTok, tg.Host)
	// The other merchant lists the target too, so its forward reaches the
	// payment method check.
	if code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/vault-forward/configs", cfgTok,
		map[string]any{"display_name": "other's", "hosts": []string{tg.Host}}, "x-service-merchant-account-id", "other"); code != 201 {
		t.Fatalf("other merchant's config: %d %s", code, raw)
	}
	pmTok := s.Token(t, "payment-methods.write")
	// With a security code held, so that its refusal below is for being a
	// forward, not for there being no code.
	pm := vaultCard(t, s, pmTok, "4111111111111111", "123")["id"].(string)
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/payment-methods", pmTok,
		map[string]any{"method": "gift-card", "number": "6006491234567890", "pin": "1234"})
	if code != http.StatusCreated {
		t.Fatalf("gift card: %d %s", code, raw)
	}
	var gift struct{ ID string }
	_ = json.Unmarshal(raw, &gift)
	tok := s.Token(t, "vault-forward.write")
	good := []string{"x-vault-forward-url", tg.URL + "/pay", "x-vault-forward-payment-methods", pm}
	with := func(extra ...string) []string {
		out := append([]string{}, good...)
		return append(out, extra...)
	}

	cases := []struct {
		name    string
		tok     string
		body    string
		hdr     []string
		status  int
		code    string
		pointer string
	}{
		{"no scope", s.Token(t, "vault-forward-configs.write"), `{}`, good, 403, "forbidden", ""},
		{"unknown placeholder", tok, `{"n":"{{ CARD_PIN_1 }}"}`, good, 400, "bad_request", "{{ CARD_PIN_1 }}"},
		{"index out of range", tok, `{"n":"{{ CARD_NUMBER_2 }}"}`, good, 400, "bad_request", "{{ CARD_NUMBER_2 }}"},
		{"security code is never forwarded", tok, `{"n":"{{ CARD_SECURITY_CODE_1 }}"}`, good, 400, "bad_request", "{{ CARD_SECURITY_CODE_1 }}"},
		{"not a card", tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, []string{"x-vault-forward-url", tg.URL + "/pay", "x-vault-forward-payment-methods", gift.ID}, 400, "bad_request", "{{ CARD_NUMBER_1 }}"},
		{"gift card PIN is never forwarded", tok, `{"p":"{{ GIFT_CARD_PIN_1 }}"}`, []string{"x-vault-forward-url", tg.URL + "/pay", "x-vault-forward-payment-methods", gift.ID}, 400, "bad_request", "{{ GIFT_CARD_PIN_1 }}"},
		{"timeout 61", tok, `{}`, with("x-vault-forward-timeout", "61"), 400, "bad_request", "x-vault-forward-timeout"},
		{"timeout 0", tok, `{}`, with("x-vault-forward-timeout", "0"), 400, "bad_request", "x-vault-forward-timeout"},
		{"method not allowed", tok, `{}`, with("x-vault-forward-http-method", "TRACE"), 400, "bad_request", "x-vault-forward-http-method"},
		{"no url", tok, `{}`, []string{"x-vault-forward-payment-methods", pm}, 400, "bad_request", "x-vault-forward-url"},
		{"relative url", tok, `{}`, []string{"x-vault-forward-url", "/pay", "x-vault-forward-payment-methods", pm}, 400, "bad_request", "x-vault-forward-url"},
		{"no payment methods", tok, `{}`, []string{"x-vault-forward-url", tg.URL + "/pay"}, 400, "bad_request", "x-vault-forward-payment-methods"},
		{"bad payment method id", tok, `{}`, []string{"x-vault-forward-url", tg.URL + "/pay", "x-vault-forward-payment-methods", "nope"}, 400, "bad_request", "x-vault-forward-payment-methods"},
		{"misspelt header", tok, `{}`, with("x-vault-forward-headers-authorization", "Bearer x"), 400, "bad_request", "x-vault-forward-headers-authorization"},
		{"host header cannot be forwarded", tok, `{}`, with("x-vault-forward-header-host", "evil.example"), 400, "bad_request", "x-vault-forward-header-host"},
		{"another merchant's payment method", tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, with("x-service-merchant-account-id", "other"), 404, "not_found", ""},
		{"unknown authentication method", tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, with("x-vault-forward-authentications", uuid.NewString()), 404, "not_found", "x-vault-forward-authentications"},
		{"loopback target not in a config", tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, []string{"x-vault-forward-url", unlisted.URL + "/pay", "x-vault-forward-payment-methods", pm}, 403, "forward_host_not_allowed", "x-vault-forward-url"},
		{"listed host on another port", tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, []string{"x-vault-forward-url", "https://127.0.0.1:1/pay", "x-vault-forward-payment-methods", pm}, 403, "forward_host_not_allowed", "x-vault-forward-url"},
		{"metadata address", tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, []string{"x-vault-forward-url", "http://169.254.169.254/latest", "x-vault-forward-payment-methods", pm}, 403, "forward_host_not_allowed", "x-vault-forward-url"},
		{"too large", tok, `{"n":"` + strings.Repeat("a", 1<<20) + `"}`, good, 413, "too_large", ""},
	}
	// The placeholder refusals also say why: a 400 at the same pointer for
	// another reason must not pass.
	wantType := map[string]string{
		"unknown placeholder":              "value_error.placeholder.unknown_placeholder",
		"index out of range":               "value_error.placeholder.index_out_of_range",
		"security code is never forwarded": "value_error.placeholder.placeholder_not_allowed",
		"not a card":                       "value_error.placeholder.placeholder_not_allowed",
		"gift card PIN is never forwarded": "value_error.placeholder.placeholder_not_allowed",
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := doForward(t, s, tc.tok, tc.body, tc.hdr...)
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tc.status, res.Body)
			}
			e := res.apiError(t)
			if e.Code != tc.code {
				t.Fatalf("code %s, want %s: %s", e.Code, tc.code, res.Body)
			}
			if tc.pointer != "" {
				found := false
				for _, d := range e.Details {
					found = found || d.Pointer == tc.pointer && (wantType[tc.name] == "" || d.Type == wantType[tc.name])
				}
				if !found {
					t.Fatalf("no detail points at %s (type %q): %s", tc.pointer, wantType[tc.name], res.Body)
				}
			}
			logging.AssertNoPANIn(t, "error response", string(res.Body), testPANs...)
		})
	}
	// Header names that are not HTTP tokens, which fasthttp's server lets
	// through and a lenient target could read as Host or framing (sent
	// raw: Go's client refuses to write them).
	for _, line := range []string{
		"X-Vault-Forward-Header-Host : evil.example",
		"X-Vault-Forward-Header-Transfer-Encoding : chunked",
		"X-Vault-Forward-Header-Content-Length : 99",
		"X-Vault-Forward-Header- Transfer-Encoding: chunked",
	} {
		t.Run("not a token: "+line, func(t *testing.T) {
			body := `{"n":"{{ CARD_NUMBER_1 }}"}`
			status, raw := rawRequest(t, s, "POST /vault-forward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+
				"\r\nContent-Type: application/json\r\nx-vault-forward-url: "+tg.URL+"/pay\r\nx-vault-forward-payment-methods: "+pm+
				"\r\n"+line+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			e, err := apierror.Parse(raw)
			if status != http.StatusBadRequest || err != nil || len(e.Details) != 1 || e.Details[0].Type != "value_error.header.forbidden" {
				t.Fatalf("%d %s", status, raw)
			}
		})
	}
	if tg.hits.Load() != 0 || unlisted.hits.Load() != 0 {
		t.Fatalf("refused forwards reached a target (%d, %d times)", tg.hits.Load(), unlisted.hits.Load())
	}

	t.Run("target slower than x-vault-forward-timeout", func(t *testing.T) {
		start := time.Now()
		res := doForward(t, s, tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, "x-vault-forward-url", tg.URL+"/slow",
			"x-vault-forward-payment-methods", pm, "x-vault-forward-timeout", "1")
		if res.Status != http.StatusGatewayTimeout || res.apiError(t).Code != "forward_timeout" {
			t.Fatalf("slow target: %d %s", res.Status, res.Body)
		}
		if d := time.Since(start); d > 2400*time.Millisecond {
			t.Fatalf("the timeout was not applied: %v", d)
		}
	})
	t.Run("a listed host is reachable", func(t *testing.T) {
		res := doForward(t, s, tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, good...)
		if res.Status != 200 || res.Header.Get("x-vault-forward-upstream-status") != strconv.Itoa(200) {
			t.Fatalf("forward: %d %s", res.Status, res.Body)
		}
	})
	assertNoCardDataLogged(t, s, testPANs...)
}

// A card is never revealed when its access cannot be recorded: with the
// audit spool unable to write, a forward is refused with 503
// audit_unavailable before any card is opened, the target receives
// nothing, and vault-proxy reports itself not ready.
func TestForwardRefusedWhenTheAuditLogCannotRecord(t *testing.T) {
	s, tg, pm, tok := oneCardForward(t, "4111111111111111")
	send := func() fwdResult {
		return doForward(t, s, tok, `{"n":"{{ CARD_NUMBER_1 }}"}`, "x-vault-forward-url", tg.URL+"/pay", "x-vault-forward-payment-methods", pm)
	}
	if res := send(); res.Status != http.StatusOK || tg.hits.Load() != 1 {
		t.Fatalf("forward with a working audit log: %d %s", res.Status, res.Body)
	}

	if err := s.VaultProxy.Audit.Close(); err != nil { // what a full or failed disk looks like to Record
		t.Fatal(err)
	}
	res := send()
	if e := res.apiError(t); res.Status != http.StatusServiceUnavailable || e.Code != "audit_unavailable" || e.RequestID == "" {
		t.Fatalf("forward without an audit log: %d %s", res.Status, res.Body)
	}
	if tg.hits.Load() != 1 {
		t.Fatal("the target was called although the access could not be recorded")
	}
	code, body, _ := getJSON(t, http.DefaultClient, s.AdminURL+"/readyz")
	if checks, _ := body["checks"].(map[string]any); code != http.StatusServiceUnavailable || checks["audit-spool"] != "failed" {
		t.Fatalf("/readyz without an audit log = %d %v", code, body)
	}
	assertNoCardDataLogged(t, s, "4111111111111111")
}
