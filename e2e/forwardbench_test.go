package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/e2e/loadgen"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/valyala/fasthttp"
)

// The issue 5 vault forward figures (deploy/local/bench.sh turns the
// throughput ones into a ratio in BENCHMARKS.md). Three ways of sending the
// same ~1 KB JSON body to the same fasthttp target on loopback, from the
// same fasthttp client (keep-alive, forwardBenchParallelism x GOMAXPROCS
// goroutines):
//
//   - BenchmarkForwardVault: POST /vault-forward on the real vault-proxy
//     (public listener, TLS with the stack's dev certificate), the body a
//     template with 4 placeholders over 2 vaulted cards. Everything a
//     merchant's forward costs: bearer token check, header parsing, the
//     forwarding config's hosts (PostgreSQL), the cards (PostgreSQL + the
//     record-key cache), rendering, the outbound client, the audit record
//     (PostgreSQL), the access log.
//   - BenchmarkForwardPassThrough (the baseline): a plain fasthttp reverse
//     proxy started by the test with vault-proxy's public server settings
//     and the same TLS certificate, sending with an outbound.Client built
//     with the same policy vault-proxy's is. It reads the same
//     x-vault-forward-url header, forwards the body unchanged and copies
//     the answer back with /vault-forward's own code (hop-by-hop headers
//     stripped). No auth, no database, no substitution, no decryption, no
//     audit.
//   - BenchmarkForwardDirect: the client straight to the target.
//
// The target is plain HTTP on loopback (the forward path allows http in
// sandbox to a loopback host a forwarding config lists): the TLS of a
// real processor would add the same cost to both proxies and hide the
// difference. FORWARD_BENCH_TARGET_TLS=1 puts the target behind TLS (a
// certificate from a test CA vault-proxy and the baseline both trust)
// for all three.
//
// TestForwardLatencyAt2000RPS (BENCH_LATENCY=1 only) drives the
// pass-through proxy and /vault-forward at a constant 2,000 requests/s with
// e2e/loadgen (latency from each request's scheduled start, so a stall is
// not hidden by coordinated omission) and reports the percentiles and the
// added p99.

const forwardBenchParallelism = 4 // x GOMAXPROCS goroutines, for all three

// forwardBench is one stack, one target, one pass-through proxy and one
// client.
type forwardBench struct {
	s      *stack.Stack
	target *benchTarget
	pass   string // https://127.0.0.1:port of the pass-through proxy
	client *fasthttp.Client
	token  []byte // "Bearer ..."
	pms    string // the two payment method ids
	body   []byte // the template every path sends
	pans   [2]string
}

// benchTarget is the third party: a fasthttp server that answers a small
// JSON. capture, when set, keeps the next body (setup checks that the
// cards arrived substituted).
type benchTarget struct {
	URL, Host string
	hits      atomic.Int64
	capture   atomic.Bool
	last      atomic.Pointer[[]byte]
}

var benchTargetAnswer = []byte(`{"id":"auth_8c1f","status":"authorized","amount":1299,"currency":"EUR","network_reference":"MCC123456789"}`)

func startBenchTarget(tb testing.TB, tlsCfg *tls.Config) *benchTarget {
	tb.Helper()
	tg := &benchTarget{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	scheme := "http"
	if tlsCfg != nil {
		ln, scheme = tls.NewListener(ln, tlsCfg), "https"
	}
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			tg.hits.Add(1)
			if tg.capture.Load() {
				b := append([]byte(nil), ctx.Request.Body()...)
				tg.last.Store(&b)
			}
			ctx.SetContentType("application/json")
			ctx.SetBody(benchTargetAnswer)
		},
		Name:                  "bench-target",
		NoDefaultServerHeader: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
	}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Shutdown() })
	tg.Host = ln.Addr().String()
	tg.URL = scheme + "://" + tg.Host
	return tg
}

// forwardBenchBody is a ~1 KB processor request with 4 placeholders over 2
// cards (card 1: number and MM expiry month; card 2: number and YYYY year).
func forwardBenchBody() []byte {
	b := []byte(`{"merchant_reference":"order-2024-000187342","amount":1299,"currency":"EUR","capture":false,` +
		`"payment_instruments":[` +
		`{"type":"card","number":"{{ CARD_NUMBER_1 }}","expiry_month":"{{ CARD_EXPIRATION_DATE_MM_1 }}","holder_name":"Jane Q. Public","role":"primary"},` +
		`{"type":"card","number":"{{ CARD_NUMBER_2 }}","expiry_year":"{{ CARD_EXPIRATION_DATE_YYYY_2 }}","holder_name":"Jane Q. Public","role":"fallback"}],` +
		`"billing_address":{"line1":"12 Example Street","line2":"Flat 4","city":"London","postal_code":"EC1A 1BB","country":"GB"},` +
		`"shopper":{"email":"jane.public@example.com","ip_address":"203.0.113.24","user_agent":"Mozilla/5.0 (X11; Linux x86_64)","locale":"en-GB"},` +
		`"items":[{"sku":"SKU-1001","name":"Espresso beans 1kg","quantity":1,"unit_amount":899},` +
		`{"sku":"SKU-2002","name":"Paper filters","quantity":2,"unit_amount":200}],` +
		`"metadata":{"channel":"web","campaign":"spring","cart_id":"c_7f2b9a61","attempt":"1"},"notes":"`)
	for len(b) < 1024-3 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

func newForwardBench(tb testing.TB) *forwardBench {
	tb.Helper()
	var targetTLS *tls.Config
	var opts []stack.Option
	var extraCAs *certs.Authority
	caFile := ""
	if os.Getenv("FORWARD_BENCH_TARGET_TLS") == "1" {
		ca, err := certs.NewCA("forward-bench-targets-ca", time.Now(), 2*time.Hour)
		if err != nil {
			tb.Fatal(err)
		}
		extraCAs, caFile = ca, filepath.Join(tb.TempDir(), "targets-ca.pem")
		if err := os.WriteFile(caFile, ca.CertPEM(), 0o600); err != nil {
			tb.Fatal(err)
		}
		leaf, err := extraCAs.IssueServer("target", []string{"127.0.0.1"}, time.Now(), time.Hour)
		if err != nil {
			tb.Fatal(err)
		}
		targetTLS = certs.BaseTLSConfig()
		targetTLS.Certificates = []tls.Certificate{leaf.TLSCertificate()}
	}
	opts = append(opts, stack.WithForwardLoopback(caFile))
	s := stack.Start(tb, opts...)
	fb := &forwardBench{s: s, target: startBenchTarget(tb, targetTLS), body: forwardBenchBody()}

	// The client every path uses: keep-alive, trusts the dev CA (the
	// vault-proxy and pass-through certificate) and the targets' CA.
	roots, err := certs.LoadCertPool(s.PKI.CA)
	if err != nil {
		tb.Fatal(err)
	}
	if extraCAs != nil {
		roots.AppendCertsFromPEM(extraCAs.CertPEM())
	}
	fb.client = &fasthttp.Client{
		TLSConfig:                &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(0)},
		MaxConnsPerHost:          1024,
		MaxIdleConnDuration:      time.Minute,
		ReadTimeout:              30 * time.Second,
		WriteTimeout:             30 * time.Second,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	tb.Cleanup(fb.client.CloseIdleConnections)

	fb.pass = startPassThrough(tb, s, fb.target.Host, caFile)

	// A forwarding config listing the target, two vaulted cards, a token.
	cfgTok := s.Token(tb, "vault-forward-configs.write")
	if code, raw := s.Do(tb, s.PublicClient, http.MethodPost, s.PublicURL+"/vault-forward/configs", cfgTok,
		map[string]any{"display_name": "bench target", "hosts": []string{fb.target.Host}}); code != http.StatusCreated {
		tb.Fatalf("create config: %d %s", code, raw)
	}
	pmTok := s.Token(tb, "payment-methods.write")
	fb.pans = [2]string{"4111111111111111", "5555555555554444"}
	ids := make([]string, 2)
	for i, pan := range fb.pans {
		code, raw := s.Do(tb, s.PublicClient, http.MethodPost, s.PublicURL+"/payment-methods", pmTok,
			map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()})
		var pm struct{ ID string }
		if code != http.StatusCreated || json.Unmarshal(raw, &pm) != nil || pm.ID == "" {
			tb.Fatalf("vault card: %d %s", code, raw)
		}
		ids[i] = pm.ID
	}
	fb.pms = strings.Join(ids, ",")
	fb.token = []byte("Bearer " + s.Token(tb, "vault-forward.write"))
	return fb
}

// startPassThrough starts the baseline proxy: vault-proxy's public
// fasthttp.Server settings and certificate, an outbound.Client with the
// policy vault-proxy builds in sandbox with loopback allowed, and nothing
// else.
func startPassThrough(tb testing.TB, s *stack.Stack, targetHost, caFile string) string {
	tb.Helper()
	policy := outbound.Policy{AllowLoopback: true}
	if caFile != "" {
		pool, err := certs.LoadCertPool(caFile)
		if err != nil {
			tb.Fatal(err)
		}
		policy.ExtraRootCAs = pool
	}
	client, err := outbound.New(policy)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = client.Close() })
	opts := outbound.CallOptions{AllowedHosts: []string{targetHost}} // the config's hosts, as /vault-forward passes them
	tlsCfg, err := certs.PublicServerTLSConfig(s.PKI.PublicCert, s.PKI.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	handler := func(ctx *fasthttp.RequestCtx) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURIBytes(ctx.Request.Header.Peek(httpapi.HeaderForwardURL))
		req.Header.SetContentTypeBytes(ctx.Request.Header.ContentType())
		req.SetBodyRaw(ctx.Request.Body())
		if err := client.Do(ctx, req, resp, opts); err != nil {
			ctx.Error(`{"type":"error","code":"forward_failed","status":502}`, fasthttp.StatusBadGateway)
			return
		}
		httpapi.WriteUpstreamAnswer(ctx, resp) // as /vault-forward does
	}
	srv := &fasthttp.Server{ // as vault-proxy/app serve()
		Handler:               handler,
		Name:                  "vault-proxy",
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          90 * time.Second,
		IdleTimeout:           2 * time.Minute,
		MaxRequestBodySize:    4 << 20,
		NoDefaultServerHeader: true,
	}
	go func() { _ = srv.Serve(tls.NewListener(ln, tlsCfg)) }()
	tb.Cleanup(func() { _ = srv.Shutdown() })
	return "https://" + ln.Addr().String()
}

// The three requests. All carry the same body and content type; the
// proxies also get the same x-vault-forward-url, and /vault-forward its
// token and payment method ids.
func (fb *forwardBench) vaultReq(req *fasthttp.Request) {
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(fb.s.PublicURL + "/vault-forward")
	req.Header.SetContentType("application/json")
	req.Header.SetBytesV("Authorization", fb.token)
	req.Header.Set(httpapi.HeaderForwardURL, fb.target.URL+"/v1/payments")
	req.Header.Set(httpapi.HeaderForwardPaymentMethods, fb.pms)
	req.SetBodyRaw(fb.body)
}

func (fb *forwardBench) passReq(req *fasthttp.Request) {
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(fb.pass + "/vault-forward")
	req.Header.SetContentType("application/json")
	req.Header.Set(httpapi.HeaderForwardURL, fb.target.URL+"/v1/payments")
	req.SetBodyRaw(fb.body)
}

func (fb *forwardBench) directReq(req *fasthttp.Request) {
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(fb.target.URL + "/v1/payments")
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(fb.body)
}

var errBenchAnswer = errors.New("unexpected answer")

// do sends one request built by build and checks the answer is the
// target's.
func (fb *forwardBench) do(build func(*fasthttp.Request)) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	build(req)
	if err := fb.client.DoTimeout(req, resp, 30*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusOK || !bytes.Equal(resp.Body(), benchTargetAnswer) {
		return fmt.Errorf("%w: %d %.300s", errBenchAnswer, resp.StatusCode(), resp.Body())
	}
	return nil
}

// check sends one request of each kind and makes sure the cards reached
// the target substituted through /vault-forward and untouched through the
// pass-through.
func (fb *forwardBench) check(tb testing.TB) {
	tb.Helper()
	fb.target.capture.Store(true)
	defer fb.target.capture.Store(false)
	if err := fb.do(fb.vaultReq); err != nil {
		tb.Fatalf("vault forward: %v", err)
	}
	got := *fb.target.last.Load()
	if !bytes.Contains(got, []byte(fb.pans[0])) || !bytes.Contains(got, []byte(fb.pans[1])) || bytes.Contains(got, []byte("{{")) {
		tb.Fatalf("the target did not get the cards substituted: %s", got)
	}
	for _, path := range []func(*fasthttp.Request){fb.passReq, fb.directReq} {
		if err := fb.do(path); err != nil {
			tb.Fatal(err)
		}
		if got := *fb.target.last.Load(); !bytes.Equal(got, fb.body) {
			tb.Fatalf("the target got %s", got)
		}
	}
}

func (fb *forwardBench) run(b *testing.B, build func(*fasthttp.Request)) {
	fb.check(b)
	for i := 0; i < 200; i++ { // warm connections, pools and caches
		if err := fb.do(build); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetParallelism(forwardBenchParallelism)
	b.ResetTimer()
	cpu0 := forwardBenchCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := fb.do(build); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(forwardBenchCPU()-cpu0)/float64(b.N)/1e3, "goCPUus/op")
}

// forwardBenchCPU is the CPU time this process (client, target, both
// proxies: everything but PostgreSQL and Vault) has used so far.
func forwardBenchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkForwardVault(b *testing.B) {
	fb := newForwardBench(b)
	fb.run(b, fb.vaultReq)
}

func BenchmarkForwardPassThrough(b *testing.B) {
	fb := newForwardBench(b)
	fb.run(b, fb.passReq)
}

func BenchmarkForwardDirect(b *testing.B) {
	fb := newForwardBench(b)
	fb.run(b, fb.directReq)
}

// TestForwardLatencyAt2000RPS runs at a constant 2,000 requests/s for
// BENCH_LATENCY_SECONDS (default 10; BENCH_LATENCY_RATE changes the rate) against the pass-through proxy, then
// /vault-forward, then the pass-through again, in one stack; each run
// follows a short warm-up at the same rate. The baseline's percentiles are
// the better of its two runs, so a stall of a shared machine during one of
// them cannot make the added latency look smaller. Each result is one line:
//
//	FORWARD_LATENCY path=<p> rate=2000 sent=<n> errors=<n> achieved_rps=<r> p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=..
//	FORWARD_LATENCY_ADDED p99_us=<vault p99 - pass p99> goal_us=1000 result=met|not_met
func TestForwardLatencyAt2000RPS(t *testing.T) {
	if os.Getenv("BENCH_LATENCY") != "1" {
		t.Skip("a benchmark: set BENCH_LATENCY=1 (deploy/local/bench.sh does)")
	}
	rate := 2000 // BENCH_LATENCY_RATE overrides it, for orientation only
	if v, err := strconv.Atoi(os.Getenv("BENCH_LATENCY_RATE")); err == nil && v > 0 {
		rate = v
	}
	secs := 10
	if v, err := strconv.Atoi(os.Getenv("BENCH_LATENCY_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	workers := 256 // enough that a worker is free at 2,000/s unless something stalls
	fb := newForwardBench(t)
	fb.check(t)
	ctx := context.Background()
	run := func(name string, build func(*fasthttp.Request), d time.Duration) loadgen.Result {
		var firstErr atomic.Pointer[error]
		res := loadgen.Run(ctx, rate, d, workers, func(context.Context) error {
			err := fb.do(build)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			return err
		})
		if e := firstErr.Load(); e != nil {
			t.Errorf("%s: %d errors, first: %v", name, res.Errors, *e)
		}
		return res
	}
	line := func(name string, r loadgen.Result) {
		t.Logf("FORWARD_LATENCY path=%s rate=%d sent=%d errors=%d achieved_rps=%.0f p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d",
			name, rate, r.Sent, r.Errors, r.AchievedPerSec, r.P50.Microseconds(), r.P90.Microseconds(), r.P99.Microseconds(),
			r.P999.Microseconds(), r.Max.Microseconds())
	}
	d := time.Duration(secs) * time.Second
	warm := 2 * time.Second

	run("warmup-direct", fb.directReq, warm)
	direct := run("direct", fb.directReq, d)
	run("warmup-pass", fb.passReq, warm)
	pass1 := run("pass-through", fb.passReq, d)
	run("warmup-vault", fb.vaultReq, warm)
	vault := run("vault-forward", fb.vaultReq, d)
	pass2 := run("pass-through", fb.passReq, d)

	line("direct", direct)
	line("pass-through-1", pass1)
	line("vault-forward", vault)
	line("pass-through-2", pass2)
	better := func(a, b time.Duration) time.Duration { return min(a, b) }
	pass := loadgen.Result{
		Sent: pass1.Sent + pass2.Sent, Errors: pass1.Errors + pass2.Errors,
		AchievedPerSec: max(pass1.AchievedPerSec, pass2.AchievedPerSec),
		P50:            better(pass1.P50, pass2.P50), P90: better(pass1.P90, pass2.P90), P99: better(pass1.P99, pass2.P99),
		P999: better(pass1.P999, pass2.P999), Max: better(pass1.Max, pass2.Max),
	}
	line("pass-through", pass)
	added := vault.P99 - pass.P99
	result := "met"
	if added >= time.Millisecond {
		result = "not_met"
	}
	t.Logf("FORWARD_LATENCY_ADDED p99_us=%d p50_us=%d goal_us=1000 result=%s gomaxprocs=%d", added.Microseconds(),
		(vault.P50 - pass.P50).Microseconds(), result, runtime.GOMAXPROCS(0))
}
