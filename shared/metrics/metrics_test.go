package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/metrics"
)

// The registry serves the Prometheus text format, with the request
// metrics labelled by listener, route template and status.
func TestHTTPMetricsInTheTextFormat(t *testing.T) {
	reg := metrics.NewRegistry()
	h := reg.NewHTTP("svc")
	h.Observe("main", "GET /things/{id}", 200, 3*time.Millisecond)
	h.Observe("main", "GET /things/{id}", 200, 4*time.Millisecond)
	h.Observe("main", "unmatched", 404, time.Millisecond)
	var none *metrics.HTTP
	none.Observe("main", "x", 200, time.Millisecond) // a router without metrics

	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`svc_http_requests_total{listener="main",route="GET /things/{id}",status="200"} 2`,
		`svc_http_requests_total{listener="main",route="unmatched",status="404"} 1`,
		`svc_http_request_duration_seconds_count{listener="main",route="GET /things/{id}",status="200"} 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
}

func TestRateLimitedRefusals(t *testing.T) {
	reg := metrics.NewRegistry()
	m := reg.NewRateLimited("svc")
	m.Refused("public", "credential")
	m.Refused("public", "credential")
	m.Refused("public", "address")
	var none *metrics.RateLimited
	none.Refused("public", "address")

	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`svc_rate_limited_requests_total{bucket="credential",listener="public"} 2`,
		`svc_rate_limited_requests_total{bucket="address",listener="public"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
