package app

import (
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/config"
)

// validEnv is a complete production configuration; tests change one thing.
var validEnv = map[string]string{
	"ENVIRONMENT":               "production",
	"CORE_API_DATABASE_URL":     "postgres://c@127.0.0.1/c",
	"VAULT_PROXY_INTERNAL_URL":  "https://vault-proxy.internal:9443",
	"VAULT_PROXY_CA_FILE":       "ca.pem",
	"CORE_API_CLIENT_CERT_FILE": "c.pem",
	"CORE_API_CLIENT_KEY_FILE":  "c-key.pem",
	"AUTH_PUBLIC_KEYS_FILE":     "keys.pem",
	"CORE_API_CURSOR_KEY":       strings.Repeat("k", 32),
	"CORE_API_COMPLETION_KEY":   strings.Repeat("k", 32),
	"CORE_API_VAULT_ADDR":       "https://vault.internal:8200",
	"CORE_API_VAULT_TOKEN":      "hvs.core-api-token",
}

// load reads validEnv with over applied ("<unset>" removes a variable) as
// service.Serve does: unknown variables under EnvPrefixes refused, then
// Validate.
func load(over map[string]string) error {
	_, err := loadConfig(over)
	return err
}

// loadConfig is load, with the configuration read.
func loadConfig(over map[string]string) (Config, error) {
	var environ []string
	for k, v := range validEnv {
		if o, ok := over[k]; ok {
			if o == "<unset>" {
				continue
			}
			v = o
		}
		environ = append(environ, k+"="+v)
	}
	for k, v := range over {
		if _, ok := validEnv[k]; !ok {
			environ = append(environ, k+"="+v)
		}
	}
	l := config.NewLoader(config.EnvironLookup(environ))
	c := LoadConfig(l)
	l.RejectUnknown(environ, EnvPrefixes...)
	if err := l.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// The vault reconciliation runs hourly with a day's grace and a hundred
// shreds at most by default; production takes no grace under an hour; an
// interval of 0s turns the periodic run off. Built in code (tests), zero
// is off for the interval and the default for the others.
func TestVaultReconcileSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		over     map[string]string
		interval time.Duration
		grace    time.Duration
		max      int
		err      string
	}{
		{"defaults", nil, time.Hour, 24 * time.Hour, 100, ""},
		{"set", map[string]string{"CORE_API_VAULT_RECONCILE_INTERVAL": "15m", "CORE_API_VAULT_RECONCILE_GRACE": "48h",
			"CORE_API_VAULT_RECONCILE_MAX_SHREDS": "1000"}, 15 * time.Minute, 48 * time.Hour, 1000, ""},
		{"off", map[string]string{"CORE_API_VAULT_RECONCILE_INTERVAL": "0s"}, 0, 24 * time.Hour, 100, ""},
		{"a short grace in sandbox", map[string]string{"ENVIRONMENT": "sandbox", "CORE_API_VAULT_RECONCILE_GRACE": "1s"}, time.Hour, time.Second, 100, ""},
		{"a short grace in production", map[string]string{"CORE_API_VAULT_RECONCILE_GRACE": "30m"}, 0, 0, 0, "CORE_API_VAULT_RECONCILE_GRACE must be at least 1h0m0s in production"},
		{"a grace without a unit", map[string]string{"CORE_API_VAULT_RECONCILE_GRACE": "24"}, 0, 0, 0, "CORE_API_VAULT_RECONCILE_GRACE"},
		{"an interval over a day", map[string]string{"CORE_API_VAULT_RECONCILE_INTERVAL": "25h"}, 0, 0, 0, "CORE_API_VAULT_RECONCILE_INTERVAL"},
		{"no shreds at all", map[string]string{"CORE_API_VAULT_RECONCILE_MAX_SHREDS": "0"}, 0, 0, 0, "CORE_API_VAULT_RECONCILE_MAX_SHREDS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(tc.over)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || c.VaultReconcileInterval != tc.interval || c.vaultReconcileGrace() != tc.grace || c.vaultReconcileMaxShreds() != tc.max {
				t.Fatalf("= %s, %s, %d (%v)", c.VaultReconcileInterval, c.vaultReconcileGrace(), c.vaultReconcileMaxShreds(), err)
			}
		})
	}
	var zero Config
	if zero.VaultReconcileInterval != 0 || zero.vaultReconcileGrace() != DefaultVaultReconcileGrace || zero.vaultReconcileMaxShreds() != DefaultVaultReconcileMaxShreds {
		t.Fatal("a configuration built in code does not take the defaults")
	}
}

func TestConfigFailsClosed(t *testing.T) {
	if err := load(nil); err != nil {
		t.Fatalf("a complete production config is refused: %v", err)
	}
	if err := load(map[string]string{"ENVIRONMENT": "sandbox", "CORE_API_CURSOR_KEY": "<unset>"}); err != nil {
		t.Fatalf("sandbox without a cursor key (a random one is made): %v", err)
	}
	for _, tc := range []struct {
		name string
		over map[string]string
		want string
	}{
		{"no cursor key in production: cursors would fail across instances", map[string]string{"CORE_API_CURSOR_KEY": "<unset>"}, "CORE_API_CURSOR_KEY"},
		{"a short cursor key", map[string]string{"CORE_API_CURSOR_KEY": "short"}, "at least 32 bytes"},
		{"no completion key in production: completion URLs would fail across instances", map[string]string{"CORE_API_COMPLETION_KEY": "<unset>"}, "CORE_API_COMPLETION_KEY"},
		{"the sandbox wallet in production", map[string]string{"CORE_API_MOCK_DIRECT_URL": "http://127.0.0.1:9720"}, "CORE_API_MOCK_DIRECT_URL"},
		{"the sandbox redirect processor in production", map[string]string{"CORE_API_MOCK_REDIRECT_URL": "http://127.0.0.1:9730"}, "CORE_API_MOCK_REDIRECT_URL"},
		{"the sandbox anti-fraud provider in production", map[string]string{"CORE_API_MOCK_ANTIFRAUD_URL": "http://127.0.0.1:9740"}, "CORE_API_MOCK_ANTIFRAUD_URL"},
		{"plain HTTP to vault-proxy", map[string]string{"VAULT_PROXY_INTERNAL_URL": "http://vault-proxy:9443"}, "VAULT_PROXY_INTERNAL_URL"},
		{"no client certificate", map[string]string{"CORE_API_CLIENT_CERT_FILE": "<unset>"}, "CORE_API_CLIENT_CERT_FILE"},
		{"a misspelt variable", map[string]string{"CORE_API_CURSOR_KEY_FLE": "/k"}, "CORE_API_CURSOR_KEY_FLE"},
		{"a request timeout vault-proxy would not wait for", map[string]string{"CORE_API_REQUEST_TIMEOUT": "60s"}, "CORE_API_REQUEST_TIMEOUT"},
		{"a request timeout without a unit", map[string]string{"CORE_API_REQUEST_TIMEOUT": "50"}, "CORE_API_REQUEST_TIMEOUT"},
		{"no Vault: credentials could not be encrypted", map[string]string{"CORE_API_VAULT_ADDR": "<unset>"}, "CORE_API_VAULT_ADDR"},
		{"no Vault token", map[string]string{"CORE_API_VAULT_TOKEN": "<unset>"}, "CORE_API_VAULT_TOKEN"},
		{"plain HTTP to Vault in production", map[string]string{"CORE_API_VAULT_ADDR": "http://vault:8200"}, "CORE_API_VAULT_ADDR must be https"},
		{"the owner's database URL: the service could change the schema", map[string]string{"CORE_API_MIGRATE_DATABASE_URL_FILE": "/run/owner-url"}, "CORE_API_MIGRATE_DATABASE_URL: is the owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := load(tc.over)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), strings.Repeat("k", 32)) {
				t.Fatal("the error echoes the cursor key")
			}
		})
	}
}

// WEBHOOK_ALLOW_LOOPBACK is for local tests: refused in production; the
// admin listener stays on loopback; the webhook settings have defaults.
func TestWebhookAndAdminConfig(t *testing.T) {
	cases := []struct {
		name string
		over map[string]string
		want string // "" when valid
	}{
		{"defaults", nil, ""},
		{"loopback in production", map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "true"}, "WEBHOOK_ALLOW_LOOPBACK must not be true in production"},
		{"loopback in sandbox", map[string]string{"ENVIRONMENT": "sandbox", "WEBHOOK_ALLOW_LOOPBACK": "true"}, ""},
		{"admin off loopback", map[string]string{"CORE_API_ADMIN_ADDR": "0.0.0.0:9091"}, "CORE_API_ADMIN_ADDR must be a loopback address"},
		{"timeout too long", map[string]string{"CORE_API_WEBHOOK_TIMEOUT": "2m"}, "CORE_API_WEBHOOK_TIMEOUT"},
		{"concurrency zero", map[string]string{"CORE_API_WEBHOOK_CONCURRENCY": "0"}, "CORE_API_WEBHOOK_CONCURRENCY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := load(c.over)
			if c.want == "" {
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load = %v, want an error naming %s", err, c.want)
			}
		})
	}
	cfg, err := loadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Webhooks
	if w.AllowLoopback || w.Timeout != 5*time.Second || w.PerEndpoint != 8 || w.Poll != 200*time.Millisecond || cfg.AdminAddr != "127.0.0.1:9091" {
		t.Fatalf("defaults %+v, admin %q", w, cfg.AdminAddr)
	}
}
