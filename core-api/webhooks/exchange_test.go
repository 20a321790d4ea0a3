package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	coreapi "github.com/payorch/core-api"
)

// An attempt keeps its request as sent (the Basic credentials redacted)
// and the answer: the request shown is what the receiver got, its
// signature verifies, and no credential of either side is in a stored
// row.
func TestAttemptKeepsRequestAndResponse(t *testing.T) {
	const (
		password    = "pa55-word-never-kept"
		cookie      = "sid=cookie-never-kept"
		token       = "token-never-kept"
		answer      = "received by the exchange test: ✓"
		contentType = "text/plain; charset=utf-8"
	)
	f := newFixture(t)
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), body}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("X-Request-Id", "req-1")
		w.Header().Set("Set-Cookie", cookie)
		w.Header().Set("X-Api-Token", token)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	sub, err := f.svc.Create(context.Background(), "default", coreapi.WebhookSubscriptionFields{
		URL: coreapi.Some(srv.URL + "/hooks?tenant=7"), BasicAuth: coreapi.Some(&coreapi.BasicAuth{Username: "merchant", Password: password})})
	if err != nil {
		t.Fatal(err)
	}
	f.newBuyer(t)
	f.runOnce(t)
	r := <-got

	d := f.deliveries(t, sub.ID)[0]
	ds, err := f.svc.EventDeliveries(context.Background(), "default", d.EventID)
	if err != nil || len(ds) != 1 || len(ds[0].Attempts) != 1 {
		t.Fatalf("event deliveries %+v, %v", ds, err)
	}
	a := ds[0].Attempts[0]
	if a.Request == nil || a.Response == nil {
		t.Fatalf("attempt without its exchange: %+v", a)
	}

	// The request, as the receiver got it.
	if a.Request.URL != srv.URL+"/hooks?tenant=7" {
		t.Errorf("request url %q", a.Request.URL)
	}
	for _, h := range []string{"content-type", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature"} {
		if v := a.Request.Headers[h]; v == "" || v != r.header.Get(h) {
			t.Errorf("request header %s = %q, the receiver got %q", h, v, r.header.Get(h))
		}
	}
	if len(a.Request.Headers) != 6 || a.Request.Headers["authorization"] != coreapi.RedactedHeader {
		t.Errorf("request headers %v: want the five and authorization redacted", a.Request.Headers)
	}
	if user, pw, ok := (&http.Request{Header: r.header}).BasicAuth(); !ok || user != "merchant" || pw != password {
		t.Errorf("the receiver got no Basic credentials (%q)", r.header.Get("Authorization"))
	}
	if a.Request.Body == nil || *a.Request.Body != string(r.body) {
		t.Fatalf("request body %v, the receiver got %s", a.Request.Body, r.body)
	}
	// Verified here by hand, not through the package's Sign.
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(*sub.Secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(a.Request.Headers["webhook-id"] + "." + a.Request.Headers["webhook-timestamp"] + "." + *a.Request.Body))
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); a.Request.Headers["webhook-signature"] != want {
		t.Errorf("the request shown does not verify: signature %q, want %q", a.Request.Headers["webhook-signature"], want)
	}

	// The response, its secrets redacted.
	res := a.Response
	if res.StatusCode != http.StatusCreated || res.Body != answer || res.BodyTruncated {
		t.Errorf("response %+v", res)
	}
	want := map[string]string{"content-type": contentType, "x-request-id": "req-1", "set-cookie": coreapi.RedactedHeader,
		"x-api-token": coreapi.RedactedHeader, "content-length": strconv.Itoa(len(answer))}
	for k, v := range want {
		if res.Headers[k] != v {
			t.Errorf("response header %s = %q, want %q", k, res.Headers[k], v)
		}
	}

	// The subscription's listing leaves the payload out.
	if d.Attempts[0].Request == nil || d.Attempts[0].Request.Body != nil || d.Attempts[0].Response.Body != answer {
		t.Errorf("subscription listing's attempt %+v", d.Attempts[0])
	}

	// No secret in any stored row of the attempt.
	var rows string
	if err := f.db.Pool.QueryRow(context.Background(),
		`SELECT coalesce(string_agg(to_jsonb(a)::text, E'\n'), '') FROM webhook_attempts a`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rows, "req-1") {
		t.Fatalf("the rows read are not the attempt's: %s", rows)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("merchant:" + password))
	for _, secret := range []string{password, basic, cookie, token, *sub.Secret} {
		if strings.Contains(rows, secret) {
			t.Errorf("a stored attempt holds %q: %s", secret, rows)
		}
	}
}

// The body kept is at most 4 KiB of valid UTF-8 text, flagged when the
// answer was longer; headers are bounded the same way.
func TestAttemptBoundsTheResponse(t *testing.T) {
	const max = coreapi.MaxWebhookResponseBody
	cases := []struct {
		name      string
		body      string
		headers   map[string]string
		wantBody  string
		truncated bool
	}{
		{name: "fits", body: strings.Repeat("a", max), wantBody: strings.Repeat("a", max)},
		{name: "long", body: strings.Repeat("b", 1<<20), wantBody: strings.Repeat("b", max), truncated: true},
		{name: "cut inside a character", body: strings.Repeat("c", max-1) + "é", wantBody: strings.Repeat("c", max-1), truncated: true},
		{name: "not UTF-8", body: "ok \xff\xfe and \x00 nul", wantBody: "ok \uFFFD and \uFFFD nul"},
		{name: "replacements past the bound", body: strings.Repeat("\xffd", 3000), wantBody: strings.Repeat("\uFFFDd", max/4), truncated: true},
		{name: "empty", body: "", wantBody: ""},
		{name: "many headers", body: "h", wantBody: "h", headers: manyHeaders()},
	}
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cases[mustAtoi(t, r.URL.Query().Get("case"))]
		for k, v := range c.headers {
			w.Header().Set(k, v)
		}
		io.WriteString(w, c.body)
	}))
	t.Cleanup(srv.Close)
	subs := make([]string, len(cases))
	for i := range cases {
		subs[i] = f.subscribe(t, srv.URL+"/?case="+strconv.Itoa(i)).ID
	}
	f.newBuyer(t)
	f.runOnce(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.deliveries(t, subs[i])[0].Attempts[0]
			if a.Response == nil {
				t.Fatalf("no response kept: %+v", a)
			}
			res := a.Response
			if res.Body != c.wantBody || res.BodyTruncated != c.truncated {
				t.Errorf("body of %d bytes (truncated %v), want %d bytes (truncated %v); starts %q",
					len(res.Body), res.BodyTruncated, len(c.wantBody), c.truncated, res.Body[:min(len(res.Body), 16)])
			}
			if len(res.Body) > max || !utf8.ValidString(res.Body) {
				t.Errorf("kept %d bytes, valid UTF-8 %v", len(res.Body), utf8.ValidString(res.Body))
			}
			size := 0
			for k, v := range res.Headers {
				size += len(k) + len(v)
			}
			if len(res.Headers) > coreapi.MaxWebhookResponseHeaders || size > coreapi.MaxWebhookResponseHeaderBytes {
				t.Errorf("%d headers of %d bytes kept", len(res.Headers), size)
			}
			if c.headers != nil {
				if _, kept := res.Headers["x-a-huge"]; kept || res.Headers["x-b-01"] != "v01" || len(res.Headers) != coreapi.MaxWebhookResponseHeaders {
					t.Errorf("headers kept: %v", res.Headers)
				}
			}
		})
	}
}

// manyHeaders are more headers than are kept, one of them larger than
// the whole bound (sorted first, and left out).
func manyHeaders() map[string]string {
	h := map[string]string{"X-A-Huge": strings.Repeat("x", coreapi.MaxWebhookResponseHeaderBytes)}
	for i := 1; i <= 30; i++ {
		n := strconv.Itoa(100 + i)[1:]
		h["X-B-"+n] = "v" + n
	}
	return h
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Error(err)
	}
	return n
}

// An attempt that got no answer keeps the request it tried and no
// response.
func TestAttemptWithoutAnswerHasNoResponse(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens: connection refused
	sub := f.subscribe(t, url)
	f.newBuyer(t)
	f.runOnce(t)
	a := f.deliveries(t, sub.ID)[0].Attempts[0]
	if a.Response != nil || a.ResponseCode != nil || deref(a.Error) != "connection refused" {
		t.Fatalf("attempt %+v (error %s), want no response", a, deref(a.Error))
	}
	if a.Request == nil || a.Request.URL != url || a.Request.Headers["webhook-id"] == "" {
		t.Fatalf("request %+v", a.Request)
	}
	if _, ok := a.Request.Headers["authorization"]; ok {
		t.Fatalf("an authorization header without credentials: %v", a.Request.Headers)
	}
}

// An endpoint that echoes the request back (an echo service) returns the
// Basic credentials: they are redacted in the body and headers kept,
// also when the body's bound cuts one.
func TestAttemptRedactsEchoedCredentials(t *testing.T) {
	const password = "echoed-pa55word"
	token := base64.StdEncoding.EncodeToString([]byte("merchant:" + password))
	pad := strings.Repeat("p", coreapi.MaxWebhookResponseBody-len("Basic ")-5) // the bound cuts the token after 5 characters
	cases := []struct {
		name      string
		body      string // %s: the Authorization header received
		wantBody  string
		truncated bool
	}{
		{name: "echoed whole", body: `{"headers":{"Authorization":"%s"},"password":"` + password + `"}`,
			wantBody: `{"headers":{"Authorization":"Basic [redacted]"},"password":"[redacted]"}`},
		{name: "cut by the bound", body: pad + "%s and more", wantBody: pad + "Basic ", truncated: true},
	}
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cases[mustAtoi(t, r.URL.Query().Get("case"))]
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		io.WriteString(w, strings.Replace(c.body, "%s", r.Header.Get("Authorization"), 1))
	}))
	t.Cleanup(srv.Close)
	subs := make([]string, len(cases))
	for i := range cases {
		s, err := f.svc.Create(context.Background(), "default", coreapi.WebhookSubscriptionFields{
			URL:       coreapi.Some(srv.URL + "/?case=" + strconv.Itoa(i)),
			BasicAuth: coreapi.Some(&coreapi.BasicAuth{Username: "merchant", Password: password})})
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = s.ID
	}
	f.newBuyer(t)
	f.runOnce(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := f.deliveries(t, subs[i])[0].Attempts[0].Response
			if res == nil {
				t.Fatal("no response kept")
			}
			if res.Body != c.wantBody || res.BodyTruncated != c.truncated {
				t.Errorf("body %q (truncated %v), want %q", res.Body[max(0, len(res.Body)-80):], res.BodyTruncated, c.wantBody[max(0, len(c.wantBody)-80):])
			}
			if res.Headers["x-echo"] != "Basic [redacted]" {
				t.Errorf("x-echo %q", res.Headers["x-echo"])
			}
			for _, part := range []string{token[:8], password} {
				if strings.Contains(res.Body, part) {
					t.Errorf("the body keeps %q", part)
				}
			}
		})
	}
}

// An echo service that answers JSON escapes what it echoes: the quote
// and backslash of a password, and with some encoders the "/" of the
// encoded credentials. The escaped forms are redacted too.
func TestAttemptRedactsCredentialsEchoedAsJSON(t *testing.T) {
	const password = `x/y"z\pa55word?` // its encoded pair holds a "/"
	token := base64.StdEncoding.EncodeToString([]byte("merchant:" + password))
	if !strings.Contains(token, "/") {
		t.Fatalf("the encoded credentials %q hold no /: the test shows nothing", token)
	}
	jsonString := func(s string, slashes bool) string {
		b, _ := json.Marshal(s)
		if slashes {
			return strings.ReplaceAll(string(b), "/", `\/`)
		}
		return string(b)
	}
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slashes := r.URL.Query().Get("slashes") == "1"
		io.WriteString(w, `{"authorization":`+jsonString(r.Header.Get("Authorization"), slashes)+
			`,"password":`+jsonString(password, slashes)+`}`)
	}))
	t.Cleanup(srv.Close)
	var subs []string
	for _, q := range []string{"0", "1"} {
		s, err := f.svc.Create(context.Background(), "default", coreapi.WebhookSubscriptionFields{
			URL:       coreapi.Some(srv.URL + "/?slashes=" + q),
			BasicAuth: coreapi.Some(&coreapi.BasicAuth{Username: "merchant", Password: password})})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s.ID)
	}
	f.newBuyer(t)
	f.runOnce(t)
	for i, sub := range subs {
		res := f.deliveries(t, sub)[0].Attempts[0].Response
		if res == nil {
			t.Fatal("no response kept")
		}
		if want := `{"authorization":"Basic [redacted]","password":"[redacted]"}`; res.Body != want {
			t.Errorf("slashes escaped %v: body %q, want %q", i == 1, res.Body, want)
		}
	}
}
