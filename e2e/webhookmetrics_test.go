package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/e2e/stack"
)

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// Both services expose Prometheus metrics on their admin listener:
// requests by route template and status, the database pool, and for
// core-api webhook delivery (queue depth per endpoint, attempts,
// failures, latency); no label carries card data or a secret.
func TestMetricsOnTheAdminListeners(t *testing.T) {
	s := stack.Start(t, withWebhooks(), stack.WithCoreAPI(func(c *coreapp.Config) { c.AdminAddr = "127.0.0.1:0" }))
	tok := s.Token(t, webhookScopes...)
	c := newCore(s, tok, "default")
	ok, dead := newHookReceiver(t), newHookReceiver(t)
	dead.setRespond(func(hookRequest) int { return http.StatusInternalServerError })
	sub := c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": ok.srv.URL + "/?token=hook-token"})
	deadSub := c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": dead.srv.URL})
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "")["id"].(string)
	c.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"display_name": "Ana"})
	ok.await(t, "buyer.created", func(r hookRequest) bool { return r.Name == "buyer.created" })
	// The dead endpoint's answers are not kept by the receiver: wait for
	// its failure to be counted.
	failed := `core_api_webhook_failures_total{subscription_id="` + deadSub["id"].(string) + `"}`
	var core string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if core = scrape(t, "http://"+s.CoreAPI.AdminAddr()+"/metrics"); strings.Contains(core, failed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead endpoint's failure was never counted")
		}
	}
	for _, want := range []string{
		`core_api_http_requests_total{listener="main",route="POST /buyers",status="201"} 1`,
		`core_api_http_request_duration_seconds_bucket{listener="main",route="POST /webhook-subscriptions",status="201"`,
		`core_api_db_pool_max_connections`,
		`core_api_db_pool_acquired_connections`,
		`core_api_webhook_attempts_total{outcome="succeeded",subscription_id="` + sub["id"].(string) + `"}`,
		`core_api_webhook_failures_total{subscription_id="` + deadSub["id"].(string) + `"}`,
		`core_api_webhook_queue_depth{subscription_id="` + deadSub["id"].(string) + `"}`,
		`core_api_webhook_delivery_duration_seconds_bucket{outcome="succeeded"`,
		`core_api_unmatched_notifications_total 0`,
	} {
		if !strings.Contains(core, want) {
			t.Errorf("core-api metrics lack %s", want)
		}
	}
	vp := scrape(t, s.AdminURL+"/metrics")
	for _, want := range []string{
		`vault_proxy_http_requests_total{listener="public",route="POST /payment-methods",status="201"} 1`,
		`vault_proxy_db_pool_connections`,
	} {
		if !strings.Contains(vp, want) {
			t.Errorf("vault-proxy metrics lack %s", want)
		}
	}
	for _, leak := range []string{pan, pan[len(pan)-4:] + `"`, pm, "hook-token", "whsec_", sub["secret"].(string)} {
		if strings.Contains(core, leak) || strings.Contains(vp, leak) {
			t.Errorf("metrics carry %q", leak)
		}
	}
	// The main listener's GET /metrics (docs/notifications.md) serves
	// the same registry.
	if main := scrape(t, s.CoreURL+"/metrics"); !strings.Contains(main, "core_api_unmatched_notifications_total") {
		t.Error("GET /metrics on the main listener lost the unmatched notifications count")
	}
}
