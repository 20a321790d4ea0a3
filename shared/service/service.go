// Package service runs a long-lived process until SIGINT or SIGTERM and then
// shuts it down gracefully. Both services' cmd packages use it.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/payorch/shared/config"
)

// Runner is a service's Main.
type Runner interface {
	Run(ctx context.Context) error
	Close() error
}

// Run starts r, blocks until ctx ends or a stop signal arrives, then closes r
// (draining in-flight requests). It returns the first error.
func Run(ctx context.Context, log *slog.Logger, r Runner) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := r.Run(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	// A second signal during the drain stops the process at once: an
	// operator who presses Ctrl-C again means it.
	stop()
	log.Info("shutting down")
	if err := r.Close(); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// Serve reads a service's configuration from the process environment with
// load, reports every problem at once, builds the service with build and
// runs it until a stop signal. A variable starting with one of prefixes
// that load never read is a problem too: a misspelt name (say
// VAULT_PROXY_INTERNAL_ALLOWED_CLIENT, meant to narrow an allow-list)
// would otherwise leave the default in force without a word.
func Serve[C any, R Runner](ctx context.Context, log *slog.Logger, prefixes []string, load func(*config.Loader) C, build func(C, *slog.Logger) (R, error)) error {
	environ := os.Environ()
	l := config.NewLoader(config.EnvironLookup(environ))
	cfg := load(l)
	l.RejectUnknown(environ, prefixes...)
	if err := l.Err(); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	r, err := build(cfg, log)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	return Run(ctx, log, r)
}
