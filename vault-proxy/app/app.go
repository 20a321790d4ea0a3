// Package app wires vault-proxy: configuration, the vault database, Vault
// transit and the three listeners (services.go builds the services and
// what their routes call; httpapi/routes.go lists the routes).
// cmd/vault-proxy only parses the environment and calls Main; end-to-end
// tests start the same Main on port 0.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/metrics"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
)

// Main is one running vault-proxy.
type Main struct {
	Config Config
	Log    *slog.Logger

	DB       *postgres.DB
	Audit    *auditspool.Spool
	Vault    *transit.Client
	Sealer   *envelope.Sealer
	Cards    *vaulting.Service
	Forwards *forward.Engine
	// ForwardConfigs manages vault forward configs and authentication
	// methods; Outbound is the SSRF-safe client /vault-forward sends with.
	ForwardConfigs *forwardconfig.Service
	Outbound       *outbound.Client

	// NetworkTokens provisions and stores network tokens for the
	// CARD_NETWORK_TOKEN / CARD_CRYPTOGRAM placeholders and their API.
	NetworkTokens *networktoken.Service

	// Detokenize serves core-api's detokenized calls; its Masked counter
	// says how often a destination answered with card numbers.
	Detokenize *httpapi.Detokenize

	// Listeners, when set before Run, are used instead of listening on the
	// configured addresses: tests open them on port 0 first so that each
	// service can be told the other's address.
	Listeners struct{ Public, Internal, Admin net.Listener }

	public, internal, admin listener
}

type listener struct {
	ln  net.Listener
	srv *fasthttp.Server
}

// New validates cfg; nothing is opened until Run.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Main{Config: cfg, Log: log}, nil
}

// Run connects to the database (migrating it) and Vault, then starts the
// listeners. It returns once they accept connections; Close stops them.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	if m.DB, err = postgres.Open(ctx, m.Config.DatabaseURL); err != nil {
		return err
	}
	// Every reveal and send is recorded here first, then shipped to the
	// database off the request path.
	if m.Audit, err = auditspool.Open(m.Config.AuditSpoolDir, m.DB, auditspool.Options{Log: m.Log.With("component", "audit-spool")}); err != nil {
		return err
	}
	if m.Vault, err = transit.New(m.Config.Vault); err != nil {
		return err
	}
	// The fingerprint key is read from Vault once; failing here fails the
	// start: there is no fallback key.
	fpKey, err := m.Vault.HMACKey(ctx, transit.FingerprintKey)
	if err != nil {
		return fmt.Errorf("fingerprint key: %w", err)
	}
	m.services(fpKey)

	keys, err := auth.LoadKeySetFile(m.Config.AuthKeysFile, m.Config.AuthIssuer)
	if err != nil {
		return err
	}
	if f := m.Config.DashboardKeysFile; f != "" {
		if m.Config.DashboardIssuer == m.Config.AuthIssuer {
			return errors.New("VAULT_PROXY_DASHBOARD_ISSUER must differ from AUTH_ISSUER: dashboard tokens have their own key")
		}
		if _, err := keys.AddFile(f, m.Config.DashboardIssuer); err != nil {
			return err
		}
	}
	verifier, err := auth.NewVerifier(auth.Config{Keys: keys, Logger: m.Log})
	if err != nil {
		return err
	}
	public, internal, err := m.handlers(verifier)
	if err != nil {
		return err
	}
	publicTLS, err := certs.PublicServerTLSConfig(m.Config.PublicCertFile, m.Config.PublicKeyFile)
	if err != nil {
		return err
	}
	internalTLS, err := certs.ServerTLSConfig(m.Config.InternalCertFile, m.Config.InternalKeyFile, m.Config.ClientCAFile, m.Config.InternalAllowedClients)
	if err != nil {
		return err
	}
	reg := metrics.NewRegistry()
	reg.RegisterPool("vault_proxy", m.DB.Pool)
	requests := reg.NewHTTP("vault_proxy")
	publicRouter := httpapi.NewRouter(m.Log.With("listener", "public"))
	publicRouter.SetMetrics(requests, "public")
	publicRouter.SetCORS(m.Config.DashboardOrigin)
	refusals := reg.NewRateLimited("vault_proxy")
	limit := ratelimit.NewGuard(m.Config.RateLimit, nil, func(bucket string) { refusals.Refused("public", bucket) })
	if limit != nil && m.Config.DashboardKeysFile != "" {
		limit.PerTokenIssuer = m.Config.DashboardIssuer // one key signs every dashboard user's tokens
	}
	publicRouter.SetRateLimit(limit, verifier)
	httpapi.PublicRoutes(publicRouter, public)
	internalRouter := httpapi.NewRouter(m.Log.With("listener", "internal"))
	internalRouter.SetMetrics(requests, "internal")
	httpapi.InternalRoutes(internalRouter, internal)
	adminRouter := httpapi.NewRouter(m.Log.With("listener", "admin"))
	adminRouter.SetMetrics(requests, "admin")
	httpapi.AdminRoutes(adminRouter, public.Checks, reg.Handler())

	if m.public, err = m.serve(m.Listeners.Public, m.Config.PublicAddr, publicTLS, publicRouter, "public"); err != nil {
		return err
	}
	if m.internal, err = m.serve(m.Listeners.Internal, m.Config.InternalAddr, internalTLS, internalRouter, "internal"); err != nil {
		return err
	}
	if m.admin, err = m.serve(m.Listeners.Admin, m.Config.AdminAddr, nil, adminRouter, "admin"); err != nil {
		return err
	}
	m.Log.Info("vault-proxy started",
		"environment", m.Config.Environment,
		"public", m.public.ln.Addr().String(),
		"internal", m.internal.ln.Addr().String(),
		"admin", m.admin.ln.Addr().String())
	return nil
}

func (m *Main) serve(ln net.Listener, addr string, tlsCfg *tls.Config, rt *httpapi.Router, name string) (listener, error) {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return listener{}, fmt.Errorf("%s listener: %w", name, err)
		}
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := &fasthttp.Server{
		Handler:                       rt.Handler(),
		Name:                          "vault-proxy",
		ReadTimeout:                   30 * time.Second,
		WriteTimeout:                  90 * time.Second, // a forward may wait 60s upstream
		IdleTimeout:                   2 * time.Minute,
		MaxRequestBodySize:            4 << 20,
		DisableHeaderNamesNormalizing: false,
		NoDefaultServerHeader:         true,
		SecureErrorLogMessage:         true,
		NoDefaultDate:                 false,
		ReduceMemoryUsage:             false,
		Logger:                        fasthttpLogger{m.Log},
		ErrorHandler:                  rt.ServerError,
	}
	go func() {
		if err := srv.Serve(ln); err != nil {
			m.Log.Error("listener stopped", "listener", name, "err", err)
		}
	}()
	return listener{ln: ln, srv: srv}, nil
}

// PublicAddr, InternalAddr and AdminAddr are the bound addresses (useful
// with port 0).
func (m *Main) PublicAddr() string   { return m.public.ln.Addr().String() }
func (m *Main) InternalAddr() string { return m.internal.ln.Addr().String() }
func (m *Main) AdminAddr() string    { return m.admin.ln.Addr().String() }

// DrainTimeout bounds each phase of a graceful shutdown. It outlasts the
// longest request a listener serves (a forward or detokenized call: up to
// 60 s of sending, within the 90 s write timeout): such a request writes
// its audit record after the send, so it must end before the spool
// closes. The platform's grace period must cover both phases
// (deploy/production/README.md).
const DrainTimeout = 95 * time.Second

// Close shuts down gracefully, in two phases, each within DrainTimeout,
// then closes the audit spool and the database. First the public and admin
// listeners stop taking requests and drain; the internal one keeps
// serving meanwhile, because a public request under way may need core-api
// to call it back (a new payment method's card metadata, an expiry
// change). Then the internal listener drains too.
func (m *Main) Close() error {
	var errs []error
	for _, phase := range [][]listener{{m.public, m.admin}, {m.internal}} {
		errs = append(errs, m.drain(phase)...)
	}
	if m.Outbound != nil {
		_ = m.Outbound.Close()
	}
	if m.Audit != nil {
		// After the listeners: the last requests' records are written,
		// then shipped while the database is still open.
		errs = append(errs, m.Audit.Close())
	}
	if m.DB != nil {
		m.DB.Close()
	}
	return errors.Join(errs...)
}

// drain shuts the listeners down together and waits, within DrainTimeout,
// for their requests to end.
func (m *Main) drain(ls []listener) []error {
	ctx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
	defer cancel()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, l := range ls {
		if l.srv == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.srv.ShutdownWithContext(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		m.Log.Error("requests were still running when the drain timed out; their audit records may be missing", "drain_timeout", DrainTimeout)
	}
	return errs
}

// fasthttpLogger routes fasthttp's own messages through the redacting
// logger, without the request bytes they may quote. SecureErrorLogMessage
// keeps most of them out of fasthttp's errors, but not all (a request line
// without an HTTP version, a malformed header line are still quoted), and
// the redactor cannot be relied on for them: %q writes a byte such as 0xa1
// as `\xa1`, whose last hex digit then joins the digits of a card number
// after it into a run that fails the Luhn check. A header could also hold
// a credential. So every quoted string in an error's text is dropped; the
// connection's addresses (fasthttp passes them as net.Addr) are kept.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = elideQuoted(err.Error())
		}
	}
	l.log.Warn("fasthttp", "detail", fmt.Sprintf(format, args...))
}

// elidedQuote replaces each quoted string in a fasthttp error.
const elidedQuote = `"[request bytes not logged]"`

// elideQuoted replaces every Go-quoted string in s (what %q writes) with
// elidedQuote; an unterminated one takes the rest of s with it.
func elideQuoted(s string) string {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return s
	}
	var b strings.Builder
	for i >= 0 {
		b.WriteString(s[:i])
		b.WriteString(elidedQuote)
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			return b.String()
		}
		s = s[i+len(q):]
		i = strings.IndexByte(s, '"')
	}
	b.WriteString(s)
	return b.String()
}
