// Package mock3ds is mock-3ds, the sandbox 3-D Secure server the product
// ships (docs/sandbox/mock-3ds.md): an HTTP server that authenticates the
// buyer of a card payment by the merchant's 3-D Secure scenarios, which
// the request carries, first match wins, and answers the matched
// scenario with a mock CAVV and the ECI of the card's scheme.
//
// A 3-D Secure server receives the card number (and here the card
// numbers of the scenarios' card conditions), so it lives on the PCI side
// of the tree: core-api never links it and reaches it only through
// vault-proxy's detokenized call, with placeholders. It keeps nothing
// between requests. It runs in development and sandbox only.
package mock3ds

import (
	"context"
	"log/slog"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// Config is everything mock-3ds reads at start.
type Config struct {
	Environment config.Environment
	Addr        string // listen address
}

// DefaultAddr is where mock-3ds listens unless told.
const DefaultAddr = "127.0.0.1:9750"

// EnvPrefixes name mock-3ds's own variables.
var EnvPrefixes = []string{"MOCK_3DS_"}

// LoadConfig reads the environment through l; call l.Err() afterwards.
func LoadConfig(l *config.Loader) Config {
	return Config{
		Environment: l.Environment("ENVIRONMENT"),
		Addr:        l.String("MOCK_3DS_ADDR", config.Default(DefaultAddr)),
	}
}

// Validate checks what the loader cannot.
func (c Config) Validate() error {
	return simulator.CheckEnvironment("mock-3ds", c.Environment)
}

// Main is one running mock-3ds.
type Main struct {
	Config Config
	Log    *slog.Logger

	http simulator.Server
}

// New validates cfg (zero fields take the defaults); nothing is opened
// until Run.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Main{Config: cfg, Log: log}, nil
}

// Run starts serving; it returns once the listener accepts connections.
func (m *Main) Run(ctx context.Context) error {
	if err := m.http.Listen(ctx, "mock-3ds", m.Config.Addr, nil); err != nil {
		return err
	}
	m.http.Serve(Handler(), m.Log)
	m.Log.Warn("mock-3ds started: a sandbox 3-D Secure server simulator",
		"environment", m.Config.Environment, "addr", m.http.Addr())
	return nil
}

// URL is the simulator's base URL.
func (m *Main) URL() string { return m.http.URL() }

// Close drains in-flight requests. It may be called more than once.
func (m *Main) Close() error { return m.http.Close() }
