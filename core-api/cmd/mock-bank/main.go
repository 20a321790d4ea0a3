// Command mock-bank runs the sandbox bank simulator
// (core-api/sandbox/mockbank, docs/sandbox/mock-bank.md) in development or
// sandbox; it refuses to start in production. Configuration comes from
// the environment:
//
//	ENVIRONMENT                  development or sandbox
//	MOCK_BANK_ADDR               listen address (default 127.0.0.1:9710)
//	MOCK_BANK_WEBHOOK_SECRET     notification signing secret of API keys without their own (default: the public sandbox one)
//	MOCK_BANK_WEBHOOK_SECRETS    API keys' own secrets: api_key=secret,... (or _FILE)
//	MOCK_BANK_DELIVERY_ATTEMPTS  sends of one notification (default 6)
//	MOCK_BANK_RETRY_DELAY        wait before the first retry, doubled after each (default 200ms)
//	MOCK_BANK_DEBIT_DELAY        how long a bank debit stays pending before its result is notified (default 500ms)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
)

func main() {
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := service.Serve(context.Background(), logging.New(out, slog.LevelInfo), mockbank.EnvPrefixes, mockbank.LoadConfig, mockbank.New)
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-bank:", err)
		os.Exit(1)
	}
}
