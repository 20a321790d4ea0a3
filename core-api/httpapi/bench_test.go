package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/pagination"
)

// BenchmarkListBuyersPage is core-api's own work on GET /buyers?limit=20,
// the request of e2e's BenchmarkCoreListBuyers (BENCHMARKS.md, "Core
// API"), without the network and the database: the router with its
// request id, deadline and access line (to io.Discard, which takes the
// short path as the service's buffered writer does), the cached bearer
// token and merchant account, the query, the cursor, the page's JSON.
// The store hands out a copy of 21 rows from memory, as the real one
// hands out the rows it scanned; e2e's baseline measures that part.
func BenchmarkListBuyersPage(b *testing.B) {
	authz, token := testAuth(b, "buyers.read")
	log := logging.New(io.Discard, slog.LevelInfo).With("service", "core-api")
	rt := httpapi.NewRouter(log)
	httpapi.Routes(rt, httpapi.Deps{Log: log, Auth: authz, Cursors: pagination.RandomCodec("core-api"),
		Buyers: &buyers.Service{Store: pageStore{benchRows(21)}}})
	req := httptest.NewRequest(http.MethodGet, "/buyers?limit=20", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := &discardWriter{header: http.Header{}}
	rt.ServeHTTP(w, req)
	if w.status != http.StatusOK || w.n < 20*150 {
		b.Fatalf("GET /buyers = %d, %d bytes", w.status, w.n)
	}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.header)
		rt.ServeHTTP(w, req)
	}
}

// benchRows are n buyers as the seeded benchmark's: a name, an external
// identifier, a second apart.
func benchRows(n int) []coreapi.Buyer {
	rows := make([]coreapi.Buyer, n)
	at := time.Date(2026, 11, 22, 7, 30, 0, 123456000, time.UTC)
	for i := range rows {
		name, ext := "Buyer "+strconv.Itoa(i+1), "seed-"+strconv.Itoa(i+1)
		rows[i] = coreapi.Buyer{
			ID: "0192f3a4-5b6c-7d8e-9f00-" + strconv.Itoa(100000000000+i), MerchantAccountID: "default",
			DisplayName: &name, ExternalIdentifier: &ext,
			CreatedAt: at.Add(-time.Duration(i) * time.Second), UpdatedAt: at.Add(-time.Duration(i) * time.Second),
		}
	}
	return rows
}

// pageStore lists a copy of its rows, whatever the page asks.
type pageStore struct{ rows []coreapi.Buyer }

var _ buyers.Store = pageStore{}

func (s pageStore) ListBuyers(context.Context, string, coreapi.BuyerFilter, pagination.Page) ([]coreapi.Buyer, error) {
	return append([]coreapi.Buyer(nil), s.rows...), nil
}

func (pageStore) CreateBuyer(context.Context, string, coreapi.BuyerFields) (*coreapi.Buyer, error) {
	panic("not in the benchmark")
}

func (pageStore) FindBuyer(context.Context, string, string) (*coreapi.Buyer, error) {
	panic("not in the benchmark")
}

func (pageStore) UpdateBuyer(context.Context, string, string, coreapi.BuyerFields) (*coreapi.Buyer, error) {
	panic("not in the benchmark")
}

func (pageStore) DeleteBuyer(context.Context, string, string) error { panic("not in the benchmark") }

// discardWriter is a ResponseWriter that keeps the status and the size.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header  { return w.header }
func (w *discardWriter) WriteHeader(code int) { w.status = code }
func (w *discardWriter) Write(b []byte) (int, error) {
	w.n = len(b)
	return len(b), nil
}
