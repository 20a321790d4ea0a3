package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/logging"
)

// Every request writes one access line with the request id from the
// context; a card number in the path is redacted whichever way the line
// is written.
func TestAccessLine(t *testing.T) {
	const pan = "4111111111111111"
	rt := func(logs *logging.LogCatcher) *httpapi.Router {
		r := httpapi.NewRouter(logging.New(logs, slog.LevelInfo).With("service", "core-api"))
		r.Handle("GET /things/{id}", func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(http.StatusNoContent)
			return nil
		})
		return r
	}
	for path, want := range map[string]logging.LoggedAccess{
		"/things/abc":      {Path: "/things/abc", Status: http.StatusNoContent},
		"/things/" + pan:   {Path: "/things/" + logging.PANReplacement, Status: http.StatusNoContent},
		"/nowhere/" + pan:  {Path: "/nowhere/" + logging.PANReplacement, Status: http.StatusNotFound},
		"/things/%22a%5Cb": {Path: `/things/"a\b`, Status: http.StatusNoContent}, // escaped by slog
	} {
		var logs logging.LogCatcher
		rec := httptest.NewRecorder()
		rt(&logs).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))

		logs.AssertNoPAN(t, pan)
		want.Msg, want.Service, want.Method, want.RequestID, want.HasDuration = logging.AccessMessage, "core-api", "GET", rec.Header().Get("X-Request-Id"), true
		if got, ok := logs.OnlyAccessLine(t); ok && (got != want || want.RequestID == "") {
			t.Errorf("%s: access line %+v, want %+v", path, got, want)
		}
	}
}

// The router's middleware is built once, not for every request: a request
// bringing its own id, to a route that does nothing, allocates for the id
// in the context (2) and on the answer (1), the deadline (4), the request
// copies carrying them (2) and the status writer (1), and for nothing
// else.
func TestRouterAllocations(t *testing.T) {
	log := logging.New(io.Discard, slog.LevelInfo).With("service", "core-api")
	rt := httpapi.NewRouter(log)
	rt.Handle("GET /nothing", func(w http.ResponseWriter, _ *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	req := httptest.NewRequest(http.MethodGet, "/nothing", nil)
	req.Header.Set("X-Request-Id", "req-1")
	w := &discardWriter{header: http.Header{}}
	if n := testing.AllocsPerRun(1000, func() { clear(w.header); rt.ServeHTTP(w, req) }); n > 10+raceAllocs || w.status != http.StatusNoContent {
		t.Fatalf("%v allocations (want 10), status %d", n, w.status)
	}
}
