// Command mock-antifraud runs the sandbox anti-fraud provider simulator
// (core-api/sandbox/mockantifraud, docs/sandbox/mock-antifraud.md) in
// development or sandbox; it refuses to start in production.
// Configuration comes from the environment:
//
//	ENVIRONMENT                  development or sandbox
//	MOCK_ANTIFRAUD_ADDR          listen address (default 127.0.0.1:9740)
//	MOCK_ANTIFRAUD_MAX_REQUESTS  requests recorded in memory (default 10000)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/core-api/sandbox/mockantifraud"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/service"
)

func main() {
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := service.Serve(context.Background(), logging.New(out, slog.LevelInfo), mockantifraud.EnvPrefixes, mockantifraud.LoadConfig, mockantifraud.New)
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-antifraud:", err)
		os.Exit(1)
	}
}
