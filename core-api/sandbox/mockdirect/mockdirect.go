// Package mockdirect is mock-direct, the sandbox simulator of a direct
// (client SDK) wallet integration the product ships: an HTTP server
// shaped like PayPal's orders API. The merchant's server creates an order,
// the buyer approves or declines it in the wallet (here a sandbox page or
// endpoint a test calls), and the merchant's server then captures or
// authorizes the approved order.
//
// docs/sandbox/mock-direct.md is its contract. It sees no card data, so
// it lives on the non-PCI side of the tree; it is still never linked into
// core-api, which reaches it over HTTP as it would a real processor.
// State is in memory, bounded, and gone at a restart. It runs in
// development and sandbox only.
package mockdirect

import (
	"context"
	"log/slog"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// Config is everything mock-direct reads at start.
type Config struct {
	Environment config.Environment
	Addr        string // listen address
	// PublicURL is the base of the approval links it gives ("" : its own
	// listener's http:// URL).
	PublicURL string
	// MaxOrders bounds the orders (and request ids) kept; the oldest are
	// forgotten first.
	MaxOrders int
}

// Defaults of the fields a Config may leave zero.
const (
	DefaultAddr      = "127.0.0.1:9720"
	DefaultMaxOrders = 50_000
)

// EnvPrefixes name mock-direct's own variables.
var EnvPrefixes = []string{"MOCK_DIRECT_"}

// LoadConfig reads the environment through l; call l.Err() afterwards.
func LoadConfig(l *config.Loader) Config {
	return Config{
		Environment: l.Environment("ENVIRONMENT"),
		Addr:        l.String("MOCK_DIRECT_ADDR", config.Default(DefaultAddr)),
		PublicURL:   l.String("MOCK_DIRECT_PUBLIC_URL", config.Optional()),
		MaxOrders:   l.Int("MOCK_DIRECT_MAX_ORDERS", 1, 10_000_000, config.Default("50000")),
	}
}

// Validate checks what the loader cannot.
func (c Config) Validate() error {
	return simulator.CheckEnvironment("mock-direct", c.Environment)
}

// Main is one running mock-direct.
type Main struct {
	Config Config
	Log    *slog.Logger
	// Now is the clock of the orders' times (default time.Now).
	Now func() time.Time

	http simulator.Server
}

// New validates cfg (zero fields take the defaults); nothing is opened
// until Run.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.MaxOrders == 0 {
		cfg.MaxOrders = DefaultMaxOrders
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Main{Config: cfg, Log: log}, nil
}

// Run starts serving; it returns once the listener accepts connections.
func (m *Main) Run(ctx context.Context) error {
	if err := m.http.Listen(ctx, "mock-direct", m.Config.Addr, nil); err != nil {
		return err
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	base := m.Config.PublicURL
	if base == "" {
		base = m.URL()
	}
	m.http.Serve(newServer(newStore(m.Config.MaxOrders), base, func() time.Time { return now().UTC().Truncate(time.Second) }), m.Log)
	m.Log.Warn("mock-direct started: a sandbox wallet simulator, not a processor",
		"environment", m.Config.Environment, "addr", m.http.Addr())
	return nil
}

// URL is the simulator's base URL.
func (m *Main) URL() string { return m.http.URL() }

// Close drains in-flight requests. It may be called more than once.
func (m *Main) Close() error { return m.http.Close() }
