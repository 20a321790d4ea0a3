package outbound

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// loopbackClient allows exactly the given test server (as a config would
// list it in development).
func loopbackClient(t testing.TB, port int, p Policy) *Client {
	t.Helper()
	p.AllowLoopback = true
	p.AllowedHosts = append(p.AllowedHosts, hostPort(port))
	return mustNew(t, p)
}

func TestRedirectIsReturnedNotFollowed(t *testing.T) {
	canary := startServer(t, nil, nil)
	for _, loc := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/secret", canary.port), // loopback: allowed for this client, still not fetched
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/",
	} {
		target := startServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, loc, http.StatusFound)
		})
		c := mustNew(t, Policy{AllowLoopback: true, AllowedHosts: []string{hostPort(target.port), hostPort(canary.port)}})
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		req.SetRequestURI(fmt.Sprintf("http://127.0.0.1:%d/pay", target.port))
		req.Header.SetMethod("POST")
		if err := c.Do(context.Background(), req, resp, CallOptions{}); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusFound {
			t.Errorf("status %d, want 302", resp.StatusCode())
		}
		if got := string(resp.Header.Peek("Location")); got != loc {
			t.Errorf("Location %q, want %q", got, loc)
		}
		if target.requests.Load() != 1 {
			t.Errorf("target saw %d requests", target.requests.Load())
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	if canary.accepts() != 0 {
		t.Errorf("redirect target was fetched (%d connections)", canary.accepts())
	}
}

func TestResponseTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 64<<10)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked=", chunked), func(t *testing.T) {
			s := startServer(t, nil, func(w http.ResponseWriter, _ *http.Request) {
				if chunked {
					for i := 0; i < 4; i++ {
						_, _ = w.Write(big[:16<<10])
						w.(http.Flusher).Flush()
					}
					return
				}
				_, _ = w.Write(big)
			})
			c := loopbackClient(t, s.port, Policy{MaxResponseBytes: 32 << 10})
			_, _, err := do(t, c, "GET", fmt.Sprintf("http://127.0.0.1:%d/", s.port), nil, CallOptions{})
			wantCode(t, err, CodeResponseTooLarge)
			if !errors.Is(err, ErrResponseTooLarge) {
				t.Errorf("errors.Is(err, ErrResponseTooLarge) is false: %v", err)
			}
			if s.requests.Load() != 1 {
				t.Errorf("target saw %d requests, want 1 (no retry)", s.requests.Load())
			}
		})
	}
	t.Run("at the limit", func(t *testing.T) {
		s := startServer(t, nil, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(big[:32<<10]) })
		c := loopbackClient(t, s.port, Policy{MaxResponseBytes: 32 << 10})
		status, body, err := do(t, c, "GET", fmt.Sprintf("http://127.0.0.1:%d/", s.port), nil, CallOptions{})
		if err != nil || status != 200 || len(body) != 32<<10 {
			t.Fatalf("status %d len %d err %v", status, len(body), err)
		}
	})
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, nil, func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	})
	t.Cleanup(func() { close(release) })
	c := loopbackClient(t, s.port, Policy{})
	const timeout = 300 * time.Millisecond
	start := time.Now()
	_, _, err := do(t, c, "PUT", fmt.Sprintf("http://127.0.0.1:%d/", s.port), []byte("x"), CallOptions{Timeout: timeout})
	elapsed := time.Since(start)
	wantCode(t, err, CodeTimeout)
	if elapsed < timeout || elapsed > timeout+700*time.Millisecond {
		t.Errorf("took %v, want about %v", elapsed, timeout)
	}
	if s.requests.Load() != 1 {
		t.Errorf("target saw %d requests, want 1 (timeouts are not retried)", s.requests.Load())
	}

	t.Run("context deadline wins", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI(fmt.Sprintf("http://127.0.0.1:%d/", s.port))
		start := time.Now()
		err := c.Do(ctx, req, nil, CallOptions{Timeout: 10 * time.Second})
		wantCode(t, err, CodeTimeout)
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("cancelled context sends nothing", func(t *testing.T) {
		before := s.accepts()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI(fmt.Sprintf("http://127.0.0.1:%d/", s.port))
		if err := c.Do(ctx, req, nil, CallOptions{}); err == nil {
			t.Fatal("no error")
		}
		if s.accepts() != before {
			t.Error("a connection was made")
		}
	})
	t.Run("slow resolver", func(t *testing.T) {
		c := mustNew(t, Policy{Resolver: blockingResolver{}})
		start := time.Now()
		_, _, err := do(t, c, "GET", "https://slow.example/", nil, CallOptions{Timeout: 200 * time.Millisecond})
		wantCode(t, err, CodeTimeout)
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %v", d)
		}
	})
}

type blockingResolver struct{}

func (blockingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	c := loopbackClient(t, port, Policy{})
	_, _, err = do(t, c, "POST", fmt.Sprintf("http://127.0.0.1:%d/", port), []byte("x"), CallOptions{})
	wantCode(t, err, CodeConnectionRefused)
}

// TestAtMostOnce: a target that takes the request and closes the
// connection without answering gets it once; fasthttp's default would
// resend idempotent methods (GET, HEAD, PUT) up to five times.
func TestAtMostOnce(t *testing.T) {
	for _, method := range []string{"PUT", "GET", "DELETE", "POST"} {
		t.Run(method, func(t *testing.T) {
			var arrivals atomic.Int64
			port := startRawServer(t, func(conn net.Conn) {
				br := bufio.NewReader(conn)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				arrivals.Add(1)
				// Close without a byte of response.
			})
			c := loopbackClient(t, port, Policy{})
			_, _, err := do(t, c, method, fmt.Sprintf("http://127.0.0.1:%d/charge", port), []byte(`{"amount":100}`), CallOptions{Timeout: 2 * time.Second})
			wantCode(t, err, CodeFailed)
			time.Sleep(50 * time.Millisecond) // a resend would have arrived by now
			if got := arrivals.Load(); got != 1 {
				t.Fatalf("request arrived %d times, want exactly 1", got)
			}
		})
	}
	t.Run("reused connection", func(t *testing.T) {
		// The first request is answered on a kept-alive connection, the
		// second is read and dropped: the classic case where a client
		// "retries on a fresh connection".
		var arrivals atomic.Int64
		port := startRawServer(t, func(conn net.Conn) {
			br := bufio.NewReader(conn)
			for i := 0; ; i++ {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				arrivals.Add(1)
				if i > 0 {
					return
				}
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		c := loopbackClient(t, port, Policy{})
		url := fmt.Sprintf("http://127.0.0.1:%d/charge", port)
		if status, _, err := do(t, c, "PUT", url, []byte("1"), CallOptions{}); err != nil || status != 200 {
			t.Fatalf("first: %d %v", status, err)
		}
		_, _, err := do(t, c, "PUT", url, []byte("2"), CallOptions{Timeout: 2 * time.Second})
		wantCode(t, err, CodeFailed)
		time.Sleep(50 * time.Millisecond)
		if got := arrivals.Load(); got != 2 {
			t.Fatalf("%d arrivals, want 2 (one per call)", got)
		}
	})
}

// startRawServer accepts TCP connections on loopback and hands each to h.
func startRawServer(t *testing.T, h func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				h(conn)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestRequestAsSent(t *testing.T) {
	type seen struct {
		ua, host, uri, body string
		hasUA               bool
	}
	got := make(chan seen, 1)
	s := startServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, hasUA := r.Header["User-Agent"]
		got <- seen{ua: r.UserAgent(), hasUA: hasUA, host: r.Host, uri: r.RequestURI, body: string(b)}
	})
	c := loopbackClient(t, s.port, Policy{})
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(fmt.Sprintf("HTTP://127.0.0.1:%d/a//b/../c%%2Fd?x=1&y=%%20#frag", s.port))
	req.Header.SetHost("internal.example") // overridden by the checked destination
	req.UseHostHeader = true
	req.Header.SetMethod("POST")
	req.SetBodyString("payload")
	if err := c.Do(context.Background(), req, nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	g := <-got
	if g.hasUA {
		t.Errorf("default User-Agent sent: %q", g.ua)
	}
	if want := hostPort(s.port); g.host != want {
		t.Errorf("Host %q, want %q", g.host, want)
	}
	if want := "/a//b/../c%2Fd?x=1&y=%20"; g.uri != want {
		t.Errorf("request target %q, want %q (not normalised)", g.uri, want)
	}
	if g.body != "payload" {
		t.Errorf("body %q", g.body)
	}
}

func TestRequestLimits(t *testing.T) {
	s := startServer(t, nil, nil)
	c := loopbackClient(t, s.port, Policy{MaxRequestBytes: 10})
	url := fmt.Sprintf("http://127.0.0.1:%d/", s.port)
	_, _, err := do(t, c, "POST", url, bytes.Repeat([]byte("x"), 11), CallOptions{})
	wantCode(t, err, CodeRequestTooLarge)
	if _, _, err := do(t, c, "POST", url, bytes.Repeat([]byte("x"), 10), CallOptions{}); err != nil {
		t.Fatal(err)
	}

	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(url)
	req.Header.SetMethod("POST")
	req.SetBodyStream(strings.NewReader("streamed"), -1)
	if err := c.Do(context.Background(), req, nil, CallOptions{}); err == nil {
		t.Fatal("body stream accepted")
	}
	if s.requests.Load() != 1 {
		t.Errorf("%d requests reached the server, want 1", s.requests.Load())
	}

	t.Run("control characters in target", func(t *testing.T) {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI(url)
		req.URI().SetPath("/a\r\nX-Injected: 1")
		err := c.Do(context.Background(), req, nil, CallOptions{})
		wantCode(t, err, CodeInvalidURL)
	})
}

func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	s := startServer(t, pki.serverConfig(false), nil)
	url := fmt.Sprintf("https://127.0.0.1:%d/", s.port)

	t.Run("untrusted", func(t *testing.T) {
		c := loopbackClient(t, s.port, Policy{RequireHTTPS: true})
		_, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{})
		wantCode(t, err, CodeTLSFailed)
	})
	t.Run("policy extra CA", func(t *testing.T) {
		c := loopbackClient(t, s.port, Policy{RequireHTTPS: true, ExtraRootCAs: pki.ca.Pool()})
		status, body, err := do(t, c, "POST", url, []byte("x"), CallOptions{})
		if err != nil || status != 200 || string(body) != "ok" {
			t.Fatalf("status %d body %q err %v", status, body, err)
		}
	})
	t.Run("call extra CA", func(t *testing.T) {
		c := loopbackClient(t, s.port, Policy{RequireHTTPS: true})
		status, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ExtraRootCAs: pki.ca.Pool()})
		if err != nil || status != 200 {
			t.Fatalf("status %d err %v", status, err)
		}
	})
	t.Run("name verified against the certificate", func(t *testing.T) {
		res := newStubResolver()
		res.set("target.example", "127.0.0.1")
		res.set("other.example", "127.0.0.1")
		c := mustNew(t, Policy{AllowLoopback: true, Resolver: res, ExtraRootCAs: pki.ca.Pool()})
		opts := CallOptions{AllowedHosts: []string{fmt.Sprintf("target.example:%d", s.port), fmt.Sprintf("other.example:%d", s.port)}}
		status, _, err := do(t, c, "GET", fmt.Sprintf("https://target.example:%d/", s.port), nil, opts)
		if err != nil || status != 200 {
			t.Fatalf("target.example: status %d err %v", status, err)
		}
		_, _, err = do(t, c, "GET", fmt.Sprintf("https://other.example:%d/", s.port), nil, opts)
		wantCode(t, err, CodeTLSFailed)
	})
	t.Run("tls 1.1 server refused", func(t *testing.T) {
		cfg := pki.serverConfig(false)
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
		old := startServer(t, cfg, nil)
		c := loopbackClient(t, old.port, Policy{ExtraRootCAs: pki.ca.Pool()})
		_, _, err := do(t, c, "GET", fmt.Sprintf("https://127.0.0.1:%d/", old.port), nil, CallOptions{})
		wantCode(t, err, CodeTLSFailed)
		if old.requests.Load() != 0 {
			t.Error("request reached a TLS 1.1 server")
		}
	})
}

func TestMTLS(t *testing.T) {
	pki := newTestPKI(t)
	for _, maxVersion := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(maxVersion), func(t *testing.T) {
			var lastPeer atomic.Value
			cfg := pki.serverConfig(true)
			cfg.MaxVersion = maxVersion
			s := startServer(t, cfg, func(w http.ResponseWriter, r *http.Request) {
				lastPeer.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
				_, _ = w.Write([]byte("ok"))
			})
			c := loopbackClient(t, s.port, Policy{ExtraRootCAs: pki.ca.Pool()})
			url := fmt.Sprintf("https://127.0.0.1:%d/", s.port)

			_, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{})
			wantCode(t, err, CodeTLSFailed)
			if s.requests.Load() != 0 {
				t.Fatal("request without a client certificate was served")
			}

			cert := pki.client
			status, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ClientCertificate: &cert})
			if err != nil || status != 200 {
				t.Fatalf("with certificate: status %d err %v", status, err)
			}
			if got := lastPeer.Load(); got != "merchant-a" {
				t.Errorf("server saw %v", got)
			}

			other := pki.other
			if _, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ClientCertificate: &other}); err != nil {
				t.Fatal(err)
			}
			if got := lastPeer.Load(); got != "merchant-b" {
				t.Errorf("server saw %v, want merchant-b (identities must not share connections)", got)
			}
			// Same certificate again (a fresh copy): served from the cache.
			cert2 := pki.client
			cert2.Leaf = nil
			if _, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ClientCertificate: &cert2}); err != nil {
				t.Fatal(err)
			}
			if got := lastPeer.Load(); got != "merchant-a" {
				t.Errorf("server saw %v", got)
			}
			if n := len(c.buckets); n != 2 {
				t.Errorf("%d cached identities, want 2", n)
			}
		})
	}
	t.Run("key does not match certificate", func(t *testing.T) {
		s := startServer(t, pki.serverConfig(true), nil)
		c := loopbackClient(t, s.port, Policy{ExtraRootCAs: pki.ca.Pool()})
		url := fmt.Sprintf("https://127.0.0.1:%d/", s.port)
		good := pki.client
		if _, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ClientCertificate: &good}); err != nil {
			t.Fatal(err)
		}
		// merchant-a's public certificate with merchant-b's key must not
		// reuse merchant-a's cached client (and its key).
		forged := pki.client
		forged.PrivateKey = pki.other.PrivateKey
		before := s.requests.Load()
		_, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ClientCertificate: &forged})
		wantCode(t, err, CodeTLSFailed)
		if s.requests.Load() != before {
			t.Error("forged identity was served")
		}
	})
}

func TestTLSClientCache(t *testing.T) {
	pki := newTestPKI(t)
	s := startServer(t, pki.serverConfig(false), nil)
	c := loopbackClient(t, s.port, Policy{MaxTLSClients: 2})
	url := fmt.Sprintf("https://127.0.0.1:%d/", s.port)
	pem := pki.ca.CertPEM()
	newPool := func() *x509.CertPool {
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(pem)
		return p
	}
	// The same roots parsed again share one client.
	for i := 0; i < 3; i++ {
		if _, _, err := do(t, c, "GET", url, nil, CallOptions{ExtraRootCAs: newPool()}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.buckets); n != 1 {
		t.Fatalf("%d cached clients, want 1", n)
	}
	certA, certB := pki.client, pki.other
	for _, cert := range []*tls.Certificate{&certA, &certB} {
		if _, _, err := do(t, c, "GET", url, nil, CallOptions{ExtraRootCAs: newPool(), ClientCertificate: cert}); err != nil {
			t.Fatal(err)
		}
	}
	if n, l := len(c.buckets), c.lru.Len(); n != 2 || l != 2 {
		t.Fatalf("cache holds %d (lru %d), want the bound 2", n, l)
	}
}

// TestConcurrent exercises the shared clients and the identity cache under
// the race detector.
func TestConcurrent(t *testing.T) {
	pki := newTestPKI(t)
	s := startServer(t, pki.serverConfig(false), nil)
	c := loopbackClient(t, s.port, Policy{ExtraRootCAs: pki.ca.Pool(), MaxTLSClients: 1})
	url := fmt.Sprintf("https://127.0.0.1:%d/", s.port)
	ids := []*tls.Certificate{nil, &pki.client, &pki.other}
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{ClientCertificate: ids[i%3]})
			if err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestErrorsNeverCarryRequestData: a target answering garbage that echoes
// the request must not get the request into the error text.
func TestErrorsNeverCarryRequestData(t *testing.T) {
	const pan = "4111111111111111"
	port := startRawServer(t, func(conn net.Conn) {
		br := bufio.NewReader(conn)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 2x0 %s\r\nX: %s\r\n\r\n", b, req.Header.Get("Authorization"))
	})
	c := loopbackClient(t, port, Policy{})
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(fmt.Sprintf("http://127.0.0.1:%d/", port))
	req.Header.SetMethod("POST")
	req.Header.Set("Authorization", "Bearer secret-token")
	req.SetBodyString(`{"number":"` + pan + `"}`)
	err := c.Do(context.Background(), req, nil, CallOptions{})
	e := wantCode(t, err, CodeFailed)
	for _, s := range []string{e.Error(), e.Message, fmt.Sprintf("%+v", e)} {
		if strings.Contains(s, pan) || strings.Contains(s, "secret-token") {
			t.Errorf("error carries request data: %s", s)
		}
	}
}

func TestCloseRefusesLaterCalls(t *testing.T) {
	s := startServer(t, nil, nil)
	c := loopbackClient(t, s.port, Policy{})
	_ = c.Close()
	_, _, err := do(t, c, "GET", fmt.Sprintf("http://127.0.0.1:%d/", s.port), nil, CallOptions{})
	wantCode(t, err, CodeFailed)
	if s.accepts() != 0 {
		t.Error("closed client connected")
	}
}

// TestCheckURLAllocations: CheckURL parses a view of the URL and checks a
// view of fasthttp's host, so what is left is net/url's for the
// cross-check. The verdicts are pinned by hostile_test.go and the rest.
// An allocation added to this per-request check fails it, with and
// without the race detector, under which it costs raceAllocs more (set by
// the race build tag). The average is taken over 1000 calls: under the
// race detector it varies with chance (race_test.go), and over 100 calls
// it came out one allocation higher in some runs.
func TestCheckURLAllocations(t *testing.T) {
	c := mustNew(t, Policy{RequireHTTPS: true})
	opts := CallOptions{AllowedHosts: []string{"other.example", "api.processor.example"}}
	for _, tt := range []struct {
		name, raw string
		want      float64
	}{
		{"plain", "https://api.processor.example/v1/charges?x=1", 1},
		{"upper case", "https://API.Processor.Example./v1", 2}, // net/url keeps the case: its host is lower-cased for the comparison
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.CheckURL(tt.raw, opts); err != nil {
				t.Fatalf("CheckURL(%q): %v", tt.raw, err)
			}
			want := tt.want + raceAllocs
			if n := testing.AllocsPerRun(1000, func() { _ = c.CheckURL(tt.raw, opts) }); n > want {
				t.Errorf("CheckURL(%q): %v allocations, want at most %v", tt.raw, n, want)
			}
		})
	}
}

// CheckTarget is the request-target check of Do and CheckURL, for request
// lines written elsewhere: origin-form, and nothing a request line cannot
// carry unencoded.
func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		ok           bool
	}{
		{"root", "/", true},
		{"encoded query", "/v1/pay?x=1%20a&y=%C3%A9", true},
		{"empty", "", false},
		{"not origin-form", "v1/pay", false},
		{"absolute", "https://evil.example/", false},
		{"space", "/v1/pay?x=1 HTTP/1.0", false},
		{"CR LF", "/v1/pay?x=1\r\nHost: evil.example", false},
		{"NUL", "/v1/pay?x=\x00", false},
		{"tab", "/v1/pay?x=\t", false},
		{"DEL", "/v1/pay?x=\x7f", false},
		{"non-ASCII", "/v1/pay?x=\u00e9", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTarget(tc.target)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if e := wantCode(t, err, CodeInvalidURL); e.Rule != "url_request_target" || strings.Contains(e.Error(), "evil.example") {
				t.Fatalf("error %v", e)
			}
		})
	}
}
