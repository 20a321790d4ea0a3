// Package simulator is the process boilerplate the sandbox simulators
// share (core-api's, and mock-card and mock-3ds in the PCI zone): the
// refusal to run outside development and sandbox, the listener and HTTP
// server with their timeouts, the base URL and a draining close; for the
// simulators that notify, the configuration they embed (Config), the
// signed delivery (Notifier), and their API keys' test form and webhook
// secrets (WebhookSecrets).
// Each simulator keeps its own API, the rest of its configuration, and
// its state.
package simulator

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/shared/config"
)

// CheckEnvironment refuses production and any environment but
// development and sandbox; name is the simulator's, for the error.
func CheckEnvironment(name string, env config.Environment) error {
	switch env {
	case config.Development, config.Sandbox:
		return nil
	case config.Production:
		return fmt.Errorf("ENVIRONMENT: %s is a sandbox simulator and never runs in production", name)
	}
	return errors.New("ENVIRONMENT must be development or sandbox")
}

// Server is a simulator's listener and HTTP server. The zero value is
// ready for Listen.
type Server struct {
	name      string
	ln        net.Listener
	srv       *http.Server
	closeOnce sync.Once
}

// Listen takes ln, or opens addr when ln is nil; name is the
// simulator's, for errors and logs.
func (s *Server) Listen(ctx context.Context, name, addr string, ln net.Listener) error {
	s.name = name
	if ln == nil {
		var err error
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", addr); err != nil {
			return fmt.Errorf("%s: listener: %w", name, err)
		}
	}
	s.ln = ln
	return nil
}

// UseTLS has the listener serve TLS under cfg (nil: plain HTTP), between
// Listen and Serve: a simulator in the PCI zone answers on another host
// over TLS only.
func (s *Server) UseTLS(cfg *tls.Config) {
	if cfg != nil {
		s.ln = tls.NewListener(s.ln, cfg)
	}
}

// Serve serves h on the listener in the background, logging a failure of
// the listener to log.
func (s *Server) Serve(h http.Handler, log *slog.Logger) {
	s.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(s.name+": listener stopped", "err", err)
		}
	}()
}

// Addr is the listener's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the simulator's base URL.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Close drains in-flight requests for up to 10 s. It may be called more
// than once, and before Serve.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = s.srv.Shutdown(ctx)
	})
	return err
}

// Healthz answers GET /healthz: {"status": "ok"}.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// JSONArrayOrAbsent says whether raw, a field a simulator records as sent
// without reading it (a payment's cart items), is absent, null or an
// array.
func JSONArrayOrAbsent(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[':
			return true
		}
		return string(bytes.TrimSpace(raw)) == "null"
	}
	return true
}
