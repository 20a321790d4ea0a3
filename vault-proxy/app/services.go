package app

import (
	"context"
	"crypto/x509"
	"io/fs"

	"github.com/payorch/certs"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/processordest"
	"github.com/payorch/vault-proxy/securefields"
	"github.com/payorch/vault-proxy/vaulting"
)

// services builds the services on the vault database, the audit spool and
// Vault, and the token services of the environment.
func (m *Main) services(fingerprintKey []byte) {
	m.Sealer = envelope.New(m.Vault, m.DB, envelope.Config{TransitKey: transit.CardKey})
	m.Cards = vaulting.New(m.DB, m.Audit, m.Sealer, fingerprintKey, vaulting.NewSecurityCodes(m.Config.SecurityCodeTTL), nil)
	m.NetworkTokens = &networktoken.Service{Store: m.DB, Audits: m.Audit, Sealer: m.Sealer,
		Providers: tokenServicesOf(m.Config.Environment), Vaulting: m.Cards, Log: m.Log}
	m.Forwards = &forward.Engine{Vaulting: m.Cards, NetworkTokens: m.NetworkTokens}
	m.ForwardConfigs = &forwardconfig.Service{Store: m.DB, Sealer: m.Sealer}
}

// tokenServicesOf registers the network token services of env: the
// sandbox token service simulator serves visa, mastercard, amex and
// discover outside production. Production has no TSP connector registered
// yet: provisioning fails there (422, or "" for the _OR_EMPTY_STRING
// placeholders).
func tokenServicesOf(env config.Environment) *networktoken.Registry {
	r := &networktoken.Registry{}
	if env != config.Production {
		r.Register(&networktoken.Sandbox{}, networktoken.SandboxSchemes...)
	}
	return r
}

// handlers builds what the listeners' routes call (httpapi.PublicRoutes,
// InternalRoutes, AdminRoutes take the public handlers' Checks), and the
// outbound client /vault-forward sends with.
func (m *Main) handlers(verifier *auth.Verifier) (httpapi.PublicHandlers, httpapi.InternalHandlers, error) {
	var public httpapi.PublicHandlers
	var internal httpapi.InternalHandlers
	authn := &httpapi.Authenticator{Verifier: verifier}
	core, err := httpapi.NewCore(m.Config.CoreAPIURL)
	if err != nil {
		return public, internal, err
	}
	// The extra CAs, read once: a pool of their own for the forward client
	// (which tries the system roots first), and added to the system roots
	// for the detokenize destinations.
	var extraCAs *x509.CertPool
	var extraCerts []*x509.Certificate
	if m.Config.ExtraCAFile != "" {
		if extraCerts, err = certs.LoadCerts(m.Config.ExtraCAFile); err != nil {
			return public, internal, err
		}
		extraCAs = x509.NewCertPool()
		for _, c := range extraCerts {
			extraCAs.AddCert(c)
		}
	}
	dests, err := processordest.Parse(m.Config.Destinations, extraCerts)
	if err != nil {
		return public, internal, err
	}
	prod := m.Config.Environment == config.Production
	cursors, random, err := pagination.OpenCodec("vault-proxy", m.Config.CursorKey)
	if err != nil {
		return public, internal, err
	}
	if random {
		m.Log.Warn("VAULT_PROXY_CURSOR_KEY is not set: list cursors use a random key and do not survive a restart")
	}
	if m.Outbound, err = outbound.New(forwardPolicy(m.Config, extraCAs)); err != nil {
		return public, internal, err
	}
	if m.Config.ForwardAllowLoopback && !prod {
		m.Log.Warn("vault forward may reach loopback hosts listed in forwarding configs (VAULT_FORWARD_ALLOW_LOOPBACK=true); never use this outside development and tests")
	}
	m.Detokenize = &httpapi.Detokenize{Engine: m.Forwards, Destinations: dests, Log: m.Log}

	checks := []httpapi.Check{
		{Name: "postgres", Check: m.DB.Ping},
		{Name: "vault", Check: m.Vault.Health},
		{Name: "audit-spool", Check: func(context.Context) error { return m.Audit.Writable() }},
	}
	cards := &httpapi.Cards{Vaulting: m.Cards, NetworkTokens: m.NetworkTokens, Auth: authn, Core: core, KeyLocks: m.DB, Checkout: m.DB, Log: m.Log}
	dist, err := fs.Sub(securefields.Dist, "dist")
	if err != nil {
		return public, internal, err
	}
	public = httpapi.PublicHandlers{
		Checks: checks,
		Cards:  cards,
		Audit:  &httpapi.Audit{Store: m.DB, Spool: m.Audit, Auth: authn, Cursors: cursors},
		Forward: &httpapi.Forward{Engine: m.Forwards, Configs: m.ForwardConfigs, Client: m.Outbound, Auth: authn,
			RequireListedHost: prod, Log: m.Log},
		ForwardConfigs: &httpapi.ForwardConfigs{Service: m.ForwardConfigs, Auth: authn, Cursors: cursors},
		NetworkTokens:  &httpapi.NetworkTokens{Service: m.NetworkTokens, Auth: authn},
		ThreeDSScenarios: &httpapi.ThreeDSScenarios{Vaulting: m.Cards, Auth: authn, Core: core, Log: m.Log,
			Enabled: !prod},
		Checkout:     &httpapi.Checkout{Store: m.DB, Cards: cards, Auth: authn},
		SecureFields: &httpapi.SecureFields{Files: dist, Store: m.DB},
		Core:         core,
	}
	internal = httpapi.InternalHandlers{
		Checks:           checks,
		Cards:            cards,
		Detokenize:       m.Detokenize,
		MerchantAccounts: &httpapi.MerchantAccounts{Store: m.DB},
		Reconciliation:   &httpapi.Reconciliation{Store: m.DB, Cards: cards, MinAge: m.Config.reconcileMinAge()},
	}
	return public, internal, nil
}

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
