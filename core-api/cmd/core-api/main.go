// Command core-api runs the non-PCI core: buyers, payment methods by token,
// transactions and webhooks. Configuration comes from the environment; see
// core-api/app/config.go.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/core-api/app"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
)

func main() {
	log := logging.New(os.Stderr, slog.LevelInfo)
	if err := run(context.Background(), log, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "core-api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	if len(args) > 0 && args[0] != "serve" {
		return fmt.Errorf("unknown command %q (commands: serve)", args[0])
	}
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	cfg := app.LoadConfig(l)
	if err := l.Err(); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	m, err := app.New(cfg, log)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	return service.Run(ctx, log, m)
}
