package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/pagination"
	"github.com/valyala/fasthttp"
)

// The core API throughput figures (deploy/local/bench.sh turns them into the
// ratios in BENCHMARKS.md). Each HTTP benchmark runs the real product on
// loopback against the real PostgreSQL; its baseline issues the same
// statement directly through pgx, by calling the store method core-api's
// handler calls (postgres.DB.CreateBuyer, postgres.DB.ListBuyers) on a
// *postgres.DB opened on the same database. The baseline thus includes the
// store's own parameter encoding and row scanning, and nothing else: no
// HTTP, authentication, JSON, validation, cursors or access log.
//
//   - BenchmarkCoreCreateBuyer: POST /buyers, one new buyer per request,
//     vs BenchmarkCoreBareInsertBuyer: the same INSERT ... RETURNING.
//   - BenchmarkCoreListBuyers: GET /buyers?limit=20, the first page of 1,000
//     buyers, vs BenchmarkCoreBareSelectBuyers: the same keyset SELECT.
//
// Both sides run coreBenchParallelism x GOMAXPROCS goroutines; both pools
// are pgxpool's default size. The HTTP client is net/http's, tuned: one
// kept-alive connection per goroutine, 64 KiB read buffers, a GET request
// reused; the bearer token is minted once (the verifier caches a verified
// token, as it does for a real client reusing its token). Every response
// is checked in full before the timer starts, and for its status after.
// BenchmarkCoreListBuyersLeanClient repeats the list with a fasthttp client,
// to show the load generator's share (see BENCHMARKS.md).

const coreBenchParallelism = 4 // x GOMAXPROCS goroutines, for both sides

const (
	coreBenchMerchant = "default"
	coreBenchSeed     = 1000 // buyers before a list benchmark
	coreBenchLimit    = 20
)

type coreBench struct {
	s     *stack.Stack
	db    *postgres.DB // the baselines' own pool on the core database
	token string
	http  *http.Client
}

func newCoreBench(b *testing.B) *coreBench {
	b.Helper()
	s := stack.Start(b)
	db := openCoreDB(b, s.DBs.CoreDSN)
	n := 2 * coreBenchParallelism * runtime.GOMAXPROCS(0)
	tr := &http.Transport{
		MaxIdleConns:        n,
		MaxIdleConnsPerHost: n,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		// A page is ~4 KiB: read an answer in one read, not two.
		ReadBufferSize:  64 << 10,
		WriteBufferSize: 16 << 10,
	}
	b.Cleanup(tr.CloseIdleConnections)
	return &coreBench{
		s:     s,
		db:    db,
		token: "Bearer " + s.Token(b, "buyers.read", "buyers.write"),
		http:  &http.Client{Timeout: 30 * time.Second, Transport: tr},
	}
}

// request makes a request to path with the token and, if body is not nil,
// a JSON body.
func (c *coreBench) request(b *testing.B, method, path string, body []byte) *http.Request {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.s.CoreURL+path, rd)
	if err != nil {
		b.Fatal(err)
	}
	req.Header["Authorization"] = []string{c.token}
	if body != nil {
		req.Header["Content-Type"] = []string{"application/json"}
	}
	return req
}

// send sends req, whose answer must have status want, and reads the body
// to the end (so the connection is reused), into keep if it is not nil.
func (c *coreBench) send(b *testing.B, req *http.Request, want int, keep *[]byte) {
	resp, err := c.http.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want || keep != nil {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != want {
			b.Fatalf("%s %s = %d, want %d: %s", req.Method, req.URL.Path, resp.StatusCode, want, raw)
		}
		*keep = raw
		return
	}
	// Timed requests only drain: the answer was checked before the timer.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// The buyer both create benchmarks write; i makes external_identifier
// unique.
func benchBuyerFields(i int64) coreapi.BuyerFields {
	first, last, email := "Bench", "Buyer", "bench@example.com"
	return coreapi.BuyerFields{
		DisplayName:        coreapi.Some("Bench Buyer"),
		ExternalIdentifier: coreapi.Some("bench-" + strconv.FormatInt(i, 10)),
		BillingDetails:     coreapi.Some(coreapi.BillingDetails{FirstName: &first, LastName: &last, EmailAddress: &email}),
	}
}

// benchBuyerBody is benchBuyerFields(i) as a request body.
func benchBuyerBody(i int64) []byte {
	b := make([]byte, 0, 192)
	b = append(b, `{"display_name":"Bench Buyer","external_identifier":"bench-`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `","billing_details":{"first_name":"Bench","last_name":"Buyer","email_address":"bench@example.com"}}`...)
	return b
}

func BenchmarkCoreCreateBuyer(b *testing.B) {
	c := newCoreBench(b)
	var raw []byte
	c.send(b, c.request(b, "POST", "/buyers", benchBuyerBody(0)), http.StatusCreated, &raw)
	var got struct {
		ExternalIdentifier string `json:"external_identifier"`
		BillingDetails     struct {
			EmailAddress string `json:"email_address"`
		} `json:"billing_details"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || got.ExternalIdentifier != "bench-0" || got.BillingDetails.EmailAddress != "bench@example.com" {
		b.Fatalf("POST /buyers answered %s (%v)", raw, err)
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(coreBenchParallelism)
	b.ResetTimer()
	cpu0 := cpuNow()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.send(b, c.request(b, "POST", "/buyers", benchBuyerBody(seq.Add(1))), http.StatusCreated, nil)
		}
	})
	reportRate(b)
	reportCPU(b, cpu0)
}

func BenchmarkCoreBareInsertBuyer(b *testing.B) {
	c := newCoreBench(b)
	ctx := context.Background()
	if _, err := c.db.CreateBuyer(ctx, coreBenchMerchant, benchBuyerFields(0)); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(coreBenchParallelism)
	b.ResetTimer()
	cpu0 := cpuNow()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.db.CreateBuyer(ctx, coreBenchMerchant, benchBuyerFields(seq.Add(1))); err != nil {
				b.Fatal(err)
			}
		}
	})
	reportRate(b)
	reportCPU(b, cpu0)
}

// seedBuyers inserts coreBenchSeed buyers one second apart and analyzes the
// table, so both list benchmarks read a page off buyers_list_idx.
func (c *coreBench) seedBuyers(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	if _, err := c.db.Pool.Exec(ctx, `
		INSERT INTO buyers (merchant_account_id, display_name, external_identifier, billing_details, created_at, updated_at)
		SELECT $1, 'Buyer ' || g, 'seed-' || g, '{"first_name":"Seed","last_name":"Buyer"}'::jsonb,
		       now() - g * interval '1 second', now() - g * interval '1 second'
		FROM generate_series(1, $2::int) AS g`, coreBenchMerchant, coreBenchSeed); err != nil {
		b.Fatal(err)
	}
	c.s.DBs.ExecAsOwner(b, c.s.DBs.Core, `ANALYZE buyers`)
}

func BenchmarkCoreListBuyers(b *testing.B) {
	c := newCoreBench(b)
	c.seedBuyers(b)
	path := "/buyers?limit=" + strconv.Itoa(coreBenchLimit)
	var raw []byte
	c.send(b, c.request(b, "GET", path, nil), http.StatusOK, &raw)
	var got struct {
		Items []struct {
			DisplayName string `json:"display_name"`
		} `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Items) != coreBenchLimit || got.Items[0].DisplayName != "Buyer 1" || got.NextCursor == nil {
		b.Fatalf("GET %s answered %.300s (%v)", path, raw, err)
	}
	b.ReportAllocs()
	b.SetParallelism(coreBenchParallelism)
	b.ResetTimer()
	cpu0 := cpuNow()
	b.RunParallel(func(pb *testing.PB) {
		req := c.request(b, "GET", path, nil) // reusable once its answer is read
		for pb.Next() {
			c.send(b, req, http.StatusOK, nil)
		}
	})
	reportRate(b)
	reportCPU(b, cpu0)
}

// BenchmarkCoreListBuyersLeanClient is BenchmarkCoreListBuyers with a
// fasthttp client as the load generator (no per-connection read and write
// goroutines). The server under test is the same; the difference shows
// how much of the HTTP side's cost on a shared 2-core machine is net/http's
// client rather than core-api, and a load generator on another machine
// would take none of it. BENCHMARKS.md gives both figures.
func BenchmarkCoreListBuyersLeanClient(b *testing.B) {
	c := newCoreBench(b)
	c.seedBuyers(b)
	uri := c.s.CoreURL + "/buyers?limit=" + strconv.Itoa(coreBenchLimit)
	hc := &fasthttp.HostClient{
		Addr:           strings.TrimPrefix(c.s.CoreURL, "http://"),
		MaxConns:       2 * coreBenchParallelism * runtime.GOMAXPROCS(0),
		ReadBufferSize: 64 << 10,
	}
	b.Cleanup(hc.CloseIdleConnections)
	get := func(req *fasthttp.Request, resp *fasthttp.Response) {
		if err := hc.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != http.StatusOK || !bytes.HasPrefix(resp.Body(), []byte(`{"items":[{"type":"buyer",`)) {
			b.Fatalf("GET %s = %d: %.300s", uri, resp.StatusCode(), resp.Body())
		}
	}
	newReq := func() (*fasthttp.Request, *fasthttp.Response) {
		req := new(fasthttp.Request)
		req.SetRequestURI(uri)
		req.Header.Set("Authorization", c.token)
		return req, new(fasthttp.Response)
	}
	get(newReq())
	b.ReportAllocs()
	b.SetParallelism(coreBenchParallelism)
	b.ResetTimer()
	cpu0 := cpuNow()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := newReq()
		for pb.Next() {
			get(req, resp)
		}
	})
	reportRate(b)
	reportCPU(b, cpu0)
}

func BenchmarkCoreBareSelectBuyers(b *testing.B) {
	c := newCoreBench(b)
	c.seedBuyers(b)
	ctx := context.Background()
	// The page the handler parses for ?limit=20 (its codec's key plays no
	// part in a first page's query).
	page, err := pagination.RandomCodec("core-api").ParseRequest(url.Values{"limit": {strconv.Itoa(coreBenchLimit)}}, "buyers",
		pagination.Binding(coreBenchMerchant, "", ""))
	if err != nil {
		b.Fatal(err)
	}
	rows, err := c.db.ListBuyers(ctx, coreBenchMerchant, coreapi.BuyerFilter{}, page)
	if err != nil || len(rows) != coreBenchLimit+1 || *rows[0].DisplayName != "Buyer 1" {
		b.Fatalf("ListBuyers = %d rows, %v", len(rows), err)
	}
	b.ReportAllocs()
	b.SetParallelism(coreBenchParallelism)
	b.ResetTimer()
	cpu0 := cpuNow()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.db.ListBuyers(ctx, coreBenchMerchant, coreapi.BuyerFilter{}, page); err != nil {
				b.Fatal(err)
			}
		}
	})
	reportRate(b)
	reportCPU(b, cpu0)
}

// reportRate adds requests (or statements) per second to the output.
func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "req/s")
	}
}

// cpuNow is the CPU time this process has used so far: the benchmark
// client, the services of the stack and pgx alike, not PostgreSQL's.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds this process's CPU time per operation since start
// (from cpuNow) to the output, in microseconds.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 && b.N > 0 {
		b.ReportMetric(float64(cpuNow()-start)/float64(b.N)/1e3, "goCPUus/op")
	}
}
