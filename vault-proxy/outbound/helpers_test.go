package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payorch/certs"
	"github.com/valyala/fasthttp"
)

// countingListener counts accepted TCP connections: a destination that was
// refused "before a byte is sent" must not even see a connect.
type countingListener struct {
	net.Listener
	accepts atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return c, err
}

// server is a loopback HTTP(S) server counting connections and requests.
type server struct {
	ln       *countingListener
	requests atomic.Int64
	port     int
	addr     string // 127.0.0.1:port
	srv      *http.Server
}

func (s *server) accepts() int64 { return s.ln.accepts.Load() }

// startServer serves h on 127.0.0.1:0 (TLS when cfg is not nil).
func startServer(t *testing.T, cfg *tls.Config, h http.HandlerFunc) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: &countingListener{Listener: ln}}
	s.addr = ln.Addr().String()
	s.port = ln.Addr().(*net.TCPAddr).Port
	var inner net.Listener = s.ln
	if cfg != nil {
		inner = tls.NewListener(s.ln, cfg)
	}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.requests.Add(1)
			if h != nil {
				h(w, r)
				return
			}
			_, _ = w.Write([]byte("ok"))
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // refused handshakes are expected

	}
	go func() { _ = s.srv.Serve(inner) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// stubResolver answers from a table; a func entry may change its answer
// from one lookup to the next (DNS rebinding).
type stubResolver struct {
	mu      sync.Mutex
	answers map[string]func(n int) []netip.Addr
	lookups map[string]int
}

func newStubResolver() *stubResolver {
	return &stubResolver{answers: map[string]func(int) []netip.Addr{}, lookups: map[string]int{}}
}

func (r *stubResolver) set(host string, addrs ...string) {
	ips := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		ips[i] = netip.MustParseAddr(a)
	}
	r.setFunc(host, func(int) []netip.Addr { return ips })
}

func (r *stubResolver) setFunc(host string, f func(n int) []netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[host] = f
}

func (r *stubResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

func (r *stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	f, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return f(r.lookups[host]), nil
}

// catchAll makes every connection the client makes, to whatever checked
// address, land on target, and records the addresses dialled. With it a
// destination that slipped through the checks would be seen by target.
type catchAll struct {
	target string
	mu     sync.Mutex
	dialed []string
}

func (ca *catchAll) dial(ctx context.Context, network, address string) (net.Conn, error) {
	ca.mu.Lock()
	ca.dialed = append(ca.dialed, address)
	ca.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, ca.target)
}

func (ca *catchAll) addrs() []string {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	return append([]string(nil), ca.dialed...)
}

func mustNew(t testing.TB, p Policy) *Client {
	t.Helper()
	c, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// do sends a request and returns the status (0 on error) and error.
func do(t testing.TB, c *Client, method, url string, body []byte, opts CallOptions) (int, []byte, error) {
	t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(method)
	if body != nil {
		req.SetBody(body)
	}
	err := c.Do(context.Background(), req, resp, opts)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

func wantCode(t testing.TB, err error, code string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s, got nil", code)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error %s, got %T: %v", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s (rule %q): %v", code, e.Code, e.Rule, err)
	}
	return e
}

func hostPort(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and
// target.example, and a separate client CA with one client certificate.
type testPKI struct {
	ca, clientCA *certs.Authority
	server       tls.Certificate
	client       tls.Certificate
	other        tls.Certificate // another client certificate (same client CA)
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	now := time.Now()
	ca, err := certs.NewCA("outbound test CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := certs.NewCA("outbound test client CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.IssueServer("target", []string{"127.0.0.1", "target.example"}, now, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := clientCA.IssueClient("merchant-a", now, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, err := clientCA.IssueClient("merchant-b", now, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{ca: ca, clientCA: clientCA, server: srv.TLSCertificate(), client: cl.TLSCertificate(), other: other.TLSCertificate()}
}

func (p *testPKI) serverConfig(requireClientCert bool) *tls.Config {
	cfg := certs.BaseTLSConfig()
	cfg.Certificates = []tls.Certificate{p.server}
	if requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.clientCA.Pool()
	}
	return cfg
}
