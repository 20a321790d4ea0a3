// Package app wires vault-proxy: configuration, the vault database, Vault
// transit and the three listeners. cmd/vault-proxy only parses the
// environment and calls Main; end-to-end tests start the same Main on port 0.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/zone"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/processordest"
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
	m.Sealer = envelope.New(m.Vault, m.DB, envelope.Config{TransitKey: transit.CardKey})
	m.Cards = vaulting.New(m.DB, m.Audit, m.Sealer, fpKey, vaulting.NewSecurityCodes(15*time.Minute), nil)
	m.Forwards = &forward.Engine{Vaulting: m.Cards}
	// Network tokens: the sandbox token service simulator serves visa,
	// mastercard, amex and discover outside production. Production has no
	// TSP connector registered yet: provisioning fails there (422, or ""
	// for the _OR_EMPTY_STRING placeholders).
	ntProviders := &networktoken.Registry{}
	if m.Config.Environment != config.Production {
		ntProviders.Register(&networktoken.Sandbox{}, networktoken.SandboxSchemes...)
	}
	m.NetworkTokens = &networktoken.Service{Store: m.DB, Audits: m.Audit, Sealer: m.Sealer, Providers: ntProviders, Vaulting: m.Cards, Log: m.Log}
	m.Forwards.NetworkTokens = m.NetworkTokens

	keys, err := auth.LoadKeySetFile(m.Config.AuthKeysFile, m.Config.AuthIssuer)
	if err != nil {
		return err
	}
	verifier, err := auth.NewVerifier(auth.Config{Keys: keys, Logger: m.Log})
	if err != nil {
		return err
	}
	authn := &httpapi.Authenticator{Verifier: verifier}
	core, err := httpapi.NewCore(m.Config.CoreAPIURL)
	if err != nil {
		return err
	}
	// The extra CAs, read once: a pool of their own for the forward client
	// (which tries the system roots first), and added to the system roots
	// for the detokenize destinations.
	var extraCAs *x509.CertPool
	var extraCerts []*x509.Certificate
	if m.Config.ExtraCAFile != "" {
		if extraCerts, err = certs.LoadCerts(m.Config.ExtraCAFile); err != nil {
			return err
		}
		extraCAs = x509.NewCertPool()
		for _, c := range extraCerts {
			extraCAs.AddCert(c)
		}
	}
	dests, err := processordest.Parse(m.Config.Destinations, extraCerts)
	if err != nil {
		return err
	}
	cards := &httpapi.Cards{Vaulting: m.Cards, NetworkTokens: m.NetworkTokens, Auth: authn, Core: core, Log: m.Log}

	prod := m.Config.Environment == config.Production
	cursors, random, err := pagination.OpenCodec("vault-proxy", m.Config.CursorKey)
	if err != nil {
		return err
	}
	if random {
		m.Log.Warn("VAULT_PROXY_CURSOR_KEY is not set: list cursors use a random key and do not survive a restart")
	}
	if m.Outbound, err = outbound.New(forwardPolicy(m.Config, extraCAs)); err != nil {
		return err
	}
	if m.Config.ForwardAllowLoopback && !prod {
		m.Log.Warn("vault forward may reach loopback hosts listed in forwarding configs (VAULT_FORWARD_ALLOW_LOOPBACK=true); never use this outside development and tests")
	}
	m.ForwardConfigs = &forwardconfig.Service{Store: m.DB, Sealer: m.Sealer}
	fwd := &httpapi.Forward{Engine: m.Forwards, Configs: m.ForwardConfigs, Client: m.Outbound, Auth: authn,
		RequireListedHost: prod, Log: m.Log}
	fwdConfigs := &httpapi.ForwardConfigs{Service: m.ForwardConfigs, Auth: authn, Cursors: cursors}
	m.Detokenize = &httpapi.Detokenize{Engine: m.Forwards, Destinations: dests, Log: m.Log}

	checks := []httpapi.Check{
		{Name: "postgres", Check: m.DB.Ping},
		{Name: "vault", Check: m.Vault.Health},
		{Name: "audit-spool", Check: func(context.Context) error { return m.Audit.Writable() }},
	}

	publicTLS, err := certs.PublicServerTLSConfig(m.Config.PublicCertFile, m.Config.PublicKeyFile)
	if err != nil {
		return err
	}
	internalTLS, err := certs.ServerTLSConfig(m.Config.InternalCertFile, m.Config.InternalKeyFile, m.Config.ClientCAFile, m.Config.InternalAllowedClients)
	if err != nil {
		return err
	}

	public := httpapi.NewRouter(m.Log.With("listener", "public"))
	public.Health(checks...)
	public.Handle(fasthttp.MethodPost, "/payment-methods", cards.CreatePaymentMethod)
	public.Handle(fasthttp.MethodGet, "/audit-events", (&httpapi.Audit{Store: m.DB, Spool: m.Audit, Auth: authn, Cursors: cursors}).List)
	public.Handle(fasthttp.MethodPost, "/vault-forward", fwd.Handle)
	fwdConfigs.Routes(public)
	(&httpapi.NetworkTokens{Service: m.NetworkTokens, Auth: authn}).Routes(public)
	public.Handle(fasthttp.MethodGet, "/openapi.json", httpapi.OpenAPI)
	public.NotFound(core.Pass) // one base URL: everything else is core-api's
	public.MethodNotAllowed(core.Pass)

	internal := httpapi.NewRouter(m.Log.With("listener", "internal"))
	internal.Health(checks...)
	internal.Handle(fasthttp.MethodGet, zone.CardPath, cards.Metadata)
	internal.Handle(fasthttp.MethodPut, zone.CardPath, cards.UpdateExpiry)
	internal.Handle(fasthttp.MethodDelete, zone.CardPath, cards.Delete)
	internal.Handle(fasthttp.MethodPost, zone.DetokenizePath, m.Detokenize.Handle)
	accounts := &httpapi.MerchantAccounts{Store: m.DB}
	internal.Handle(fasthttp.MethodGet, zone.MerchantAccountUsagePath, accounts.Usage)
	internal.Handle(fasthttp.MethodPost, zone.MerchantAccountClosePath, accounts.Close)
	internal.Handle(fasthttp.MethodPost, zone.MerchantAccountReopenPath, accounts.Reopen)
	internal.Handle(fasthttp.MethodPost, zone.MerchantAccountCancelClosePath, accounts.CancelClose)
	reconcile := &httpapi.Reconciliation{Store: m.DB, Cards: cards, MinAge: m.Config.reconcileMinAge()}
	internal.Handle(fasthttp.MethodGet, zone.ReconcileRecordsPath, reconcile.List)
	internal.Handle(fasthttp.MethodDelete, zone.ReconcileRecordPath, reconcile.Shred)
	admin := httpapi.NewRouter(m.Log.With("listener", "admin"))
	admin.Health(checks...)

	if m.public, err = m.serve(m.Listeners.Public, m.Config.PublicAddr, publicTLS, public, "public"); err != nil {
		return err
	}
	if m.internal, err = m.serve(m.Listeners.Internal, m.Config.InternalAddr, internalTLS, internal, "internal"); err != nil {
		return err
	}
	if m.admin, err = m.serve(m.Listeners.Admin, m.Config.AdminAddr, nil, admin, "admin"); err != nil {
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

// forwardPolicy is the outbound client's policy for /vault-forward:
// production reaches only hosts a merchant's forwarding config lists, over
// https, never loopback; development and sandbox any public host, and
// loopback only when VAULT_FORWARD_ALLOW_LOOPBACK is set and a config lists
// the host (Validate refuses the flag in production; this does not rely on
// it).
func forwardPolicy(c Config, extraCAs *x509.CertPool) outbound.Policy {
	prod := c.Environment == config.Production
	return outbound.Policy{
		AllowLoopback:       c.ForwardAllowLoopback && !prod,
		RequireAllowedHosts: prod,
		RequireHTTPS:        prod,
		ExtraRootCAs:        extraCAs,
	}
}

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
