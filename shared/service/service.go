// Package service runs a long-lived process until SIGINT or SIGTERM and then
// shuts it down gracefully. Both services' cmd packages use it.
package service

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
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
	log.Info("shutting down")
	if err := r.Close(); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
