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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/shared/config"
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
	switch c.Environment {
	case config.Development, config.Sandbox:
		return nil
	case config.Production:
		return errors.New("ENVIRONMENT: mock-3ds is a sandbox simulator and never runs in production")
	}
	return errors.New("ENVIRONMENT must be development or sandbox")
}

// Main is one running mock-3ds.
type Main struct {
	Config Config
	Log    *slog.Logger

	ln        net.Listener
	srv       *http.Server
	closeOnce sync.Once
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
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", m.Config.Addr)
	if err != nil {
		return fmt.Errorf("mock-3ds: listener: %w", err)
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("mock-3ds: listener stopped", "err", err)
		}
	}()
	m.Log.Warn("mock-3ds started: a sandbox 3-D Secure server simulator",
		"environment", m.Config.Environment, "addr", ln.Addr().String())
	return nil
}

// URL is the simulator's base URL.
func (m *Main) URL() string { return "http://" + m.ln.Addr().String() }

// Close drains in-flight requests. It may be called more than once.
func (m *Main) Close() error {
	var err error
	m.closeOnce.Do(func() {
		if m.srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = m.srv.Shutdown(ctx)
	})
	return err
}
