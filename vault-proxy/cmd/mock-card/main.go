// Command mock-card runs the sandbox card processor simulator
// (vault-proxy/sandbox/mockcard, docs/sandbox/mock-card.md) in development
// or sandbox; it refuses to start in production. Configuration comes from
// the environment:
//
//	ENVIRONMENT                   development or sandbox
//	MOCK_CARD_ADDR                listen address (default 127.0.0.1:9700; loopback unless TLS)
//	MOCK_CARD_CERT_FILE, _KEY_FILE serve TLS with this certificate
//	MOCK_CARD_MAX_AUTHORIZATIONS  authorizations kept in memory (default 50000)
//	MOCK_CARD_HOLD                how long the processing amount's answer waits (default 2m)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
	"github.com/payorch/vault-proxy/nodump"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

func main() {
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := run(context.Background(), logging.New(out, slog.LevelInfo))
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-card:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	// Card numbers arrive here as they do in vault-proxy: no core file,
	// no reading this process's memory from another of the same user.
	if err := nodump.Apply(); err != nil {
		return err
	}
	return service.Serve(ctx, log, mockcard.EnvPrefixes, mockcard.LoadConfig, mockcard.New)
}
