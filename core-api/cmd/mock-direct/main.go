// Command mock-direct runs the sandbox direct-integration (PayPal-like)
// wallet simulator (core-api/sandbox/mockdirect, docs/sandbox/mock-direct.md)
// in development or sandbox; it refuses to start in production.
// Configuration comes from the environment:
//
//	ENVIRONMENT             development or sandbox
//	MOCK_DIRECT_ADDR        listen address (default 127.0.0.1:9720)
//	MOCK_DIRECT_PUBLIC_URL  base of the approval links (default: its own http:// address)
//	MOCK_DIRECT_MAX_ORDERS  orders kept in memory (default 50000)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/core-api/sandbox/mockdirect"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
)

func main() {
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := service.Serve(context.Background(), logging.New(out, slog.LevelInfo), mockdirect.EnvPrefixes, mockdirect.LoadConfig, mockdirect.New)
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-direct:", err)
		os.Exit(1)
	}
}
