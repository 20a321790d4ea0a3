// Package mockantifraud is mock-antifraud, the sandbox anti-fraud
// provider the product ships: an HTTP server that speaks two versions of
// its API, v2.1 (POST /v2.1/decisions, a flat body) and v10.2 (POST
// /v10.2/assessments, a nested one), and decides by the device session
// and the buyer's e-mail (docs/sandbox/mock-antifraud.md). It records
// every request it receives (GET /sandbox/requests) so that tests see
// what each version of a connector sent.
//
// It sees no card data (a BIN and a scheme at most), so it lives on the
// non-PCI side of the tree; core-api never links it and reaches it over
// HTTP. State is in memory and gone at a restart. It runs in development
// and sandbox only.
package mockantifraud

import (
	"context"
	"log/slog"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// Config is everything mock-antifraud reads at start.
type Config struct {
	Environment config.Environment
	Addr        string // listen address
	// MaxRequests bounds the requests recorded for tests; the oldest
	// are forgotten first.
	MaxRequests int
}

// Defaults of the fields a Config may leave zero.
const (
	DefaultAddr        = "127.0.0.1:9740"
	DefaultMaxRequests = 10_000
)

// EnvPrefixes name mock-antifraud's own variables.
var EnvPrefixes = []string{"MOCK_ANTIFRAUD_"}

// LoadConfig reads the environment through l; call l.Err() afterwards.
func LoadConfig(l *config.Loader) Config {
	return Config{
		Environment: l.Environment("ENVIRONMENT"),
		Addr:        l.String("MOCK_ANTIFRAUD_ADDR", config.Default(DefaultAddr)),
		MaxRequests: l.Int("MOCK_ANTIFRAUD_MAX_REQUESTS", 1, 10_000_000, config.Default("10000")),
	}
}

// Validate checks what the loader cannot.
func (c Config) Validate() error {
	return simulator.CheckEnvironment("mock-antifraud", c.Environment)
}

// Main is one running mock-antifraud.
type Main struct {
	Config Config
	Log    *slog.Logger
	// Requests are the requests received, for tests (GET
	// /sandbox/requests answers them too).
	Requests *Recorder

	http simulator.Server
}

// New validates cfg (zero fields take the defaults); nothing is opened
// until Run.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.MaxRequests == 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Main{Config: cfg, Log: log, Requests: &Recorder{max: cfg.MaxRequests}}, nil
}

// Run starts serving; it returns once the listener accepts connections.
func (m *Main) Run(ctx context.Context) error {
	if err := m.http.Listen(ctx, "mock-antifraud", m.Config.Addr, nil); err != nil {
		return err
	}
	m.http.Serve(newServer(m.Requests), m.Log)
	m.Log.Warn("mock-antifraud started: a sandbox anti-fraud provider simulator",
		"environment", m.Config.Environment, "addr", m.http.Addr())
	return nil
}

// URL is the simulator's base URL.
func (m *Main) URL() string { return m.http.URL() }

// Close drains in-flight requests. It may be called more than once.
func (m *Main) Close() error { return m.http.Close() }
