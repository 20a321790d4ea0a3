package app

import (
	"strings"
	"testing"

	"github.com/payorch/shared/config"
)

// VAULT_FORWARD_ALLOW_LOOPBACK is honoured in development and sandbox, and
// stops a production instance from starting.
func TestForwardAllowLoopbackOnlyOutsideProduction(t *testing.T) {
	base := map[string]string{
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
	}
	load := func(env, loopback string) (Config, error) {
		m := map[string]string{"ENVIRONMENT": env}
		for k, v := range base {
			m[k] = v
		}
		if loopback != "" {
			m["VAULT_FORWARD_ALLOW_LOOPBACK"] = loopback
		}
		l := config.NewLoader(config.MapLookup(m))
		c := LoadConfig(l)
		if err := l.Err(); err != nil {
			return c, err
		}
		return c, c.Validate()
	}
	for _, tc := range []struct {
		env, loopback string
		want          bool
		err           string
	}{
		{"production", "", false, ""},
		{"production", "false", false, ""},
		{"production", "true", true, "VAULT_FORWARD_ALLOW_LOOPBACK must not be true in production"},
		{"sandbox", "true", true, ""},
		{"development", "1", true, ""},
		{"sandbox", "", false, ""},
		{"sandbox", "yes", false, "VAULT_FORWARD_ALLOW_LOOPBACK"},
	} {
		c, err := load(tc.env, tc.loopback)
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
