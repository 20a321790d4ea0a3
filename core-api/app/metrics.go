package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/metrics"
)

// metricsService names core-api's metrics (core_api_...).
const metricsService = "core_api"

// newMetrics is the process's registry: requests (the router's), the
// database pool, processors' notifications that matched nothing, and
// webhook delivery (webhookMetrics).
func (m *Main) newMetrics() *metrics.Registry {
	reg := metrics.NewRegistry()
	reg.RegisterPool(metricsService, m.DB.Pool)
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: metricsService,
		Name: "unmatched_notifications_total", Help: "Verified processor notifications that matched no transaction."},
		func() float64 {
			if t := m.txs; t != nil && t.QR != nil {
				return float64(t.QR.Unmatched.Load())
			}
			return 0
		}))
	wm := newWebhookMetrics(m.DB)
	reg.MustRegister(wm)
	m.webhookObserver = wm
	return reg
}

// webhookMetrics observes the dispatcher (webhooks.Observer) and reads
// each subscription's queue depth at scrape time. Subscriptions are
// labelled by id: their URLs may carry tokens.
type webhookMetrics struct {
	depths   func(ctx context.Context) (map[string]int, error)
	attempts *prometheus.CounterVec
	failures *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	depth    *prometheus.Desc
}

var _ webhooks.Observer = (*webhookMetrics)(nil)

type queueDepths interface {
	WebhookQueueDepths(ctx context.Context) (map[string]int, error)
}

func newWebhookMetrics(store queueDepths) *webhookMetrics {
	return &webhookMetrics{
		depths: store.WebhookQueueDepths,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsService, Name: "webhook_attempts_total",
			Help: "Webhook delivery attempts, by subscription and outcome (succeeded, retry, failed)."},
			[]string{"subscription_id", "outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsService, Name: "webhook_failures_total",
			Help: "Webhook delivery attempts that failed (to be retried or given up), by subscription."},
			[]string{"subscription_id"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metricsService, Name: "webhook_delivery_duration_seconds",
			Help:    "Latency of webhook delivery attempts, by outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"outcome"}),
		depth: prometheus.NewDesc(metricsService+"_webhook_queue_depth", "Pending webhook deliveries, by subscription.",
			[]string{"subscription_id"}, nil),
	}
}

// Attempted counts one attempt.
func (w *webhookMetrics) Attempted(subscriptionID string, o webhooks.Outcome) {
	outcome := string(o.Status)
	if o.Status == "pending" {
		outcome = "retry"
	}
	w.attempts.WithLabelValues(subscriptionID, outcome).Inc()
	if outcome != "succeeded" {
		w.failures.WithLabelValues(subscriptionID).Inc()
	}
	w.latency.WithLabelValues(outcome).Observe(o.Latency.Seconds())
}

func (w *webhookMetrics) Describe(ch chan<- *prometheus.Desc) {
	w.attempts.Describe(ch)
	w.failures.Describe(ch)
	w.latency.Describe(ch)
	ch <- w.depth
}

func (w *webhookMetrics) Collect(ch chan<- prometheus.Metric) {
	w.attempts.Collect(ch)
	w.failures.Collect(ch)
	w.latency.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	depths, err := w.depths(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(w.depth, err)
		return
	}
	for id, n := range depths {
		ch <- prometheus.MustNewConstMetric(w.depth, prometheus.GaugeValue, float64(n), id)
	}
}

// serveAdmin starts the admin listener (CORE_API_ADMIN_ADDR, loopback):
// GET /metrics and GET /healthz, no token.
func (m *Main) serveAdmin(reg *metrics.Registry) error {
	ln := m.AdminListener
	if ln == nil {
		if m.Config.AdminAddr == "" {
			return nil
		}
		var err error
		if ln, err = net.Listen("tcp", m.Config.AdminAddr); err != nil {
			return fmt.Errorf("admin listener: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	m.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	m.adminLn = ln
	go func() {
		if err := m.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("admin listener stopped", "err", err)
		}
	}()
	return nil
}

// AdminAddr is the admin listener's bound address ("" without one).
func (m *Main) AdminAddr() string {
	if m.adminLn == nil {
		return ""
	}
	return m.adminLn.Addr().String()
}
