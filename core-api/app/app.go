// Package app wires core-api: configuration, the core database, the mTLS
// client to vault-proxy's internal listener, and the HTTP listener. cmd/core-api
// parses the environment and calls Main; end-to-end tests start the same Main.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/reconcile"
	"github.com/payorch/core-api/threeds"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/core-api/vaulttransit"
	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/ratelimit"
)

// Main is one running core-api.
type Main struct {
	Config Config
	Log    *slog.Logger

	DB         *postgres.DB
	VaultProxy *vaultclient.Client // mTLS client to vault-proxy's internal listener
	// Vault encrypts payment service credentials (Vault transit).
	Vault *vaulttransit.Client
	// Connectors are the environment's connectors, registered by Run.
	Connectors *connector.Registry

	// Listener, when set before Run, is used instead of listening on
	// Config.Addr (tests open it on port 0 first).
	Listener net.Listener

	ln  net.Listener
	srv *http.Server

	// stopJobs ends the periodic jobs (the vault reconciliation, the
	// purge of idempotency keys); jobs waits for them.
	jobCtx   context.Context
	stopJobs context.CancelFunc
	jobs     sync.WaitGroup

	txs       *transactions.Service // the routes' and the sweep's
	scenarios *threeds.Service      // the 3-D Secure simulator's rule book, outside production

	webhookObserver webhooks.Observer // metrics of deliveries; nil: none

	// AdminListener, when set, is used instead of listening on
	// Config.AdminAddr (tests pass one on port 0).
	AdminListener net.Listener
	admin         *http.Server
	adminLn       net.Listener
}

// idempotencyPurgeInterval is how often expired idempotency keys are
// removed: they are refused or replaced by the claim that finds them
// expired anyway, so the purge only bounds the table's size.
const idempotencyPurgeInterval = 10 * time.Minute

// New validates cfg; nothing is opened until Run.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Main{Config: cfg, Log: log}, nil
}

// Run migrates and connects the database, builds the internal client and
// starts serving. It returns once the listener accepts connections.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	if err := m.open(ctx); err != nil {
		return err
	}
	keys, err := auth.LoadKeySetFile(m.Config.AuthKeysFile, m.Config.AuthIssuer)
	if err != nil {
		return err
	}
	dash, err := m.dashboardDeps(keys)
	if err != nil {
		return err
	}
	verifier, err := auth.NewVerifier(auth.Config{Keys: keys, Logger: m.Log})
	if err != nil {
		return err
	}

	cursors, random, err := pagination.OpenCodec("core-api", m.Config.CursorKey)
	if err != nil {
		return err
	}
	if random {
		m.Log.Warn("CORE_API_CURSOR_KEY is not set: list cursors use a random key and do not survive a restart")
	}

	reg := m.newMetrics()
	rt := httpapi.NewRouter(m.Log)
	rt.SetRequestTimeout(m.Config.requestTimeout())
	rt.SetMetrics(reg.NewHTTP(metricsService))
	refusals := reg.NewRateLimited(metricsService)
	limit := ratelimit.NewGuard(m.Config.RateLimit, nil, func(bucket string) { refusals.Refused("main", bucket) })
	if limit != nil && m.Config.Dashboard.KeyDir != "" {
		limit.PerTokenIssuer = m.Config.Dashboard.Issuer // one key signs every dashboard user's tokens
	}
	rt.SetRateLimit(limit, verifier)
	deps := m.deps(verifier, cursors)
	deps.Metrics = reg.Handler()
	deps.Dashboard = dash
	httpapi.Routes(rt, deps)
	if err := m.serveAdmin(reg); err != nil {
		return err
	}

	if m.ln = m.Listener; m.ln == nil {
		if m.ln, err = net.Listen("tcp", m.Config.Addr); err != nil {
			return fmt.Errorf("listener: %w", err)
		}
	}
	m.srv = &http.Server{
		Handler:           rt,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("listener stopped", "err", err)
		}
	}()
	m.Log.Info("core-api started", "environment", m.Config.Environment, "addr", m.ln.Addr().String())
	m.startReconciling()
	purger := &idempotency.Purger{Store: m.DB, Log: m.Log.With("component", "idempotency-purge")}
	m.startJob(func(ctx context.Context) { purger.Every(ctx, idempotencyPurgeInterval) })
	m.startSweeping()
	m.startDelivering()
	return nil
}

// startSweeping syncs the card transactions left with something in flight
// (transactions.Sweeper) every TransactionSyncInterval until Close; never
// with an interval of zero.
func (m *Main) startSweeping() {
	interval := m.Config.TransactionSyncInterval
	if interval <= 0 {
		m.Log.Warn("the transaction sweep is off (CORE_API_TRANSACTION_SYNC_INTERVAL=0): operations left in flight settle only by POST /transactions/{id}/sync")
		return
	}
	sweeper := &transactions.Sweeper{Service: m.txs, Store: m.DB, Log: m.Log.With("component", "transaction-sweep")}
	m.startJob(func(ctx context.Context) { sweeper.Every(ctx, interval) })
}

// open connects the core database (migrating it) and builds the mTLS
// client to vault-proxy: what serving and the reconcile-vault command
// both need.
func (m *Main) open(ctx context.Context) error {
	dsn, err := WithStatementTimeout(m.Config.DatabaseURL, m.Config.requestTimeout())
	if err != nil {
		return err
	}
	if m.DB, err = postgres.Open(ctx, dsn); err != nil {
		return err
	}
	m.DB.Events = httpapi.EventRenderer{Environment: string(m.Config.Environment)}
	if m.Vault, err = vaulttransit.New(m.Config.Vault); err != nil {
		return err
	}
	tlsCfg, err := certs.ClientTLSConfig(m.Config.ClientCertFile, m.Config.ClientKeyFile, m.Config.VaultProxyCAFile)
	if err != nil {
		return err
	}
	m.VaultProxy = &vaultclient.Client{Base: m.Config.VaultProxyURL, HTTP: &http.Client{
		Timeout: 70 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: true,
			// vault-proxy ends a connection that has carried no request
			// after its 30 s read timeout (net/http's transport keeps
			// connections it dialled for a request another one served):
			// closing ours first keeps a call from being sent on a
			// connection vault-proxy is closing, a POST net/http does not
			// retry and whose outcome is then unknown.
			IdleConnTimeout: 20 * time.Second},
		// A detokenized call is never redirected: the destination is vault-proxy.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	return nil
}

// reconciler is the vault reconciliation on this instance's database and
// link to vault-proxy.
func (m *Main) reconciler() *reconcile.Job {
	return &reconcile.Job{Store: m.DB, VaultProxy: m.VaultProxy, Log: m.Log.With("component", "vault-reconcile"),
		Grace: m.Config.vaultReconcileGrace(), MaxShreds: m.Config.vaultReconcileMaxShreds()}
}

// startReconciling runs the vault reconciliation every
// VaultReconcileInterval until Close, the first time soon after the start
// (within a minute): instances restarted more often than the interval
// still run it.
func (m *Main) startReconciling() {
	interval := m.Config.VaultReconcileInterval
	if interval <= 0 {
		m.Log.Warn("the vault reconciliation is off (CORE_API_VAULT_RECONCILE_INTERVAL=0): run core-api reconcile-vault from a scheduler")
		return
	}
	m.startJob(func(ctx context.Context) { m.reconciler().Every(ctx, min(interval, time.Minute), interval) })
}

// startJob runs job in the background until Close.
func (m *Main) startJob(job func(ctx context.Context)) {
	if m.stopJobs == nil {
		var ctx context.Context
		ctx, m.stopJobs = context.WithCancel(context.Background())
		m.jobCtx = ctx
	}
	m.jobs.Add(1)
	go func() {
		defer m.jobs.Done()
		job(m.jobCtx)
	}()
}

// ReconcileVault runs the vault reconciliation once (core-api
// reconcile-vault): cfg's database and link to vault-proxy, with job's
// settings changed by adjust.
func ReconcileVault(ctx context.Context, cfg Config, log *slog.Logger, opts reconcile.Options, adjust func(*reconcile.Job)) (*reconcile.Result, error) {
	m, err := New(cfg, log)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := m.open(ctx); err != nil {
		return nil, err
	}
	job := m.reconciler()
	adjust(job)
	return job.Run(ctx, opts)
}

// Addr is the bound address (useful with port 0).
func (m *Main) Addr() string { return m.ln.Addr().String() }

// drainTimeout bounds a graceful shutdown: longer than the longest
// request (its deadline, CORE_API_REQUEST_TIMEOUT, is at most 55 s).
const drainTimeout = 75 * time.Second

// Close stops the periodic jobs, drains in-flight requests and closes
// the database.
func (m *Main) Close() error {
	if m.stopJobs != nil {
		// First: a run under way stops where it is (the next one finishes
		// what it leaves) and lets go of the database.
		m.stopJobs()
		m.jobs.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	var err error
	if m.srv != nil {
		err = m.srv.Shutdown(ctx)
	}
	if m.admin != nil {
		_ = m.admin.Close() // metrics scrapes need no drain
	}
	if m.DB != nil {
		m.DB.Close()
	}
	return err
}
