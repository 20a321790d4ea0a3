// Command mock-3ds runs the sandbox 3-D Secure server simulator
// (vault-proxy/sandbox/mock3ds, docs/sandbox/mock-3ds.md) in development
// or sandbox; it refuses to start in production. Configuration comes from
// the environment:
//
//	ENVIRONMENT    development or sandbox
//	MOCK_3DS_ADDR  listen address (default 127.0.0.1:9750)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
	"github.com/payorch/vault-proxy/nodump"
	"github.com/payorch/vault-proxy/sandbox/mock3ds"
)

func main() {
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := run(context.Background(), logging.New(out, slog.LevelInfo))
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-3ds:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	// Card numbers arrive here as they do at mock-card: no core file,
	// no reading this process's memory from another of the same user.
	if err := nodump.Apply(); err != nil {
		return err
	}
	return service.Serve(ctx, log, mock3ds.EnvPrefixes, mock3ds.LoadConfig, mock3ds.New)
}
