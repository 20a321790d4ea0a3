package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/secret"
)

// Config is everything core-api reads at start.
type Config struct {
	Environment config.Environment
	DatabaseURL string
	Addr        string

	// The mTLS link to vault-proxy's internal listener.
	VaultProxyURL    string
	VaultProxyCAFile string
	ClientCertFile   string
	ClientKeyFile    string

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
		VaultProxyURL:    strings.TrimRight(l.String("VAULT_PROXY_INTERNAL_URL", config.Default("https://127.0.0.1:9443")), "/"),
		VaultProxyCAFile: l.String("VAULT_PROXY_CA_FILE"),
		ClientCertFile:   l.String("CORE_API_CLIENT_CERT_FILE"),
		ClientKeyFile:    l.String("CORE_API_CLIENT_KEY_FILE"),
		AuthKeysFile:     l.String("AUTH_PUBLIC_KEYS_FILE"),
		AuthIssuer:       l.String("AUTH_ISSUER", config.Default("payorch")),
		CursorKey:        l.Secret("CORE_API_CURSOR_KEY", config.Optional()), // or CORE_API_CURSOR_KEY_FILE
		RequestTimeout: l.Duration("CORE_API_REQUEST_TIMEOUT", time.Second, httpapi.MaxRequestTimeout,
			config.Default(httpapi.DefaultRequestTimeout.String())),
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
	if c.AuthKeysFile == "" || c.AuthIssuer == "" {
		errs = append(errs, errors.New("AUTH_PUBLIC_KEYS_FILE and AUTH_ISSUER are required"))
	}
	if err := pagination.CheckKey("CORE_API_CURSOR_KEY", c.CursorKey, c.Environment == config.Production); err != nil {
		errs = append(errs, err)
	}
	if c.RequestTimeout < 0 || c.RequestTimeout > httpapi.MaxRequestTimeout {
		errs = append(errs, fmt.Errorf("CORE_API_REQUEST_TIMEOUT must be at most %s: vault-proxy stops waiting for core-api at 60s", httpapi.MaxRequestTimeout))
	}
	return errors.Join(errs...)
}
