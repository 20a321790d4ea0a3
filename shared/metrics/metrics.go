// Package metrics is the services' Prometheus instrumentation
// (prometheus/client_golang): one registry per process, served in the text
// format on the admin listener, with the request counts and latencies by
// route and status, and the database pool's statistics. Labels carry route
// templates ("/payment-methods/{id}"), statuses and ids, never a request's
// path, query, body or any secret.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is a process's metrics.
type Registry struct {
	*prometheus.Registry
}

// NewRegistry has the Go runtime's and the process's collectors.
func NewRegistry() *Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Registry{r}
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.Registry, promhttp.HandlerOpts{Registry: r.Registry})
}

// HTTP counts a listener's requests and their latency.
type HTTP struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewHTTP registers the request metrics of service (core_api,
// vault_proxy), labelled by listener, route template and status.
func (r *Registry) NewHTTP(service string) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: service, Name: "http_requests_total",
			Help: "HTTP requests answered, by listener, route template and status."}, []string{"listener", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: service, Name: "http_request_duration_seconds",
			Help:    "HTTP request latency, by listener, route template and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
			[]string{"listener", "route", "status"}),
	}
	r.MustRegister(h.requests, h.latency)
	return h
}

// Observe records one request. route is the matched route's template, or
// "unmatched".
func (h *HTTP) Observe(listener, route string, status int, d time.Duration) {
	if h == nil {
		return
	}
	s := strconv.Itoa(status)
	h.requests.WithLabelValues(listener, route, s).Inc()
	h.latency.WithLabelValues(listener, route, s).Observe(d.Seconds())
}

// RegisterPool exports a pgx pool's statistics under service.
func (r *Registry) RegisterPool(service string, pool *pgxpool.Pool) {
	r.MustRegister(&poolCollector{pool: pool, descs: poolDescs(service)})
}

type poolCollector struct {
	pool  *pgxpool.Pool
	descs map[string]*prometheus.Desc
}

func poolDescs(service string) map[string]*prometheus.Desc {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(service, "db_pool", name), help, nil, nil)
	}
	return map[string]*prometheus.Desc{
		"max":           d("max_connections", "The pool's maximum size."),
		"total":         d("connections", "Connections open."),
		"acquired":      d("acquired_connections", "Connections in use."),
		"idle":          d("idle_connections", "Connections idle."),
		"acquires":      d("acquires_total", "Connections acquired from the pool."),
		"empty":         d("empty_acquires_total", "Acquires that waited for a connection."),
		"acquire_secs":  d("acquire_duration_seconds_total", "Time spent acquiring connections."),
		"canceled":      d("canceled_acquires_total", "Acquires canceled by their context."),
		"new_conns":     d("new_connections_total", "Connections opened."),
		"max_lifetimes": d("max_lifetime_destroys_total", "Connections closed for their age."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	g := func(k string, v float64) { ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.GaugeValue, v) }
	n := func(k string, v float64) { ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.CounterValue, v) }
	g("max", float64(s.MaxConns()))
	g("total", float64(s.TotalConns()))
	g("acquired", float64(s.AcquiredConns()))
	g("idle", float64(s.IdleConns()))
	n("acquires", float64(s.AcquireCount()))
	n("empty", float64(s.EmptyAcquireCount()))
	n("acquire_secs", s.AcquireDuration().Seconds())
	n("canceled", float64(s.CanceledAcquireCount()))
	n("new_conns", float64(s.NewConnsCount()))
	n("max_lifetimes", float64(s.MaxLifetimeDestroyCount()))
}

// RateLimited counts the requests a listener's rate limit refused
// (shared/ratelimit), by bucket kind: credential or address.
type RateLimited struct {
	refused *prometheus.CounterVec
}

// NewRateLimited registers service's counter of rate-limited requests.
func (r *Registry) NewRateLimited(service string) *RateLimited {
	m := &RateLimited{refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: service, Name: "rate_limited_requests_total",
		Help: "Requests refused 429 rate_limited, by listener and bucket kind (credential, address)."}, []string{"listener", "bucket"})}
	r.MustRegister(m.refused)
	return m
}

// Refused counts one refusal; a nil *RateLimited counts nothing.
func (m *RateLimited) Refused(listener, bucket string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(listener, bucket).Inc()
}
