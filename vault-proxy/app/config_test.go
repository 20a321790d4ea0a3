package app

import (
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/vault-proxy/outbound"
)

// validEnv is a complete production configuration; tests change one thing.
var validEnv = map[string]string{
	"ENVIRONMENT":                    "production",
	"VAULT_PROXY_DATABASE_URL":       "postgres://v@127.0.0.1/v",
	"VAULT_ADDR":                     "https://vault.internal:8200",
	"VAULT_TOKEN":                    "s.secret-token-value",
	"VAULT_PROXY_PUBLIC_CERT_FILE":   "p.pem",
	"VAULT_PROXY_PUBLIC_KEY_FILE":    "p-key.pem",
	"VAULT_PROXY_INTERNAL_CERT_FILE": "i.pem",
	"VAULT_PROXY_INTERNAL_KEY_FILE":  "i-key.pem",
	"VAULT_PROXY_CLIENT_CA_FILE":     "ca.pem",
	"AUTH_PUBLIC_KEYS_FILE":          "keys.pem",
	"CORE_API_URL":                   "https://core.internal:8080",
	"VAULT_PROXY_AUDIT_SPOOL_DIR":    "/var/lib/vault-proxy/audit-spool",
	"VAULT_PROXY_CURSOR_KEY":         strings.Repeat("c", 32),
}

// loadWith loads validEnv with over applied ("<unset>" removes a variable)
// and validates it as the service does at start.
func loadWith(over map[string]string) (Config, error) {
	m := map[string]string{}
	for k, v := range validEnv {
		m[k] = v
	}
	for k, v := range over {
		if v == "<unset>" {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	l := config.NewLoader(config.MapLookup(m))
	c := LoadConfig(l)
	if err := l.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func TestConfigFailsClosed(t *testing.T) {
	if _, err := loadWith(nil); err != nil {
		t.Fatalf("a complete production config is refused: %v", err)
	}
	cases := []struct {
		name string
		over map[string]string
		want string
	}{
		{"no environment", map[string]string{"ENVIRONMENT": "<unset>"}, "ENVIRONMENT"},
		{"unknown environment", map[string]string{"ENVIRONMENT": "prod"}, "ENVIRONMENT"},
		{"no vault token", map[string]string{"VAULT_TOKEN": "<unset>"}, "VAULT_TOKEN"},
		{"no client CA: the internal listener would be open", map[string]string{"VAULT_PROXY_CLIENT_CA_FILE": "<unset>"}, "VAULT_PROXY_CLIENT_CA_FILE"},
		{"admin listener off loopback", map[string]string{"VAULT_PROXY_ADMIN_ADDR": "0.0.0.0:9090"}, "VAULT_PROXY_ADMIN_ADDR"},
		{"plain HTTP to core-api in production", map[string]string{"CORE_API_URL": "http://core:8080"}, "CORE_API_URL"},
		{"plain HTTP to Vault in production: data keys in the clear", map[string]string{"VAULT_ADDR": "http://vault.internal:8200"}, "VAULT_ADDR must be https"},
		{"a detokenize destination over plain HTTP in production", map[string]string{"VAULT_PROXY_DESTINATIONS": "acquirer=http://acquirer.example"}, "acquirer must be an https URL"},
		{"a detokenize destination on loopback in production", map[string]string{"VAULT_PROXY_DESTINATIONS": "ok=https://acquirer.example,mock=https://127.0.0.1:9999"}, "mock must be an https URL"},
		{"a detokenize destination at localhost in production", map[string]string{"VAULT_PROXY_DESTINATIONS": "mock=https://LOCALHOST./x"}, "mock must be an https URL"},
		{"a detokenize destination under .localhost in production", map[string]string{"VAULT_PROXY_DESTINATIONS": "mock=https://sim.localhost"}, "mock must be an https URL"},
		{"a detokenize destination at 0.0.0.0 in production", map[string]string{"VAULT_PROXY_DESTINATIONS": "mock=https://0.0.0.0:9999"}, "mock must be an https URL"},
		{"a detokenize destination at [::1] in production", map[string]string{"VAULT_PROXY_DESTINATIONS": "mock=https://[::1]:9999"}, "mock must be an https URL"},
		{"a malformed destination list", map[string]string{"VAULT_PROXY_DESTINATIONS": "acquirer"}, "VAULT_PROXY_DESTINATIONS"},
		{"no auth keys", map[string]string{"AUTH_PUBLIC_KEYS_FILE": "<unset>"}, "AUTH_PUBLIC_KEYS_FILE"},
		{"no cursor key in production: cursors would fail across instances", map[string]string{"VAULT_PROXY_CURSOR_KEY": "<unset>"}, "VAULT_PROXY_CURSOR_KEY"},
		{"a short cursor key", map[string]string{"VAULT_PROXY_CURSOR_KEY": "short"}, "at least 32 bytes"},
		{"no audit spool: reveals could not be recorded", map[string]string{"VAULT_PROXY_AUDIT_SPOOL_DIR": "<unset>"}, "VAULT_PROXY_AUDIT_SPOOL_DIR"},
		{"the owner's database URL: the service could rewrite the audit trail", map[string]string{"VAULT_PROXY_MIGRATE_DATABASE_URL": "postgres://o@127.0.0.1/v"}, "VAULT_PROXY_MIGRATE_DATABASE_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadWith(tc.over)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s.secret-token-value") {
				t.Fatal("the error echoes the Vault token")
			}
		})
	}
}

// VAULT_FORWARD_ALLOW_LOOPBACK is honoured in development and sandbox, and
// stops a production instance from starting.
func TestForwardAllowLoopbackOnlyOutsideProduction(t *testing.T) {
	for _, tc := range []struct {
		env, loopback string
		want          bool
		err           string
	}{
		{"production", "<unset>", false, ""},
		{"production", "false", false, ""},
		{"production", "true", true, "VAULT_FORWARD_ALLOW_LOOPBACK must not be true in production"},
		{"sandbox", "true", true, ""},
		{"development", "1", true, ""},
		{"sandbox", "<unset>", false, ""},
		{"sandbox", "yes", false, "VAULT_FORWARD_ALLOW_LOOPBACK"},
	} {
		c, err := loadWith(map[string]string{"ENVIRONMENT": tc.env, "VAULT_FORWARD_ALLOW_LOOPBACK": tc.loopback})
		if tc.err == "" && err != nil {
			t.Errorf("%s loopback=%q: %v", tc.env, tc.loopback, err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s loopback=%q: err %v, want %q", tc.env, tc.loopback, err, tc.err)
		}
		if err == nil && c.ForwardAllowLoopback != tc.want {
			t.Errorf("%s loopback=%q: ForwardAllowLoopback=%v", tc.env, tc.loopback, c.ForwardAllowLoopback)
		}
	}
}

// The reconciliation's minimum age defaults to a day; production takes no
// less than an hour, whatever is set; tests shorten it outside production.
func TestReconcileMinAge(t *testing.T) {
	for _, tc := range []struct {
		env, minAge string
		want        time.Duration
		err         string
	}{
		{"production", "<unset>", 24 * time.Hour, ""},
		{"production", "72h", 72 * time.Hour, ""},
		{"production", "1h", time.Hour, ""},
		{"production", "59m", 0, "VAULT_PROXY_RECONCILE_MIN_AGE must be at least 1h0m0s in production"},
		{"sandbox", "1s", time.Second, ""},
		{"sandbox", "0s", 0, "VAULT_PROXY_RECONCILE_MIN_AGE"},
		{"sandbox", "24", 0, "VAULT_PROXY_RECONCILE_MIN_AGE"},
	} {
		t.Run(tc.env+" "+tc.minAge, func(t *testing.T) {
			c, err := loadWith(map[string]string{"ENVIRONMENT": tc.env, "VAULT_PROXY_RECONCILE_MIN_AGE": tc.minAge})
			if tc.err == "" && (err != nil || c.reconcileMinAge() != tc.want) {
				t.Fatalf("= %s, %v; want %s", c.reconcileMinAge(), err, tc.want)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
	// Built in code (the end-to-end stack), zero is the default.
	if got := (Config{}).reconcileMinAge(); got != DefaultReconcileMinAge {
		t.Fatalf("zero: %s", got)
	}
}

// A misspelt variable of vault-proxy's stops the start (service.Serve
// rejects what LoadConfig never read under EnvPrefixes); core-api's two
// VAULT_PROXY_ variables, which a shared environment may hold, do not.
func TestMisspeltVariablesAreRefused(t *testing.T) {
	check := func(extra ...string) error {
		environ := extra
		for k, v := range validEnv {
			environ = append(environ, k+"="+v)
		}
		l := config.NewLoader(config.EnvironLookup(environ))
		LoadConfig(l)
		l.RejectUnknown(environ, EnvPrefixes...)
		return l.Err()
	}
	if err := check("VAULT_PROXY_CA_FILE=/ca.pem", "VAULT_PROXY_INTERNAL_URL=https://vp:9443", "CORE_API_DATABASE_URL=postgres://c"); err != nil {
		t.Fatalf("core-api's variables in a shared environment: %v", err)
	}
	for _, bad := range []string{"VAULT_PROXY_INTERNAL_ALLOWED_CLIENT=core-api-v2", "VAULT_FORWARD_ALLOW_LOOPBAK=true"} {
		name, _, _ := strings.Cut(bad, "=")
		if err := check(bad); err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: err = %v", name, err)
		}
	}
}

// The forward policy each environment gets, on a real outbound client:
// production refuses a host no forwarding config lists and plain http,
// and never reaches loopback, even with the flag (which Validate also
// refuses); sandbox reaches a public host unlisted, and a listed loopback
// host only with the flag. CheckURL needs no DNS.
func TestForwardPolicyPerEnvironment(t *testing.T) {
	listed := outbound.CallOptions{AllowedHosts: []string{"api.processor.example", "127.0.0.1:9999"}}
	cases := []struct {
		env      config.Environment
		loopback bool
		url      string
		opts     outbound.CallOptions
		allowed  bool
	}{
		{config.Production, false, "https://api.unlisted.example/pay", outbound.CallOptions{}, false},
		{config.Production, false, "https://api.processor.example/pay", listed, true},
		{config.Production, false, "http://api.processor.example/pay", listed, false},
		{config.Production, true, "https://127.0.0.1:9999/pay", listed, false},
		{config.Sandbox, false, "https://api.unlisted.example/pay", outbound.CallOptions{}, true},
		{config.Sandbox, false, "http://api.unlisted.example/pay", outbound.CallOptions{}, true},
		{config.Sandbox, false, "https://127.0.0.1:9999/pay", listed, false},
		{config.Sandbox, true, "https://127.0.0.1:9999/pay", listed, true},
		{config.Sandbox, true, "https://127.0.0.1:9999/pay", outbound.CallOptions{}, false},
	}
	for _, tc := range cases {
		c, err := outbound.New(forwardPolicy(Config{Environment: tc.env, ForwardAllowLoopback: tc.loopback}, nil))
		if err != nil {
			t.Fatal(err)
		}
		err = c.CheckURL(tc.url, tc.opts)
		_ = c.Close()
		if (err == nil) != tc.allowed {
			t.Errorf("%s, loopback flag %t, %s (listed %v): err = %v, want allowed %t", tc.env, tc.loopback, tc.url, tc.opts.AllowedHosts, err, tc.allowed)
		}
	}
}
