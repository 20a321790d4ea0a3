// Command mock-redirect runs the sandbox redirect-payment processor
// simulator (core-api/sandbox/mockredirect, docs/sandbox/mock-redirect.md)
// in development or sandbox; it refuses to start in production.
// Configuration comes from the environment:
//
//	ENVIRONMENT                      development or sandbox
//	MOCK_REDIRECT_ADDR               listen address (default 127.0.0.1:9730)
//	MOCK_REDIRECT_PUBLIC_URL         base of the approval URLs (default: its own http:// address)
//	MOCK_REDIRECT_WEBHOOK_SECRET     notification signing secret of API keys without their own (default: the public sandbox one)
//	MOCK_REDIRECT_WEBHOOK_SECRETS    API keys' own secrets: api_key=secret,... (or _FILE)
//	MOCK_REDIRECT_DELIVERY_ATTEMPTS  sends of one notification (default 6)
//	MOCK_REDIRECT_RETRY_DELAY        wait before the first retry, doubled after each (default 200ms)
//	MOCK_REDIRECT_MAX_PAYMENTS       payments kept in memory (default 50000)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
)

func main() {
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := service.Serve(context.Background(), logging.New(out, slog.LevelInfo), mockredirect.EnvPrefixes, mockredirect.LoadConfig, mockredirect.New)
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-redirect:", err)
		os.Exit(1)
	}
}
