// Package mockcard is mock-card, the sandbox card processor the product
// ships: an HTTP server shaped like a card processor's REST API
// (authorizations, captures, voids, refunds, idempotency keys) that
// core-api's card connector reaches through vault-proxy's detokenized
// call, so that it receives real card numbers on the wire. It lives in the
// PCI zone for that reason and is never linked into core-api.
//
// docs/sandbox/mock-card.md is its contract: the wire API, the amounts
// and test cards that decide outcomes, the AVS and CVV results, and the
// idempotency rules. In short:
//
//   - The outcome is chosen by the card (a number failing the Luhn check,
//     an expiry in the past, a test card of tokenizer/card's table), then
//     by the amount (4000 + an ISO 8583 response code declines with that
//     code), else approved. AmountHeld records the charge and holds the
//     answer; AmountProcessorError answers 500 and records nothing.
//   - A pending amount (42xx for an authorization, 4300 and 4301 for a
//     capture or refund) is answered pending and decided later, the
//     result sent as a signed notification to the authorization's
//     notification_url (notify.go), as a processor's asynchronous
//     results are.
//   - An Idempotency-Key is required on every POST; the same key and body
//     is the stored answer, byte for byte, and no second charge.
//   - State is in memory, bounded, and gone at a restart. GET
//     /sandbox/stats has counters tests read.
//   - It never logs a request body or query, and answers no card number:
//     an authorization keeps the scheme and the check results only.
//
// It runs in development and sandbox only, on loopback unless it serves
// TLS.
package mockcard

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/shared/simulator"
)

// Main is one running mock-card.
type Main struct {
	Config Config
	Log    *slog.Logger

	// Listener, when set before Run, is used instead of listening on
	// Config.Addr (tests open it on port 0 first). It is wrapped in TLS
	// when Config.CertFile is set.
	Listener net.Listener
	// Now is the clock for expiries and timestamps (default time.Now).
	Now func() time.Time

	http      simulator.Server
	stop      context.CancelFunc // ends notifications' deliveries
	closing   chan struct{}
	closeOnce sync.Once
}

// New validates cfg (zero fields take the defaults); nothing is opened
// until Run.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Main{Config: cfg, Log: log, closing: make(chan struct{})}, nil
}

// Run starts serving; it returns once the listener accepts connections.
func (m *Main) Run(ctx context.Context) error {
	var tlsCfg *tls.Config
	if m.Config.CertFile != "" {
		var err error
		if tlsCfg, err = certs.PublicServerTLSConfig(m.Config.CertFile, m.Config.KeyFile); err != nil {
			return err
		}
	}
	if err := m.http.Listen(ctx, "mock-card", m.Config.Addr, m.Listener); err != nil {
		return err
	}
	m.http.UseTLS(tlsCfg)
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	clock := func() time.Time { return now().UTC().Truncate(time.Millisecond) }
	srv := newServer(newStore(m.Config.MaxAuthorizations), m.Log, clock, m.Config.Hold, m.closing)
	var bg context.Context
	bg, m.stop = context.WithCancel(context.Background())
	srv.notify = newNotifier(bg, m.Config, m.Log, now)
	m.http.Serve(srv, m.Log)
	m.Log.Warn("mock-card started: a sandbox card processor simulator, not a processor",
		"environment", m.Config.Environment, "addr", m.http.Addr(), "tls", tlsCfg != nil)
	return nil
}

// Addr is the bound address (useful with port 0).
func (m *Main) Addr() string { return m.http.Addr() }

// URL is the simulator's base URL, as VAULT_PROXY_DESTINATIONS names it.
func (m *Main) URL() string {
	if m.Config.CertFile != "" {
		return "https://" + m.Addr()
	}
	return "http://" + m.Addr()
}

// Close lets held answers go and drains in-flight requests. It may be
// called more than once.
func (m *Main) Close() error {
	m.closeOnce.Do(func() {
		close(m.closing)
		if m.stop != nil {
			m.stop()
		}
	})
	return m.http.Close()
}
