package app

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/payorch/certs"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/shared/secret"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/processordest"
)

// Config is everything vault-proxy reads at start.
type Config struct {
	Environment config.Environment
	DatabaseURL string
	Vault       transit.Config

	PublicAddr, InternalAddr, AdminAddr string

	PublicCertFile, PublicKeyFile     string
	InternalCertFile, InternalKeyFile string
	ClientCAFile                      string   // CA that issues core-api's client certificate
	InternalAllowedClients            []string // identities allowed on the internal listener

	CoreAPIURL string // where non-card routes are passed on

	// Bearer token verification, the same keys core-api uses.
	AuthKeysFile string
	AuthIssuer   string

	// The merchant dashboard (docs/dashboard.md). DashboardKeysFile
	// (VAULT_PROXY_DASHBOARD_KEYS_FILE) holds the public keys of the
	// dashboard's tokens (core-api's CORE_API_DASHBOARD_KEY_DIR
	// public-keys.pem), accepted under DashboardIssuer
	// (VAULT_PROXY_DASHBOARD_ISSUER, default payorch-dashboard);
	// DashboardOrigin (VAULT_PROXY_DASHBOARD_ORIGIN) is the one origin
	// whose pages may call the public listener (CORS). Empty: no
	// dashboard tokens, no CORS.
	DashboardKeysFile string
	DashboardIssuer   string
	DashboardOrigin   string

	// Destinations core-api may name in detokenized calls: name=base URL.
	Destinations string
	// ExtraCAFile adds a CA trusted for destinations and forwards (local
	// simulators and test targets with their own CA).
	ExtraCAFile string
	// ForwardAllowLoopback (VAULT_FORWARD_ALLOW_LOOPBACK) lets
	// /vault-forward reach loopback hosts that a forwarding config lists.
	// Honoured only in development and sandbox; production refuses to start
	// with it set.
	ForwardAllowLoopback bool

	// AuditSpoolDir (VAULT_PROXY_AUDIT_SPOOL_DIR) is this instance's own
	// audit spool (auditspool): a directory on persistent local disk that
	// no other instance uses.
	AuditSpoolDir string

	// CursorKey (VAULT_PROXY_CURSOR_KEY or _FILE, at least 32 bytes, the
	// same on every instance) signs list cursors. Empty: a random key per
	// start; required in production.
	CursorKey secret.String

	// ReconcileMinAge (VAULT_PROXY_RECONCILE_MIN_AGE) is the youngest a
	// vaulted record may be for core-api's reconciliation to list it or
	// shred it as one no payment method holds. Zero: DefaultReconcileMinAge.
	ReconcileMinAge time.Duration

	// RateLimit (VAULT_PROXY_RATE_LIMIT, default ratelimit.DefaultPolicy,
	// "off" or "0": none) is the requests a second, and at once, each API
	// credential, and apart from those each remote address, may make of the
	// public listener (httpapi.Router.SetRateLimit). The zero value is no
	// limit.
	RateLimit ratelimit.Policy

	// SecurityCodeTTL is the longest a security code is held in memory
	// (SECURITY.md, "Security codes"). Zero: 15 minutes. Not read from
	// the environment: tests shorten it to see a hold end.
	SecurityCodeTTL time.Duration
}

// DefaultReconcileMinAge is ReconcileMinAge unless set: a payment method's
// creation ends within minutes (vault-proxy waits at most 60 s for each of
// its two calls to core-api), and a day lets operators see and stop a
// reconciliation that would shred cards (a core database restored from an
// older backup, say) before it destroys anything that is a day old or
// less; no record kept for lack of a payment method lives much longer.
const DefaultReconcileMinAge = 24 * time.Hour

// MinProductionReconcileMinAge is the least ReconcileMinAge production
// takes: well above the longest creation, whatever an operator mistypes.
const MinProductionReconcileMinAge = time.Hour

// reconcileMinAge is ReconcileMinAge or its default.
func (c Config) reconcileMinAge() time.Duration {
	if c.ReconcileMinAge == 0 {
		return DefaultReconcileMinAge
	}
	return c.ReconcileMinAge
}

// EnvPrefixes name vault-proxy's own variables: one with a name the loader
// does not read is refused at start (a misspelt name). CORE_API_URL is
// vault-proxy's too, but core-api's variables share its prefix and the
// environment of a local run, so that prefix is core-api's to check; the
// two VAULT_PROXY_ variables core-api reads are ignored here.
var EnvPrefixes = []string{"VAULT_PROXY_", "VAULT_FORWARD_"}

// MigrateDatabaseURL names the owner role's database URL (or _FILE),
// which `vault-proxy migrate` reads and the service refuses to be given.
const MigrateDatabaseURL = "VAULT_PROXY_MIGRATE_DATABASE_URL"

// LoadTransitConfig reads how to reach Vault, for serve and for the
// operator commands alike. VAULT_CACERT is read here, strictly; the Vault
// library's own reading of its environment is not used (transit.New).
func LoadTransitConfig(l *config.Loader) transit.Config {
	return transit.Config{
		Addr:   l.String("VAULT_ADDR"),
		Token:  l.Secret("VAULT_TOKEN").Reveal(),
		Mount:  l.String("VAULT_TRANSIT_MOUNT", config.Default("transit")),
		CAFile: l.String("VAULT_CACERT", config.Optional()),
	}
}

// LoadConfig reads the environment through l; call l.Err() afterwards.
func LoadConfig(l *config.Loader) Config {
	l.Ignore("VAULT_PROXY_CA_FILE", "VAULT_PROXY_INTERNAL_URL") // core-api's, about vault-proxy
	l.Refuse(MigrateDatabaseURL, "is the owner role's database URL, for `vault-proxy migrate` only: "+
		"the service serves as the runtime role (VAULT_PROXY_DATABASE_URL), which cannot rewrite the audit trail")
	return Config{
		Environment:            l.Environment("ENVIRONMENT"),
		DatabaseURL:            l.Secret("VAULT_PROXY_DATABASE_URL").Reveal(),
		Vault:                  LoadTransitConfig(l),
		PublicAddr:             l.String("VAULT_PROXY_PUBLIC_ADDR", config.Default(":8443")),
		InternalAddr:           l.String("VAULT_PROXY_INTERNAL_ADDR", config.Default(":9443")),
		AdminAddr:              l.String("VAULT_PROXY_ADMIN_ADDR", config.Default("127.0.0.1:9090")),
		PublicCertFile:         l.String("VAULT_PROXY_PUBLIC_CERT_FILE"),
		PublicKeyFile:          l.String("VAULT_PROXY_PUBLIC_KEY_FILE"),
		InternalCertFile:       l.String("VAULT_PROXY_INTERNAL_CERT_FILE"),
		InternalKeyFile:        l.String("VAULT_PROXY_INTERNAL_KEY_FILE"),
		ClientCAFile:           l.String("VAULT_PROXY_CLIENT_CA_FILE"),
		InternalAllowedClients: strings.Split(l.String("VAULT_PROXY_INTERNAL_ALLOWED_CLIENTS", config.Default(certs.CoreAPIName)), ","),
		CoreAPIURL:             strings.TrimRight(l.String("CORE_API_URL", config.Default("http://127.0.0.1:8080")), "/"),
		AuthKeysFile:           l.String("AUTH_PUBLIC_KEYS_FILE"),
		AuthIssuer:             l.String("AUTH_ISSUER", config.Default("payorch")),
		DashboardKeysFile:      l.String("VAULT_PROXY_DASHBOARD_KEYS_FILE", config.Optional()),
		DashboardIssuer:        l.String("VAULT_PROXY_DASHBOARD_ISSUER", config.Default("payorch-dashboard")),
		DashboardOrigin:        strings.TrimRight(l.String("VAULT_PROXY_DASHBOARD_ORIGIN", config.Optional()), "/"),
		Destinations:           l.String("VAULT_PROXY_DESTINATIONS", config.Optional()),
		ExtraCAFile:            l.String("VAULT_FORWARD_EXTRA_CA_FILE", config.Optional()),
		ForwardAllowLoopback:   l.Bool("VAULT_FORWARD_ALLOW_LOOPBACK", config.Default("false")),
		AuditSpoolDir:          l.String("VAULT_PROXY_AUDIT_SPOOL_DIR"),
		CursorKey:              l.Secret("VAULT_PROXY_CURSOR_KEY", config.Optional()),
		RateLimit:              ratelimit.LoadPolicy(l, "VAULT_PROXY_RATE_LIMIT"),
		ReconcileMinAge: l.Duration("VAULT_PROXY_RECONCILE_MIN_AGE", time.Second, 365*24*time.Hour,
			config.Default(DefaultReconcileMinAge.String())),
	}
}

// Validate checks what the loader cannot: relations between values. It fails
// closed; there is no fallback for a missing key, certificate or CA.
func (c Config) Validate() error {
	var errs []error
	if !c.Environment.Valid() {
		errs = append(errs, errors.New("ENVIRONMENT must be development, sandbox or production"))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("VAULT_PROXY_DATABASE_URL is required"))
	}
	if c.Vault.Addr == "" || c.Vault.Token == "" {
		errs = append(errs, errors.New("VAULT_ADDR and VAULT_TOKEN are required"))
	}
	for name, v := range map[string]string{
		"VAULT_PROXY_PUBLIC_CERT_FILE": c.PublicCertFile, "VAULT_PROXY_PUBLIC_KEY_FILE": c.PublicKeyFile,
		"VAULT_PROXY_INTERNAL_CERT_FILE": c.InternalCertFile, "VAULT_PROXY_INTERNAL_KEY_FILE": c.InternalKeyFile,
		"VAULT_PROXY_CLIENT_CA_FILE": c.ClientCAFile, "VAULT_PROXY_AUDIT_SPOOL_DIR": c.AuditSpoolDir,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	if len(c.InternalAllowedClients) == 0 || c.InternalAllowedClients[0] == "" {
		errs = append(errs, errors.New("VAULT_PROXY_INTERNAL_ALLOWED_CLIENTS must name at least one client"))
	}
	if c.AuthKeysFile == "" || c.AuthIssuer == "" {
		errs = append(errs, errors.New("AUTH_PUBLIC_KEYS_FILE and AUTH_ISSUER are required"))
	}
	if err := pagination.CheckKey("VAULT_PROXY_CURSOR_KEY", c.CursorKey, c.Environment == config.Production); err != nil {
		errs = append(errs, err)
	}
	if !config.LoopbackAddr(c.AdminAddr) {
		errs = append(errs, errors.New("VAULT_PROXY_ADMIN_ADDR must be a loopback address"))
	}
	if c.Environment == config.Production && c.ForwardAllowLoopback {
		errs = append(errs, errors.New("VAULT_FORWARD_ALLOW_LOOPBACK must not be true in production"))
	}
	if c.ReconcileMinAge < 0 || c.Environment == config.Production && c.reconcileMinAge() < MinProductionReconcileMinAge {
		errs = append(errs, fmt.Errorf("VAULT_PROXY_RECONCILE_MIN_AGE must be at least %s in production", MinProductionReconcileMinAge))
	}
	if c.Environment == config.Production && !strings.HasPrefix(c.CoreAPIURL, "https://") {
		errs = append(errs, errors.New("CORE_API_URL must be https in production"))
	}
	// Vault's answers carry data keys in the clear.
	if c.Environment == config.Production && !strings.HasPrefix(c.Vault.Addr, "https://") {
		errs = append(errs, errors.New("VAULT_ADDR must be https in production"))
	}
	if d, err := processordest.Parse(c.Destinations, nil); err != nil {
		errs = append(errs, fmt.Errorf("VAULT_PROXY_DESTINATIONS: %w", err))
	} else if c.Environment == config.Production {
		// Detokenized calls carry card numbers: to processors, over TLS,
		// never to a simulator on this host.
		for name, u := range d.Bases() {
			if u.Scheme != "https" || thisHost(u.Hostname()) {
				errs = append(errs, fmt.Errorf("VAULT_PROXY_DESTINATIONS: %s must be an https URL of a host other than loopback in production", name))
			}
		}
	}
	return errors.Join(errs...)
}

// thisHost reports whether a destination host names this machine:
// localhost and its subdomains (RFC 6761), a loopback address, or the
// unspecified address (which a dial takes for this host).
func thisHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}
