package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/vaulttransit"
	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/shared/secret"
)

// Config is everything core-api reads at start.
type Config struct {
	Environment config.Environment
	DatabaseURL string
	Addr        string
	// AdminAddr (CORE_API_ADMIN_ADDR, default 127.0.0.1:9091, loopback
	// only) serves GET /metrics (Prometheus) and GET /healthz; empty: no
	// admin listener.
	AdminAddr string

	// The mTLS link to vault-proxy's internal listener.
	VaultProxyURL    string
	VaultProxyCAFile string
	ClientCertFile   string
	ClientKeyFile    string

	// Vault transit, which encrypts payment service credentials
	// (core-api/vaulttransit): CORE_API_VAULT_ADDR, CORE_API_VAULT_TOKEN
	// (or _FILE; a token of deploy/vault/core-api.hcl's policy, never
	// vault-proxy's), CORE_API_VAULT_TRANSIT_MOUNT (default transit) and
	// CORE_API_VAULT_CACERT. Required in every environment: credentials
	// are never stored otherwise.
	Vault vaulttransit.Config

	// Bearer token verification: public keys only (PEM, P-521) and the
	// issuer they are registered under.
	AuthKeysFile string
	AuthIssuer   string

	// CursorKey signs list cursors (at least 32 bytes). Empty: a random key
	// per start, so cursors do not survive a restart or cross instances.
	CursorKey secret.String

	// RequestTimeout ends every request's work, and is each database
	// statement's statement_timeout (zero: httpapi.DefaultRequestTimeout).
	// It stays below vault-proxy's 60 s wait for core-api (httpapi/deadline.go).
	RequestTimeout time.Duration

	// The vault reconciliation (core-api/reconcile). VaultReconcileInterval
	// (CORE_API_VAULT_RECONCILE_INTERVAL, default 1h) is how often each
	// instance starts it (one runs at a time across instances); zero: never
	// (run `core-api reconcile-vault` from a scheduler instead).
	// VaultReconcileGrace (CORE_API_VAULT_RECONCILE_GRACE) is how long a
	// vaulted record may go without a payment method before it is shredded
	// (zero: DefaultVaultReconcileGrace). VaultReconcileMaxShreds
	// (CORE_API_VAULT_RECONCILE_MAX_SHREDS) stops a run that would shred
	// more (zero: DefaultVaultReconcileMaxShreds).
	VaultReconcileInterval  time.Duration
	VaultReconcileGrace     time.Duration
	VaultReconcileMaxShreds int

	// The transaction sweep (transactions.Sweeper).
	// TransactionSyncInterval (CORE_API_TRANSACTION_SYNC_INTERVAL, default
	// 1m) is how often each instance syncs the card transactions with
	// something in flight for longer than TransactionSyncMinAge
	// (CORE_API_TRANSACTION_SYNC_MIN_AGE, default 5m), which is also how
	// long an operation the processor has no record of is left in flight
	// before it is failed; zero interval: never (POST
	// /transactions/{id}/sync still does it on demand).
	TransactionSyncInterval time.Duration
	TransactionSyncMinAge   time.Duration

	// Pix payments (docs/transactions.md, "Pix"). MockBankURL
	// (CORE_API_MOCK_BANK_URL) is where the mock-bank simulator listens,
	// outside production ("": pix payments through it fail as
	// connector_error). QRExpiry (CORE_API_QR_EXPIRY, default 15m) is how
	// long a QR code can be paid; the sweep (TransactionSyncInterval)
	// fails the payment after it.
	MockBankURL string
	QRExpiry    time.Duration
	// PublicURL (CORE_API_PUBLIC_URL, default http://127.0.0.1:8080) is
	// the base of the absolute URLs core-api gives buyers' clients (a
	// direct integration's default_completion_url): where core-api's
	// routes are reached from outside, vault-proxy's public URL when it
	// fronts core-api.
	PublicURL string
	// NotificationURL (CORE_API_NOTIFICATION_URL, default PublicURL) is
	// core-api's base URL as processors reach it, which the notification
	// URLs given to connectors are built on (docs/notifications.md).
	NotificationURL string
	// CompletionKey (CORE_API_COMPLETION_KEY or _FILE, at least 32 bytes)
	// signs the completion tokens of direct integrations. Empty: a random
	// key per start, so tokens do not survive a restart or cross
	// instances.
	CompletionKey secret.String
	// MockDirectURL (CORE_API_MOCK_DIRECT_URL) is the sandbox wallet
	// simulator mock-direct's base URL; empty: the mock-direct connector
	// is not registered. Outside production only.
	MockDirectURL string
	// MockRedirectURL (CORE_API_MOCK_REDIRECT_URL) is the sandbox
	// redirect-payment simulator mock-redirect's base URL; empty: the
	// mock-redirect connector is not registered. Outside production only.
	MockRedirectURL string
	// MockAntiFraudURL (CORE_API_MOCK_ANTIFRAUD_URL) is the sandbox
	// anti-fraud provider mock-antifraud's base URL; empty: its connector
	// is not registered. Outside production only.
	MockAntiFraudURL string

	// IdempotencyLease (CORE_API_IDEMPOTENCY_LEASE, default 2m) is how
	// long a request's claim on its Idempotency-Key outlives a process
	// that died holding it (package idempotency).
	IdempotencyLease time.Duration

	// RateLimit (CORE_API_RATE_LIMIT, default ratelimit.DefaultPolicy,
	// "off" or "0": none) is the requests a second, and at once, each API
	// credential may make of this instance (httpapi.Router.SetRateLimit).
	// The zero value is no limit.
	RateLimit ratelimit.Policy

	// Webhooks configures outbound webhook delivery (docs/webhooks.md).
	Webhooks WebhookConfig

	// Dashboard configures the merchant dashboard's sign-in
	// (docs/dashboard.md); an empty KeyDir turns it off.
	Dashboard DashboardConfig
}

// WebhookConfig configures outbound webhook delivery.
type WebhookConfig struct {
	// AllowLoopback (WEBHOOK_ALLOW_LOOPBACK=true) lets deliveries reach
	// loopback addresses, for local tests only; refused in production.
	AllowLoopback bool
	// Timeout (CORE_API_WEBHOOK_TIMEOUT, default 5s) bounds one attempt:
	// a 2xx within it is success.
	Timeout time.Duration
	// PerEndpoint (CORE_API_WEBHOOK_CONCURRENCY, default 8) is how many
	// deliveries to one subscription an instance makes at once.
	PerEndpoint int
	// Lease (CORE_API_WEBHOOK_LEASE, default: a batch's worst case plus
	// 30 s) is how long a claimed delivery waits before another instance
	// may take it over from one that died.
	Lease time.Duration
	// Poll (CORE_API_WEBHOOK_POLL, default 200ms) is how often an idle
	// instance looks for due deliveries.
	Poll time.Duration
}

// Defaults of the vault reconciliation. An interval of an hour and a grace
// period of a day keep a record no payment method holds for at most about
// 25 hours (docs/vault-reconciliation.md): far longer than any creation
// takes (vault-proxy waits at most 60 s for each of its two calls), and a
// day for operators to notice a core database that lost rows before its
// cards are shredded for good. Interrupted creations leave a handful a
// day at most; a hundred in one run is an incident to look at first.
const (
	DefaultVaultReconcileInterval  = time.Hour
	DefaultVaultReconcileGrace     = 24 * time.Hour
	DefaultVaultReconcileMaxShreds = 100
	// MinProductionVaultReconcileGrace is the least grace production
	// takes, whatever an operator mistypes.
	MinProductionVaultReconcileGrace = time.Hour

	DefaultTransactionSyncInterval = time.Minute
	// MinProductionTransactionSyncMinAge and MinProductionIdempotencyLease
	// outlast any request (its deadline is at most 55 s, a shutdown's
	// drain 75 s): production never fails an operation, nor takes over a
	// key, whose request may still be running.
	MinProductionTransactionSyncMinAge = 2 * time.Minute
	MinProductionIdempotencyLease      = 2 * time.Minute
)

// vaultReconcileGrace and vaultReconcileMaxShreds are the settings or
// their defaults.
func (c Config) vaultReconcileGrace() time.Duration {
	if c.VaultReconcileGrace == 0 {
		return DefaultVaultReconcileGrace
	}
	return c.VaultReconcileGrace
}

func (c Config) vaultReconcileMaxShreds() int {
	if c.VaultReconcileMaxShreds == 0 {
		return DefaultVaultReconcileMaxShreds
	}
	return c.VaultReconcileMaxShreds
}

// transactionSyncMinAge and idempotencyLease are the settings or their
// defaults.
func (c Config) transactionSyncMinAge() time.Duration {
	if c.TransactionSyncMinAge == 0 {
		return transactions.DefaultSyncMinAge
	}
	return c.TransactionSyncMinAge
}

func (c Config) idempotencyLease() time.Duration {
	if c.IdempotencyLease == 0 {
		return idempotency.DefaultLease
	}
	return c.IdempotencyLease
}

// notificationURL is NotificationURL, or PublicURL when it is not set.
func (c Config) notificationURL() string {
	if c.NotificationURL != "" {
		return c.NotificationURL
	}
	return c.PublicURL
}

// simulatorURLs are the sandbox simulators' base URLs; an empty one's
// connector is not registered.
type simulatorURLs struct{ bank, direct, redirect, antiFraud string }

// simulators is where the configuration says the sandbox simulators are.
func (c Config) simulators() simulatorURLs {
	return simulatorURLs{bank: c.MockBankURL, direct: c.MockDirectURL, redirect: c.MockRedirectURL, antiFraud: c.MockAntiFraudURL}
}

// requestTimeout is RequestTimeout or its default.
func (c Config) requestTimeout() time.Duration {
	if c.RequestTimeout == 0 {
		return httpapi.DefaultRequestTimeout
	}
	return c.RequestTimeout
}

// EnvPrefixes name core-api's own variables: one with a name the loader
// does not read is refused at start (a misspelt name). VAULT_PROXY_CA_FILE
// and VAULT_PROXY_INTERNAL_URL are core-api's too, but vault-proxy's
// variables share that prefix, so it is vault-proxy's to check.
var EnvPrefixes = []string{"CORE_API_"}

// MigrateDatabaseURL names the owner role's database URL (or _FILE),
// which `core-api migrate` reads and the service refuses to be given.
const MigrateDatabaseURL = "CORE_API_MIGRATE_DATABASE_URL"

// LoadConfig reads the environment through l; call l.Err() afterwards.
func LoadConfig(l *config.Loader) Config {
	l.Refuse(MigrateDatabaseURL, "is the owner role's database URL, for `core-api migrate` only: "+
		"the service serves as the runtime role (CORE_API_DATABASE_URL), which cannot change the schema")
	return Config{
		Environment:      l.Environment("ENVIRONMENT"),
		DatabaseURL:      l.Secret("CORE_API_DATABASE_URL").Reveal(),
		Addr:             l.String("CORE_API_ADDR", config.Default(":8080")),
		AdminAddr:        l.String("CORE_API_ADMIN_ADDR", config.Default("127.0.0.1:9091")),
		VaultProxyURL:    strings.TrimRight(l.String("VAULT_PROXY_INTERNAL_URL", config.Default("https://127.0.0.1:9443")), "/"),
		VaultProxyCAFile: l.String("VAULT_PROXY_CA_FILE"),
		ClientCertFile:   l.String("CORE_API_CLIENT_CERT_FILE"),
		ClientKeyFile:    l.String("CORE_API_CLIENT_KEY_FILE"),
		Vault:            LoadVaultConfig(l),
		AuthKeysFile:     l.String("AUTH_PUBLIC_KEYS_FILE"),
		AuthIssuer:       l.String("AUTH_ISSUER", config.Default("payorch")),
		CursorKey:        l.Secret("CORE_API_CURSOR_KEY", config.Optional()), // or CORE_API_CURSOR_KEY_FILE
		RequestTimeout: l.Duration("CORE_API_REQUEST_TIMEOUT", time.Second, httpapi.MaxRequestTimeout,
			config.Default(httpapi.DefaultRequestTimeout.String())),
		VaultReconcileInterval: l.Duration("CORE_API_VAULT_RECONCILE_INTERVAL", 0, 24*time.Hour,
			config.Default(DefaultVaultReconcileInterval.String())),
		VaultReconcileGrace: l.Duration("CORE_API_VAULT_RECONCILE_GRACE", time.Second, 365*24*time.Hour,
			config.Default(DefaultVaultReconcileGrace.String())),
		VaultReconcileMaxShreds: l.Int("CORE_API_VAULT_RECONCILE_MAX_SHREDS", 1, 1_000_000,
			config.Default(strconv.Itoa(DefaultVaultReconcileMaxShreds))),
		TransactionSyncInterval: l.Duration("CORE_API_TRANSACTION_SYNC_INTERVAL", 0, 24*time.Hour,
			config.Default(DefaultTransactionSyncInterval.String())),
		TransactionSyncMinAge: l.Duration("CORE_API_TRANSACTION_SYNC_MIN_AGE", time.Second, 7*24*time.Hour,
			config.Default(transactions.DefaultSyncMinAge.String())),
		IdempotencyLease: l.Duration("CORE_API_IDEMPOTENCY_LEASE", time.Second, time.Hour,
			config.Default(idempotency.DefaultLease.String())),
		MockBankURL: strings.TrimRight(l.String("CORE_API_MOCK_BANK_URL", config.Optional()), "/"),
		QRExpiry: l.Duration("CORE_API_QR_EXPIRY", time.Second, 24*time.Hour,
			config.Default(transactions.DefaultQRExpiry.String())),
		PublicURL:        strings.TrimRight(l.String("CORE_API_PUBLIC_URL", config.Default("http://127.0.0.1:8080")), "/"),
		NotificationURL:  strings.TrimRight(l.String("CORE_API_NOTIFICATION_URL", config.Optional()), "/"),
		CompletionKey:    l.Secret("CORE_API_COMPLETION_KEY", config.Optional()),
		MockDirectURL:    strings.TrimRight(l.String("CORE_API_MOCK_DIRECT_URL", config.Optional()), "/"),
		MockRedirectURL:  strings.TrimRight(l.String("CORE_API_MOCK_REDIRECT_URL", config.Optional()), "/"),
		MockAntiFraudURL: strings.TrimRight(l.String("CORE_API_MOCK_ANTIFRAUD_URL", config.Optional()), "/"),
		RateLimit:        ratelimit.LoadPolicy(l, "CORE_API_RATE_LIMIT"),
		Webhooks: WebhookConfig{
			AllowLoopback: l.Bool("WEBHOOK_ALLOW_LOOPBACK", config.Default("false")),
			Timeout:       l.Duration("CORE_API_WEBHOOK_TIMEOUT", 100*time.Millisecond, time.Minute, config.Default(webhooks.DefaultTimeout.String())),
			PerEndpoint:   l.Int("CORE_API_WEBHOOK_CONCURRENCY", 1, 256, config.Default(strconv.Itoa(webhooks.DefaultPerEndpoint))),
			Lease:         l.Duration("CORE_API_WEBHOOK_LEASE", 0, time.Hour, config.Default("0s")),
			Poll:          l.Duration("CORE_API_WEBHOOK_POLL", 10*time.Millisecond, time.Minute, config.Default(webhooks.DefaultPoll.String())),
		},
		Dashboard: loadDashboardConfig(l),
	}
}

// LoadVaultConfig reads how to reach Vault transit, for serve and for
// `core-api vault-setup` alike. core-api's own names: the VAULT_* that
// vault-proxy reads are never core-api's, so that one shell starting both
// cannot hand core-api vault-proxy's token.
func LoadVaultConfig(l *config.Loader) vaulttransit.Config {
	return vaulttransit.Config{
		Addr:   l.String("CORE_API_VAULT_ADDR"),
		Token:  l.Secret("CORE_API_VAULT_TOKEN").Reveal(),
		Mount:  l.String("CORE_API_VAULT_TRANSIT_MOUNT", config.Default("transit")),
		CAFile: l.String("CORE_API_VAULT_CACERT", config.Optional()),
	}
}

// Validate fails closed: the link to vault-proxy is always mutual TLS.
func (c Config) Validate() error {
	var errs []error
	if !c.Environment.Valid() {
		errs = append(errs, errors.New("ENVIRONMENT must be development, sandbox or production"))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("CORE_API_DATABASE_URL is required"))
	}
	if !strings.HasPrefix(c.VaultProxyURL, "https://") {
		errs = append(errs, errors.New("VAULT_PROXY_INTERNAL_URL must be https (mutual TLS)"))
	}
	if c.VaultProxyCAFile == "" || c.ClientCertFile == "" || c.ClientKeyFile == "" {
		errs = append(errs, errors.New("VAULT_PROXY_CA_FILE, CORE_API_CLIENT_CERT_FILE and CORE_API_CLIENT_KEY_FILE are required"))
	}
	if c.Vault.Addr == "" || c.Vault.Token == "" {
		errs = append(errs, errors.New("CORE_API_VAULT_ADDR and CORE_API_VAULT_TOKEN are required: payment service credentials are encrypted with Vault transit"))
	}
	if c.Environment == config.Production && c.Vault.Addr != "" && !strings.HasPrefix(c.Vault.Addr, "https://") {
		errs = append(errs, errors.New("CORE_API_VAULT_ADDR must be https in production: credentials cross that link in the clear"))
	}
	if c.AuthKeysFile == "" || c.AuthIssuer == "" {
		errs = append(errs, errors.New("AUTH_PUBLIC_KEYS_FILE and AUTH_ISSUER are required"))
	}
	if err := pagination.CheckKey("CORE_API_CURSOR_KEY", c.CursorKey, c.Environment == config.Production); err != nil {
		errs = append(errs, err)
	}
	if err := pagination.CheckKey("CORE_API_COMPLETION_KEY", c.CompletionKey, c.Environment == config.Production); err != nil {
		errs = append(errs, err)
	}
	if c.Environment == config.Production && c.MockDirectURL != "" {
		errs = append(errs, errors.New("CORE_API_MOCK_DIRECT_URL: mock-direct is a sandbox simulator and is never used in production"))
	}
	if c.Environment == config.Production && c.MockRedirectURL != "" {
		errs = append(errs, errors.New("CORE_API_MOCK_REDIRECT_URL: mock-redirect is a sandbox simulator and is never used in production"))
	}
	if c.Environment == config.Production && c.MockAntiFraudURL != "" {
		errs = append(errs, errors.New("CORE_API_MOCK_ANTIFRAUD_URL: mock-antifraud is a sandbox simulator and is never used in production"))
	}
	if c.RequestTimeout < 0 || c.RequestTimeout > httpapi.MaxRequestTimeout {
		errs = append(errs, fmt.Errorf("CORE_API_REQUEST_TIMEOUT must be at most %s: vault-proxy stops waiting for core-api at 60s", httpapi.MaxRequestTimeout))
	}
	if c.VaultReconcileInterval < 0 || c.VaultReconcileGrace < 0 || c.VaultReconcileMaxShreds < 0 {
		errs = append(errs, errors.New("CORE_API_VAULT_RECONCILE_INTERVAL, _GRACE and _MAX_SHREDS must not be negative"))
	}
	if c.TransactionSyncInterval < 0 || c.TransactionSyncMinAge < 0 || c.IdempotencyLease < 0 {
		errs = append(errs, errors.New("CORE_API_TRANSACTION_SYNC_INTERVAL, CORE_API_TRANSACTION_SYNC_MIN_AGE and CORE_API_IDEMPOTENCY_LEASE must not be negative"))
	}
	if c.Environment == config.Production && c.transactionSyncMinAge() < MinProductionTransactionSyncMinAge {
		errs = append(errs, fmt.Errorf("CORE_API_TRANSACTION_SYNC_MIN_AGE must be at least %s in production", MinProductionTransactionSyncMinAge))
	}
	if c.Environment == config.Production && c.idempotencyLease() < MinProductionIdempotencyLease {
		errs = append(errs, fmt.Errorf("CORE_API_IDEMPOTENCY_LEASE must be at least %s in production", MinProductionIdempotencyLease))
	}
	if c.Environment == config.Production && c.vaultReconcileGrace() < MinProductionVaultReconcileGrace {
		errs = append(errs, fmt.Errorf("CORE_API_VAULT_RECONCILE_GRACE must be at least %s in production", MinProductionVaultReconcileGrace))
	}
	if c.AdminAddr != "" && !config.LoopbackAddr(c.AdminAddr) {
		errs = append(errs, errors.New("CORE_API_ADMIN_ADDR must be a loopback address"))
	}
	if c.Environment == config.Production && c.Webhooks.AllowLoopback {
		errs = append(errs, errors.New("WEBHOOK_ALLOW_LOOPBACK must not be true in production: it is for local tests only"))
	}
	return errors.Join(errs...)
}
