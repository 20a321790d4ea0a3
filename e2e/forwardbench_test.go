package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/certs"
	"github.com/payorch/e2e/loadgen"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/logging"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/substitute/substitutetest"
	"github.com/valyala/fasthttp"
)

// The vault forward figures (deploy/local/bench.sh turns the
// throughput ones into a ratio in BENCHMARKS.md). Four ways of sending the
// same ~1 KB JSON body to the same fasthttp target on loopback, from the
// same fasthttp client (keep-alive, forwardBenchParallelism x GOMAXPROCS
// goroutines; FORWARD_BENCH_PARALLELISM overrides the multiplier, to look
// at the proxies saturated):
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
//   - BenchmarkForwardSameWork (the second baseline, reported beside the
//     goal figure): a pass-through doing every step of /vault-forward that
//     is not card work, on vault-proxy's own parts (startSameWorkProxy).
//     Its ratio to BenchmarkForwardVault is the cost of the card work
//     alone: opening the cards, the template, the audit record.
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
	same   string // ... and of the same-work pass-through
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
	fb := &forwardBench{s: s, target: startBenchTarget(tb, targetTLS), body: substitutetest.ForwardBody()}

	// The client every path uses: keep-alive, trusts the dev CA (the
	// vault-proxy and pass-through certificate) and the targets' CA.
	roots, err := certs.LoadCertPool(s.PKI.CA)
	if err != nil {
		tb.Fatal(err)
	}
	if extraCAs != nil {
		roots.AppendCertsFromPEM(extraCAs.CertPEM())
	}
	fb.client = benchClient(tb, roots)

	fb.pass = startPassThrough(tb, s, fb.target.Host, caFile)
	fb.same = startSameWorkProxy(tb, s)

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
	return serveLikeVaultProxy(tb, s, func(ctx *fasthttp.RequestCtx) {
		if err := passOn(ctx, ctx, client, opts, ctx.Request.Header.Peek(httpapi.HeaderForwardURL)); err != nil {
			ctx.Error(`{"type":"error","code":"forward_failed","status":502}`, fasthttp.StatusBadGateway)
		}
	}, nil)
}

// startSameWorkProxy starts the second baseline: a pass-through that does
// all of /vault-forward's work that is not about cards, so that the
// difference to /vault-forward is the card work alone (opening the cards,
// parsing and rendering the template, the audit record of the reveal). It
// runs on vault-proxy's own parts: its router (request id, recover, access
// log through the redacting logger), its Authenticator with the stack's
// token keys and the vault-forward.write scope, the merchant's forwarding
// hosts (forwardconfig.Service, cached as for /vault-forward), the running
// vault-proxy's outbound.Client with CheckURL before the send, a
// request context with a deadline, and WriteUpstreamAnswer. The forward
// headers are read more simply than parseForward does (the URL and the
// payment method ids, which are parsed and not used).
func startSameWorkProxy(tb testing.TB, s *stack.Stack) string {
	tb.Helper()
	vp := s.VaultProxy
	log := logging.New(s.Logs, slog.LevelDebug).With("service", "vault-proxy-baseline")
	keys, err := auth.LoadKeySetFile(vp.Config.AuthKeysFile, vp.Config.AuthIssuer)
	if err != nil {
		tb.Fatal(err)
	}
	verifier, err := auth.NewVerifier(auth.Config{Keys: keys, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	authn := &httpapi.Authenticator{Verifier: verifier}
	rt := httpapi.NewRouter(log)
	rt.Handle(fasthttp.MethodPost, "/vault-forward", func(fctx *fasthttp.RequestCtx) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(fctx), httpapi.MaxForwardTimeout+30*time.Second)
		defer cancel()
		c, err := authn.Authorize(fctx, httpapi.ScopeForwardWrite)
		if err != nil {
			return err
		}
		raw := strings.TrimSpace(string(fctx.Request.Header.Peek(httpapi.HeaderForwardURL)))
		if u, err := url.Parse(raw); err != nil || !u.IsAbs() {
			return apierror.BadRequest("bad " + httpapi.HeaderForwardURL)
		}
		for _, id := range strings.Split(string(fctx.Request.Header.Peek(httpapi.HeaderForwardPaymentMethods)), ",") {
			if _, err := uuid.Parse(strings.TrimSpace(id)); err != nil {
				return apierror.BadRequest("bad " + httpapi.HeaderForwardPaymentMethods)
			}
		}
		hosts, err := vp.ForwardConfigs.Hosts(ctx, c.MerchantAccountID)
		if err != nil {
			return err
		}
		opts := outbound.CallOptions{Timeout: httpapi.DefaultForwardTimeout, AllowedHosts: hosts}
		if err := vp.Outbound.CheckURL(raw, opts); err != nil {
			return apierror.New(fasthttp.StatusForbidden, outbound.Code(err), "destination refused")
		}
		if err := passOn(ctx, fctx, vp.Outbound, opts, []byte(raw)); err != nil {
			return apierror.New(fasthttp.StatusBadGateway, outbound.Code(err), "the request could not be sent")
		}
		return nil
	})
	return serveLikeVaultProxy(tb, s, rt.Handler(), rt.ServerError)
}

// passOn sends the body of fctx's request unchanged to target and copies
// the answer back, as /vault-forward does after rendering.
func passOn(ctx context.Context, fctx *fasthttp.RequestCtx, client *outbound.Client, opts outbound.CallOptions, target []byte) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURIBytes(target)
	req.Header.SetContentTypeBytes(fctx.Request.Header.ContentType())
	req.SetBodyRaw(fctx.Request.Body())
	if err := client.Do(ctx, req, resp, opts); err != nil {
		return err
	}
	httpapi.WriteUpstreamAnswer(fctx, resp) // as /vault-forward does
	return nil
}

// serveLikeVaultProxy serves handler on a new loopback listener with
// vault-proxy's public TLS certificate and fasthttp.Server settings (as
// vault-proxy/app serve()) and returns its https URL.
func serveLikeVaultProxy(tb testing.TB, s *stack.Stack, handler fasthttp.RequestHandler, onError func(*fasthttp.RequestCtx, error)) string {
	tb.Helper()
	tlsCfg, err := certs.PublicServerTLSConfig(s.PKI.PublicCert, s.PKI.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler:               handler,
		ErrorHandler:          onError,
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

func (fb *forwardBench) sameWorkReq(req *fasthttp.Request) {
	fb.vaultReq(req)
	req.SetRequestURI(fb.same + "/vault-forward")
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
	for _, path := range []func(*fasthttp.Request){fb.passReq, fb.sameWorkReq, fb.directReq} {
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
	par := forwardBenchParallelism
	if v, err := strconv.Atoi(os.Getenv("FORWARD_BENCH_PARALLELISM")); err == nil && v > 0 {
		par = v
	}
	b.SetParallelism(par)
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

func BenchmarkForwardSameWork(b *testing.B) {
	fb := newForwardBench(b)
	fb.run(b, fb.sameWorkReq)
}

func BenchmarkForwardDirect(b *testing.B) {
	fb := newForwardBench(b)
	fb.run(b, fb.directReq)
}

// TestForwardLatencyAt2000RPS runs at a constant 2,000 requests/s
// (BENCH_LATENCY_RATE changes the rate) in one stack: a direct run for
// reference, then BENCH_LATENCY_PAIRS (default 3) pairs of the
// pass-through proxy and /vault-forward, BENCH_LATENCY_SECONDS (default
// 10) each, after a short warm-up of both. Pairs alternate their order
// (pass-through first, then /vault-forward first, ...) so that a drift of
// the machine does not favour either path, and the added p99 is the median
// of the pairs' differences: on these shared VMs a host stall can put
// either run's p99 off by milliseconds, and a pair's two runs are the
// closest in time. BENCH_LATENCY_SAMEWORK=1 adds a run of the same-work
// pass-through to each pair (information: where a tail comes from, the
// card work or the steps every forward takes). Each result is one line:
//
//	FORWARD_LATENCY path=<p> pair=<i> rate=2000 sent=<n> errors=<n> achieved_rps=<r> p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=..
//	FORWARD_LATENCY_PAIR pair=<i> added_p99_us=<vault p99 - pass p99>
//	FORWARD_LATENCY_ADDED p99_us=<median of the pairs> goal_us=1000 result=met|not_met
func TestForwardLatencyAt2000RPS(t *testing.T) {
	if os.Getenv("BENCH_LATENCY") != "1" {
		t.Skip("a benchmark: set BENCH_LATENCY=1 (deploy/local/bench.sh does)")
	}
	env := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
			return v
		}
		return def
	}
	rate := env("BENCH_LATENCY_RATE", 2000) // for orientation only; the goal is at 2,000
	d := time.Duration(env("BENCH_LATENCY_SECONDS", 10)) * time.Second
	pairs := env("BENCH_LATENCY_PAIRS", 3)
	workers := 256 // enough that a worker is free at 2,000/s unless something stalls
	fb := newForwardBench(t)
	fb.check(t)
	ctx := context.Background()
	run := func(name string, pair int, build func(*fasthttp.Request), d time.Duration) loadgen.Result {
		var firstErr atomic.Pointer[error]
		r := loadgen.Run(ctx, rate, d, workers, func(context.Context) error {
			err := fb.do(build)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			return err
		})
		if e := firstErr.Load(); e != nil {
			t.Errorf("%s: %d errors, first: %v", name, r.Errors, *e)
		}
		if pair >= 0 {
			t.Logf("FORWARD_LATENCY path=%s pair=%d rate=%d sent=%d errors=%d achieved_rps=%.0f p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d",
				name, pair, rate, r.Sent, r.Errors, r.AchievedPerSec, r.P50.Microseconds(), r.P90.Microseconds(), r.P99.Microseconds(),
				r.P999.Microseconds(), r.Max.Microseconds())
		}
		return r
	}
	warm := 2 * time.Second
	run("warmup-direct", -1, fb.directReq, warm)
	run("direct", 0, fb.directReq, d)
	run("warmup-pass", -1, fb.passReq, warm)
	run("warmup-vault", -1, fb.vaultReq, warm)
	sameWork := os.Getenv("BENCH_LATENCY_SAMEWORK") == "1"
	if sameWork {
		run("warmup-same-work", -1, fb.sameWorkReq, warm)
	}

	added := make([]time.Duration, 0, pairs)
	var addedP50 []time.Duration
	for i := 1; i <= pairs; i++ {
		var pass, vault loadgen.Result
		if i%2 == 1 {
			pass = run("pass-through", i, fb.passReq, d)
			vault = run("vault-forward", i, fb.vaultReq, d)
		} else {
			vault = run("vault-forward", i, fb.vaultReq, d)
			pass = run("pass-through", i, fb.passReq, d)
		}
		if sameWork {
			run("same-work", i, fb.sameWorkReq, d)
		}
		added = append(added, vault.P99-pass.P99)
		addedP50 = append(addedP50, vault.P50-pass.P50)
		t.Logf("FORWARD_LATENCY_PAIR pair=%d added_p99_us=%d added_p50_us=%d", i, (vault.P99 - pass.P99).Microseconds(), (vault.P50 - pass.P50).Microseconds())
	}
	m, m50 := medianDuration(added), medianDuration(addedP50)
	result := "met"
	if m >= time.Millisecond {
		result = "not_met"
	}
	t.Logf("FORWARD_LATENCY_ADDED p99_us=%d p50_us=%d pairs=%d goal_us=1000 result=%s gomaxprocs=%d", m.Microseconds(), m50.Microseconds(),
		pairs, result, runtime.GOMAXPROCS(0))
}

// medianDuration is the median of ds (the mean of the middle two for an
// even count). It sorts ds.
func medianDuration(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// benchClient is the load generator's HTTP client to the product: many
// connections kept alive, TLS sessions resumed, nothing added to the
// requests it is given; closed when tb ends.
func benchClient(tb testing.TB, roots *x509.CertPool) *fasthttp.Client {
	c := &fasthttp.Client{
		TLSConfig:                &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(0)},
		MaxConnsPerHost:          1024,
		MaxIdleConnDuration:      time.Minute,
		ReadTimeout:              30 * time.Second,
		WriteTimeout:             30 * time.Second,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	tb.Cleanup(c.CloseIdleConnections)
	return c
}
