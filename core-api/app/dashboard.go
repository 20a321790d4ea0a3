package app

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/dashboard/web"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/config"
)

// DashboardConfig is the merchant dashboard's sign-in.
type DashboardConfig struct {
	// KeyDir (CORE_API_DASHBOARD_KEY_DIR) holds the key that signs the
	// dashboard's bearer tokens, laid out as `core-api token`'s key
	// directory (signing-key.pem, public-keys.pem); created on first
	// use. Every instance must share it. Empty: no dashboard.
	KeyDir string
	// Issuer (CORE_API_DASHBOARD_ISSUER, default payorch-dashboard) is the
	// iss of those tokens, distinct from the API keys' issuer.
	Issuer string
	// Origin (CORE_API_DASHBOARD_ORIGIN, default the origin of
	// CORE_API_PUBLIC_URL) is where the dashboard is served from; a
	// state-changing request from any other origin is refused.
	Origin string
	// IdleTimeout (CORE_API_DASHBOARD_IDLE_TIMEOUT, default 30m, 5m to
	// 12h) ends a session unused for that long.
	IdleTimeout time.Duration
}

func loadDashboardConfig(l *config.Loader) DashboardConfig {
	return DashboardConfig{
		KeyDir: l.String("CORE_API_DASHBOARD_KEY_DIR", config.Optional()),
		Issuer: l.String("CORE_API_DASHBOARD_ISSUER", config.Default("payorch-dashboard")),
		Origin: strings.TrimRight(l.String("CORE_API_DASHBOARD_ORIGIN", config.Optional()), "/"),
		IdleTimeout: l.Duration("CORE_API_DASHBOARD_IDLE_TIMEOUT", 5*time.Minute, dashboard.DefaultSessionLifetime,
			config.Default(dashboard.DefaultIdleTimeout.String())),
	}
}

// signInLimit bounds sign-in attempts per client address and minute, on
// top of each user's lockout: it slows a guesser spreading over users.
const signInLimit = 20

// dashboardDeps loads the dashboard's signing key and registers its public
// keys in keys under the dashboard's issuer, so the tokens it mints pass
// the same verifier as the API keys' tokens.
func (m *Main) dashboardDeps(keys *auth.KeySet) (httpapi.DashboardDeps, error) {
	c := m.Config.Dashboard
	if c.KeyDir == "" {
		return httpapi.DashboardDeps{}, nil
	}
	if c.Issuer == m.Config.AuthIssuer {
		return httpapi.DashboardDeps{}, errors.New("CORE_API_DASHBOARD_ISSUER must differ from AUTH_ISSUER: dashboard tokens have their own key")
	}
	priv, err := auth.LoadSigningKeyDir(c.KeyDir)
	if err != nil {
		return httpapi.DashboardDeps{}, err
	}
	if _, err := keys.AddFile(filepath.Join(c.KeyDir, auth.PublicKeysFile), c.Issuer); err != nil {
		return httpapi.DashboardDeps{}, err
	}
	origin := c.Origin
	if origin == "" {
		u, err := url.Parse(m.Config.PublicURL)
		if err != nil {
			return httpapi.DashboardDeps{}, err
		}
		origin = u.Scheme + "://" + u.Host
	}
	svc := &dashboard.Service{Store: m.DB, SigningKey: priv, Issuer: c.Issuer, Log: m.Log,
		Config: dashboard.Config{IdleTimeout: c.IdleTimeout}}
	return httpapi.DashboardDeps{Service: svc, Origin: origin,
		Limiter: &httpapi.RateLimiter{Limit: signInLimit, Window: time.Minute},
		Web:     web.Site{VaultProxyURL: m.Config.PublicURL, Environment: string(m.Config.Environment)}}, nil
}

// NewDashboardService is the dashboard's users service on db, for
// `core-api user add` (which mints no token, so needs no key).
func NewDashboardService(db *postgres.DB) *dashboard.Service {
	return &dashboard.Service{Store: db}
}
