package mockdirect

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

type client struct {
	t   *testing.T
	url string
}

func (c client) do(method, path, rid, body string) (int, Order, Error) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url+path, bytes.NewBufferString(body))
	req.SetBasicAuth("sandbox_client_1", "secret")
	if rid != "" {
		req.Header.Set(RequestIDHeader, rid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var o Order
	var e Error
	_ = json.Unmarshal(raw, &o)
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, o, e
}

func start(t *testing.T) client {
	srv := httptest.NewServer(newServer(newStore(100), "http://sandbox.example", func() time.Time { return time.Unix(0, 0).UTC() }))
	t.Cleanup(srv.Close)
	return client{t, srv.URL}
}

func TestOrderLifecycle(t *testing.T) {
	for _, tc := range []struct {
		intent, action, decision string
		status                   int
		issue                    string
	}{
		{IntentCapture, "capture", "approve", 201, ""},
		{IntentAuthorize, "authorize", "approve", 201, ""},
		{IntentCapture, "capture", "decline", 422, IssueDeclinedByPayer},
		{IntentCapture, "capture", "", 422, IssueNotApproved},
		{IntentCapture, "authorize", "approve", 422, IssueIntentMismatch},
	} {
		t.Run(tc.intent+"/"+tc.action+"/"+tc.decision, func(t *testing.T) {
			c := start(t)
			st, o, _ := c.do("POST", "/v2/checkout/orders", "r1", `{"intent":"`+tc.intent+`","reference_id":"tx","amount":{"currency_code":"USD","value":1234}}`)
			if st != 201 || o.Status != StatusCreated || o.Links[1].Href != "http://sandbox.example/checkoutnow?token="+o.ID {
				t.Fatalf("create: %d %+v", st, o)
			}
			// Before the buyer decided: refused, and not kept under the id.
			if st, _, e := c.do("POST", "/v2/checkout/orders/"+o.ID+"/"+tc.action, "r2", ""); st != 422 || e.Details[0].Issue == "" {
				t.Fatalf("before the decision: %d %+v", st, e)
			}
			if tc.decision != "" {
				resp, err := http.Post(c.url+"/sandbox/orders/"+o.ID+"/"+tc.decision, "", nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("decide: %v %v", resp, err)
				}
				resp.Body.Close()
			}
			st, done, e := c.do("POST", "/v2/checkout/orders/"+o.ID+"/"+tc.action, "r2", "")
			if st != tc.status || (tc.issue != "" && e.Details[0].Issue != tc.issue) {
				t.Fatalf("%s: %d %+v", tc.action, st, e)
			}
			if tc.status == 201 && (done.Status != StatusCompleted || done.Payments == nil) {
				t.Fatalf("completed order: %+v", done)
			}
			// The same request id is the same answer; a new one on a
			// completed order is refused.
			if st2, again, _ := c.do("POST", "/v2/checkout/orders/"+o.ID+"/"+tc.action, "r2", ""); st2 != st || again.Status != done.Status {
				t.Fatalf("replay: %d %+v", st2, again)
			}
			if _, got, _ := c.do("GET", "/v2/checkout/orders/"+o.ID, "", ""); got.Status == "" {
				t.Fatalf("get: %+v", got)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	c := start(t)
	for _, tc := range []struct {
		name, path, rid, body string
		status                int
	}{
		{"no request id", "/v2/checkout/orders", "", `{}`, 400},
		{"bad json", "/v2/checkout/orders", "a", `{`, 400},
		{"bad intent", "/v2/checkout/orders", "b", `{"intent":"SALE","amount":{"currency_code":"USD","value":1}}`, 422},
		{"bad amount", "/v2/checkout/orders", "c", `{"intent":"CAPTURE","amount":{"currency_code":"USD","value":0}}`, 422},
		{"unknown order", "/v2/checkout/orders/MDO-X/capture", "d", ``, 404},
	} {
		if st, _, _ := c.do("POST", tc.path, tc.rid, tc.body); st != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, st, tc.status)
		}
	}
	c.do("POST", "/v2/checkout/orders", "e", `{"intent":"CAPTURE","amount":{"currency_code":"USD","value":1}}`)
	if st, _, e := c.do("POST", "/v2/checkout/orders", "e", `{"intent":"CAPTURE","amount":{"currency_code":"USD","value":2}}`); st != 422 || e.Details[0].Issue != IssueRequestIDReused {
		t.Errorf("reused request id: %d %+v", st, e)
	}
	req, _ := http.NewRequest("GET", c.url+"/v2/checkout/orders/x", nil)
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 401 {
		t.Errorf("no credentials: %d", resp.StatusCode)
	}
}

// Captures, voids and refunds of completed orders: partial and multiple
// up to the authorized and captured amounts, idempotent by request id,
// each refusal with its issue and nothing changed.
func TestPaymentOperations(t *testing.T) {
	amount := func(v int) string { return `{"amount":{"currency_code":"USD","value":` + itoa(v) + `}}` }
	order := func(c client, intent string) string {
		_, o, _ := c.do("POST", "/v2/checkout/orders", "o-"+intent, `{"intent":"`+intent+`","amount":{"currency_code":"USD","value":1000}}`)
		resp, err := http.Post(c.url+"/sandbox/orders/"+o.ID+"/approve", "", nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("approve: %v %v", resp, err)
		}
		resp.Body.Close()
		action := "authorize"
		if intent == IntentCapture {
			action = "capture"
		}
		if st, _, _ := c.do("POST", "/v2/checkout/orders/"+o.ID+"/"+action, "c-"+intent, ""); st != 201 {
			t.Fatalf("%s: %d", action, st)
		}
		return o.ID
	}
	type step struct {
		path, rid, body string
		status          int
		issue           string
	}
	for name, tc := range map[string]struct {
		intent string
		steps  []step
	}{
		"partial captures and refunds": {IntentAuthorize, []step{
			{"captures", "k1", amount(400), 201, ""},
			{"captures", "k1", amount(400), 201, ""}, // the same request again: the stored answer
			{"captures", "k1", amount(300), 422, IssueRequestIDReused},
			{"captures", "k2", amount(601), 422, IssueCaptureExceeded},
			{"void", "v1", "", 422, IssueAlreadyCaptured},
			{"captures", "k3", amount(600), 201, ""},
			{"refunds", "r1", amount(700), 201, ""},
			{"refunds", "r2", amount(301), 422, IssueRefundExceeded},
			{"refunds", "r3", amount(300), 201, ""},
			{"refunds", "r4", `{"amount":{"currency_code":"EUR","value":1}}`, 422, IssueCurrencyMismatch},
		}},
		"void": {IntentAuthorize, []step{
			{"void", "v1", "", 200, ""},
			{"void", "v1", "", 200, ""},
			{"void", "v2", "", 422, IssueVoided},
			{"captures", "k1", amount(1), 422, IssueVoided},
			{"refunds", "r1", amount(1), 422, IssueRefundExceeded},
		}},
		"sale": {IntentCapture, []step{
			{"captures", "k1", amount(1), 422, IssueNotAuthorized},
			{"void", "v1", "", 422, IssueNotAuthorized},
			{"refunds", "r1", amount(0), 422, IssueInvalidAmount},
			{"refunds", "r1", amount(1000), 201, ""},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			c := start(t)
			id := order(c, tc.intent)
			for i, s := range tc.steps {
				st, _, e := c.do("POST", "/v2/checkout/orders/"+id+"/"+s.path, s.rid, s.body)
				if got := issue(e); st != s.status || got != s.issue {
					t.Fatalf("step %d %s: %d %s, want %d %s", i, s.path, st, got, s.status, s.issue)
				}
			}
		})
	}
	c := start(t)
	_, o, _ := c.do("POST", "/v2/checkout/orders", "o", `{"intent":"AUTHORIZE","amount":{"currency_code":"USD","value":1000}}`)
	if st, _, e := c.do("POST", "/v2/checkout/orders/"+o.ID+"/captures", "k", amount(1)); st != 422 || issue(e) != IssueNotCompleted {
		t.Fatalf("capture before completion: %d %+v", st, e)
	}
}

func issue(e Error) string {
	if len(e.Details) == 0 {
		return ""
	}
	return e.Details[0].Issue
}

func itoa(v int) string { return strconv.Itoa(v) }
