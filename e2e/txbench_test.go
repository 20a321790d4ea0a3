package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payorch/certs"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/e2e/loadgen"
	"github.com/payorch/e2e/stack"
	"github.com/valyala/fasthttp"
)

// The transaction figures (deploy/local/bench.sh puts them in
// BENCHMARKS.md's table). One operation is a pair: a card payment with a
// stored card (POST /transactions, authorized by mock-card) and its
// capture (POST /transactions/{id}/capture).
//
//   - BenchmarkTxPairHTTP: the pair as a merchant sends it, to vault-proxy's
//     public URL (TLS, the stack's dev certificate), which passes it to
//     core-api; core-api stores the transaction, calls mock-card through
//     vault-proxy's detokenized call (mutual TLS, the card filled in by
//     vault-proxy, its audit record spooled), and records the answer. All
//     on loopback, against the real PostgreSQL and Vault.
//   - BenchmarkTxPairBare (the baseline): the same flow's database work
//     alone, through the transactions service on a *postgres.DB opened on
//     the same database (postgres.TransactionsStore, as core-api wires
//     it): the routing's read of the merchant account's default payment
//     service (it has none: the sandbox connector), Create (the stored
//     payment method's read, the insert), ApplyAuthorization of an
//     approval, the capture's card check (the transaction's read),
//     ReserveCapture and SettleCapture of a success.
//     The same statements in the same transactions; no HTTP, no
//     authentication, no JSON, no connector, no vault-proxy. The service's
//     own Go work (validation, the state machine) is a few microseconds of
//     a pair's.
//
// Both sides run txBenchParallelism x GOMAXPROCS goroutines; both report
// pairs/s. The client is fasthttp's, kept-alive, with the bearer token
// minted once; each answer is checked in full before the timer starts and
// by its status and the transaction's status after.
//
// TestTransactionLatency (BENCH_LATENCY=1 only) sends the pair at a
// constant rate (TX_LATENCY_RATE, default 300 pairs/s) for
// BENCH_LATENCY_SECONDS (default 10) with e2e/loadgen, each latency from
// the pair's scheduled start (no coordinated omission).

const txBenchParallelism = 4 // x GOMAXPROCS goroutines, for both sides; TX_BENCH_PARALLELISM overrides

// txParallelism is the goroutines per P of both throughput benchmarks.
func txParallelism() int {
	if v, err := strconv.Atoi(os.Getenv("TX_BENCH_PARALLELISM")); err == nil && v > 0 {
		return v
	}
	return txBenchParallelism
}

const (
	txBenchMerchant = "default"
	txBenchAmount   = 1299 // approved by mock-card (docs/sandbox/mock-card.md)
)

type txBench struct {
	s      *stack.Stack
	db     *postgres.DB // the baseline's own pool on the core database
	svc    *transactions.Service
	client *fasthttp.Client
	token  string // "Bearer ..."
	pm     string // the stored card's payment method id
	create []byte // the POST /transactions body
}

func newTxBench(tb testing.TB) *txBench {
	tb.Helper()
	s := stack.Start(tb)
	db := openCoreDB(tb, s.DBs.CoreDSN)
	roots, err := certs.LoadCertPool(s.PKI.CA)
	if err != nil {
		tb.Fatal(err)
	}
	c := &txBench{
		s: s, db: db,
		svc:    &transactions.Service{Store: postgres.TransactionsStore{DB: db}},
		client: benchClient(tb, roots),
	}
	tok := s.Token(tb, "payment-methods.write", "transactions.write", "transactions.read")
	c.token = "Bearer " + tok
	c.pm = vaultCardTB(tb, s, tok, "4111111111111111")
	c.create = []byte(`{"amount":` + strconv.Itoa(txBenchAmount) + `,"currency":"EUR","country":"DE","payment_method":{"method":"id","id":"` + c.pm + `"}}`)
	return c
}

// vaultCardTB vaults pan (no security code) and returns its payment
// method id.
func vaultCardTB(tb testing.TB, s *stack.Stack, tok, pan string) string {
	tb.Helper()
	code, raw := s.Do(tb, s.PublicClient, http.MethodPost, s.PublicURL+"/payment-methods", tok,
		map[string]any{"method": "card", "number": pan, "expiration_date": futureExpiry()})
	var pm struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal(raw, &pm) != nil || pm.ID == "" {
		tb.Fatalf("vault card: %d %s", code, raw)
	}
	return pm.ID
}

// txAnswer is what the pair reads of an answer: the transaction's id and
// status.
type txAnswer struct {
	ID     string                    `json:"id"`
	Status coreapi.TransactionStatus `json:"status"`
}

// post sends a POST to path on vault-proxy's public URL (body may be nil)
// and returns the answer's body, which must have status want.
func (c *txBench) post(path string, body []byte, want int, req *fasthttp.Request, resp *fasthttp.Response) ([]byte, error) {
	req.Reset()
	req.SetRequestURI(c.s.PublicURL + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set("Authorization", c.token)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
	}
	if err := c.client.Do(req, resp); err != nil {
		return nil, fmt.Errorf("POST %s: %w", path, err)
	}
	if resp.StatusCode() != want {
		return nil, fmt.Errorf("POST %s = %d, want %d: %.300s", path, resp.StatusCode(), want, resp.Body())
	}
	return resp.Body(), nil
}

// statusIs reports whether a transaction answer has status st: the
// transaction's is its only member named "status" (no nested object of a
// transaction has one).
func statusIs(body []byte, st coreapi.TransactionStatus) bool {
	return bytes.Contains(body, []byte(`"status":"`+string(st)+`"`))
}

// pairHTTP pays and captures over HTTP. full decodes each answer in
// full; otherwise only the id and the statuses are read.
func (c *txBench) pairHTTP(full bool, req *fasthttp.Request, resp *fasthttp.Response) error {
	raw, err := c.post("/transactions", c.create, http.StatusCreated, req, resp)
	if err != nil {
		return err
	}
	var a txAnswer
	if full {
		if err := json.Unmarshal(raw, &a); err != nil {
			return err
		}
	} else {
		// The id is the second member ({"type":"transaction","id":"..."}).
		const prefix = `{"type":"transaction","id":"`
		if len(raw) < len(prefix)+36 || !bytes.HasPrefix(raw, []byte(prefix)) {
			return fmt.Errorf("POST /transactions answered %.300s", raw)
		}
		a.ID = string(raw[len(prefix) : len(prefix)+36])
		if statusIs(raw, coreapi.TransactionAuthorizationSucceeded) {
			a.Status = coreapi.TransactionAuthorizationSucceeded
		}
	}
	if a.Status != coreapi.TransactionAuthorizationSucceeded || !coreapi.IsUUID(a.ID) {
		return fmt.Errorf("POST /transactions answered %.300s", raw)
	}
	if raw, err = c.post("/transactions/"+a.ID+"/capture", nil, http.StatusOK, req, resp); err != nil {
		return err
	}
	if full {
		var got txAnswer
		if err := json.Unmarshal(raw, &got); err != nil || got.ID != a.ID || got.Status != coreapi.TransactionCaptureSucceeded {
			return fmt.Errorf("capture answered %.300s (%v)", raw, err)
		}
	} else if !statusIs(raw, coreapi.TransactionCaptureSucceeded) {
		return fmt.Errorf("capture answered %.300s", raw)
	}
	return nil
}

// check makes one pair over HTTP with each answer decoded in full.
func (c *txBench) check(tb testing.TB) {
	tb.Helper()
	if err := c.pairHTTP(true, new(fasthttp.Request), new(fasthttp.Response)); err != nil {
		tb.Fatal(err)
	}
}

// pairBare is the pair's database work: what PayByCard and CaptureCard
// ask of the store, with the connector's approvals given.
func (c *txBench) pairBare(ctx context.Context) error {
	card := coreapi.MethodCard
	// PayByCard's routing: the merchant account's default payment service
	// for cards, which it does not have (the sandbox connector then).
	if _, _, err := c.db.DefaultPaymentService(ctx, txBenchMerchant, card); !errors.Is(err, coreapi.ErrNotFound) {
		return fmt.Errorf("default payment service: %v", err)
	}
	t, err := c.svc.Create(ctx, txBenchMerchant, coreapi.NewTransaction{
		Amount: txBenchAmount, Currency: "EUR", Country: ptr("DE"), PaymentMethodID: &c.pm, Method: &card,
	})
	if err != nil {
		return err
	}
	authz := coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth_" + t.ID[:8],
		RawResponseCode: "00", RawResponseDescription: "Approved", SchemeTransactionID: "bench"}
	if t, _, err = c.svc.ApplyAuthorization(ctx, txBenchMerchant, t.ID, authz); err != nil {
		return err
	}
	if t.Status != coreapi.TransactionAuthorizationSucceeded {
		return fmt.Errorf("authorization: %s", t.Status)
	}
	// CaptureCard's check that it is a card payment.
	if _, err := c.db.Transaction(ctx, txBenchMerchant, t.ID); err != nil {
		return err
	}
	_, cp, err := c.svc.ReserveCapture(ctx, txBenchMerchant, t.ID, nil)
	if err != nil {
		return err
	}
	if t, _, err = c.svc.SettleCapture(ctx, txBenchMerchant, t.ID, cp.ID,
		coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "cap_" + cp.ID[:8]}); err != nil {
		return err
	}
	if t.Status != coreapi.TransactionCaptureSucceeded {
		return errors.New("capture: " + string(t.Status))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func BenchmarkTxPairHTTP(b *testing.B) {
	c := newTxBench(b)
	c.check(b)
	b.ReportAllocs()
	b.SetParallelism(txParallelism())
	b.ResetTimer()
	cpu0, m0, pg0 := cpuNow(), machineCPUNow(), c.pgCPUNow()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := new(fasthttp.Request), new(fasthttp.Response)
		for pb.Next() {
			if err := c.pairHTTP(false, req, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	reportPairs(b)
	reportCPU(b, cpu0)
	reportMachineCPU(b, m0)
	c.reportPGCPU(b, pg0)
}

func BenchmarkTxPairBare(b *testing.B) {
	c := newTxBench(b)
	ctx := context.Background()
	if err := c.pairBare(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(txParallelism())
	b.ResetTimer()
	cpu0, m0, pg0 := cpuNow(), machineCPUNow(), c.pgCPUNow()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.pairBare(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	reportPairs(b)
	reportCPU(b, cpu0)
	reportMachineCPU(b, m0)
	c.reportPGCPU(b, pg0)
}

// machineCPUNow is the CPU time all of the machine's CPUs have spent
// busy so far (/proc/stat: user, nice, system, irq, softirq, steal), or
// 0 where it cannot be read: with cpuNow's figure it tells this
// process's share from PostgreSQL's (and from whatever else runs).
func machineCPUNow() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// reportMachineCPU adds the machine's busy CPU time per operation since
// start (from machineCPUNow) to the output, in microseconds.
func reportMachineCPU(b *testing.B, start time.Duration) {
	if start > 0 && b.N > 0 {
		b.ReportMetric(float64(machineCPUNow()-start)/float64(b.N)/1e3, "machineCPUus/op")
	}
}

// pgCPUNow is the CPU time the PostgreSQL backends serving the stack's
// two databases have used so far (from /proc: the database is local in
// tests), or 0 where /proc cannot be read. Backends that end meanwhile
// take theirs with them; the pools keep theirs for the run. PostgreSQL's
// shared processes (WAL writer, checkpointer) are not counted.
func (c *txBench) pgCPUNow() time.Duration {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	// A backend's title: "postgres: 15/main: USER DATABASE HOST(PORT) STATE".
	names := [][]byte{[]byte(" " + c.s.DBs.Core.Name + " "), []byte(" " + c.s.DBs.Vault.Name + " ")}
	var sum time.Duration
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		title, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil || !bytes.HasPrefix(title, []byte("postgres: ")) ||
			!(bytes.Contains(title, names[0]) || bytes.Contains(title, names[1])) {
			continue
		}
		if t, ok := processCPU(pid); ok {
			sum += t
		}
	}
	return sum
}

// processCPU is the user and system CPU time of process pid (Linux).
func processCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	f := bytes.Fields(raw[bytes.LastIndexByte(raw, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true // USER_HZ is 100 on Linux
}

// reportPGCPU adds the stack's PostgreSQL backends' CPU time per
// operation since start (from pgCPUNow) to the output, in microseconds.
func (c *txBench) reportPGCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		if now := c.pgCPUNow(); now > 0 {
			b.ReportMetric(float64(now-start)/float64(b.N)/1e3, "pgCPUus/op")
		}
	}
}

func reportPairs(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "pairs/s")
	}
}

// TestTransactionLatency reports the pair's latency at a constant rate:
// TX_LATENCY lines that deploy/local/bench.sh reads. Goal: p99 under
// 50 ms at 300 pairs/s.
func TestTransactionLatency(t *testing.T) {
	if os.Getenv("BENCH_LATENCY") != "1" {
		t.Skip("a benchmark: set BENCH_LATENCY=1 (deploy/local/bench.sh does)")
	}
	env := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
			return v
		}
		return def
	}
	rate := env("TX_LATENCY_RATE", 300)
	d := time.Duration(env("BENCH_LATENCY_SECONDS", 10)) * time.Second
	const goal = 50 * time.Millisecond
	workers := 256 // a free worker for every pair in flight unless something stalls for most of a second
	c := newTxBench(t)
	c.check(t)
	run := func(d time.Duration) loadgen.Result {
		var firstErr atomic.Pointer[error]
		r := loadgen.Run(context.Background(), rate, d, workers, func(context.Context) error {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			err := c.pairHTTP(false, req, resp)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			return err
		})
		if e := firstErr.Load(); e != nil {
			t.Errorf("%d errors, first: %v", r.Errors, *e)
		}
		return r
	}
	run(2 * time.Second) // warm-up: connections, caches
	r := run(d)
	result := "met"
	if r.P99 >= goal {
		result = "not_met"
	}
	t.Logf("TX_LATENCY rate=%d seconds=%d sent=%d errors=%d achieved_pairs_per_s=%.0f p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d goal_p99_us=%d result=%s gomaxprocs=%d",
		rate, int(d.Seconds()), r.Sent, r.Errors, r.AchievedPerSec, r.P50.Microseconds(), r.P90.Microseconds(), r.P99.Microseconds(),
		r.P999.Microseconds(), r.Max.Microseconds(), goal.Microseconds(), result, runtime.GOMAXPROCS(0))
}
