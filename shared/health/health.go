// Package health evaluates readiness checks the same way on both services:
// every check runs, a failure is named but never described (a Vault or pgx
// error text can carry addresses), and the cause is logged.
package health

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Check is one readiness probe (PostgreSQL, Vault, vault-proxy, ...).
type Check struct {
	Name  string
	Check func(context.Context) error
}

// Ready runs checks within 3 seconds and returns the status code and body
// for /readyz.
func Ready(ctx context.Context, log *slog.Logger, checks []Check) (int, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	results, ok := map[string]string{}, true
	for _, c := range checks {
		if err := c.Check(ctx); err != nil {
			ok = false
			results[c.Name] = "failed"
			log.WarnContext(ctx, "readiness check failed", "check", c.Name, "err", err)
			continue
		}
		results[c.Name] = "ok"
	}
	if !ok {
		return http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "checks": results}
	}
	return http.StatusOK, map[string]any{"status": "ready", "checks": results}
}

// Alive is the body of /healthz: the process answers.
var Alive = map[string]string{"status": "ok"}
