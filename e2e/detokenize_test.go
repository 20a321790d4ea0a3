package e2e

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/logging/panscan"
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
		if got := proc.lastSeen().line; got != tc.line {
			t.Fatalf("method %q: the processor received %q, want %q", tc.method, got, tc.line)
		}
	}
	assertNoCardDataLogged(t, s, testPANs...)
}

// A processor that echoes the request, or quotes the card number in an
// error, must not put it into core-api's zone: the answer's status line,
// header names and values and body are searched, what looks like a card
// number is masked (a JSON body stays JSON), the call's audit record says
// how many were masked where, and the instance's counter moves.
func TestDetokenizedAnswerHoldsNoCardNumber(t *testing.T) {
	const pan = "4111111111111111"
	spaced := "4111 1111 1111 1111"
	proc := newProcessorAnswering(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch r.URL.Path {
		case "/echo-json":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":"auth_1","request":%s,"bare":%s,"negative":-%s,"exponent":%se0,"message":"card %s declined","order":"1234567890123"}`,
				body, pan, pan, pan, spaced)
		case "/echo-text":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusPaymentRequired)
			fmt.Fprintf(w, "declined: card %s\nrequest was %s", spaced, body)
		case "/echo-header":
			w.Header().Set("X-Echo-Card", "number="+pan)
			w.Header().Set("X-Card-"+pan, "seen")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"ok":true}`))
		case "/echo-reason":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "HTTP/1.1 403 Card %s Refused\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", pan)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"id":"auth_1","order":"1234567890123","amount":1299}`))
		}
	})
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	tok := s.Token(t, "payment-methods.write")
	id := vaultCard(t, s, tok, pan, "")["id"].(string)

	type masked struct{ StatusLine, Headers, Body int }
	cases := []struct {
		path   string
		status int
		masked masked
		check  func(t *testing.T, out zone.DetokenizeResponse)
	}{
		{"/echo-json", 201, masked{Body: 5}, func(t *testing.T, out zone.DetokenizeResponse) {
			var body map[string]any
			if err := json.Unmarshal(out.Body, &body); err != nil {
				t.Fatalf("the masked body is not JSON: %v", err)
			}
			want := map[string]any{"id": "auth_1", "request": map[string]any{"n": panscan.Replacement}, "bare": panscan.Replacement,
				"negative": panscan.Replacement, "exponent": panscan.Replacement, "message": "card " + panscan.Replacement + " declined", "order": "1234567890123"}
			if !reflect.DeepEqual(body, want) {
				t.Fatalf("masked body %v, want %v", body, want)
			}
		}},
		{"/echo-text", 402, masked{Body: 2}, func(t *testing.T, out zone.DetokenizeResponse) {
			if want := "declined: card " + panscan.Replacement + "\nrequest was {\"n\":\"" + panscan.Replacement + "\"}"; out.Text != want {
				t.Fatalf("masked text %q, want %q", out.Text, want)
			}
		}},
		{"/echo-header", 202, masked{Headers: 2}, func(t *testing.T, out zone.DetokenizeResponse) {
			if out.Headers["x-echo-card"] != "number="+panscan.Replacement || out.Headers["x-card-"+panscan.Replacement] != "seen" {
				t.Fatalf("masked headers %v", out.Headers)
			}
		}},
		{"/echo-reason", 403, masked{StatusLine: 1}, nil},
		{"/clean", 200, masked{}, func(t *testing.T, out zone.DetokenizeResponse) {
			if string(out.Body) != `{"id":"auth_1","order":"1234567890123","amount":1299}` {
				t.Fatalf("an answer without a card number was changed: %s", out.Body)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			before := s.VaultProxy.Detokenize.Masked()
			code, raw := detokenize(t, s, "default", zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: tc.path,
				Body: `{"n":"{{ CARD_NUMBER_1 }}"}`, PaymentMethod: []string{id}, Purpose: "authorization",
				Headers: map[string]string{"content-type": "application/json"}})
			if code != 200 {
				t.Fatalf("detokenize: %d %s", code, raw)
			}
			if !strings.Contains(proc.last(), pan) {
				t.Fatal("the processor did not receive the card number; the test proves nothing")
			}
			logging.AssertNoPANIn(t, "the answer core-api gets", string(raw), testPANs...)
			var out zone.DetokenizeResponse
			if err := json.Unmarshal(raw, &out); err != nil || out.Status != tc.status {
				t.Fatalf("answer %s (%v), want status %d", raw, err, tc.status)
			}
			if tc.check != nil {
				tc.check(t, out)
			}

			total := tc.masked.StatusLine + tc.masked.Headers + tc.masked.Body
			after := s.VaultProxy.Detokenize.Masked()
			wantAnswers := before.Answers
			if total > 0 {
				wantAnswers++
			}
			if after.Answers != wantAnswers || after.Numbers != before.Numbers+uint64(total) {
				t.Fatalf("counter went from %+v to %+v, want %d more numbers in %d more answers", before, after, total, wantAnswers-before.Answers)
			}

			events, all := forwardAudit(t, s)
			var detail map[string]any
			for _, e := range events {
				if e.Action == "detokenize" && e.Outcome == "success" && e.Detail["status"] == float64(tc.status) {
					detail = e.Detail
					break
				}
			}
			if detail == nil {
				t.Fatalf("no audit record of the call: %s", all)
			}
			logging.AssertNoPANIn(t, "audit log", all, testPANs...)
			got, ok := detail["masked_card_numbers"]
			if total == 0 {
				if ok {
					t.Fatalf("an answer without a card number is audited as masked: %v", detail)
				}
				return
			}
			want := map[string]any{"status_line": float64(tc.masked.StatusLine), "headers": float64(tc.masked.Headers), "body": float64(tc.masked.Body)}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("audited masked_card_numbers %v, want %v", got, want)
			}
		})
	}
	assertNoCardDataLogged(t, s, testPANs...)
}

// A compressed answer would hide a card number from the search above: the
// processor is asked for identity whatever core-api asked for, and one
// that compresses all the same is refused (502, audited), its answer not
// passed on. A masked answer's Content-Length, of the body before masking,
// is not passed on either.
func TestDetokenizedAnswerIsNeverCompressed(t *testing.T) {
	const pan = "4111111111111111"
	var acceptEncoding atomic.Value // string
	proc := newProcessorAnswering(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		acceptEncoding.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, `{"echo":%s}`, body)
			_ = zw.Close()
			return
		}
		fmt.Fprintf(w, `{"echo":%s}`, body)
	})
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	tok := s.Token(t, "payment-methods.write")
	id := vaultCard(t, s, tok, pan, "")["id"].(string)
	call := func(path string) (int, []byte) {
		return detokenize(t, s, "default", zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: path,
			Body: `{"n":"{{ CARD_NUMBER_1 }}"}`, PaymentMethod: []string{id}, Purpose: "authorization",
			Headers: map[string]string{"content-type": "application/json", "accept-encoding": "gzip, br"}})
	}

	code, raw := call("/plain")
	if code != 200 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}
	if got, _ := acceptEncoding.Load().(string); got != "identity" {
		t.Fatalf("the processor was asked for Accept-Encoding %q, want identity", got)
	}
	var out zone.DetokenizeResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Headers["content-length"]; ok {
		t.Fatalf("content-length of the unmasked body passed on: %v", out.Headers)
	}

	code, raw = call("/gzip")
	var e apierror.Error
	if err := json.Unmarshal(raw, &e); err != nil || code != 502 || e.Code != "forward_response_encoded" {
		t.Fatalf("compressed answer: %d %s, want 502 forward_response_encoded", code, raw)
	}
	logging.AssertNoPANIn(t, "the answer core-api gets", string(raw), testPANs...)
	events, all := forwardAudit(t, s)
	found := false
	for _, ev := range events {
		found = found || (ev.Action == "detokenize" && ev.Outcome == "failure: forward_response_encoded")
	}
	if !found {
		t.Fatalf("the refused answer is not audited: %s", all)
	}
}
