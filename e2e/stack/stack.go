// Package stack starts the whole product for end-to-end tests: a fresh pair
// of databases on the real PostgreSQL (migrated as the owner roles, served
// as the runtime roles), a fresh transit mount on the real
// Vault used through a token holding exactly the shipped policy, a generated
// PKI, and the real Main of vault-proxy and core-api on loopback port 0,
// with the sandbox card processor mock-card and 3-D Secure server mock-3ds
// (outside production) as vault-proxy's destinations "mock-card" and
// "mock-3ds". Every log line of the three goes
// to a LogCatcher so tests can prove no card number was ever logged.
package stack

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/payorch/certs"
	coreapp "github.com/payorch/core-api/app"
	corepostgres "github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/sandbox/mockantifraud"
	"github.com/payorch/core-api/sandbox/mockdirect"
	"github.com/payorch/core-api/vaulttransit"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/shared/simulator"
	"github.com/payorch/shared/testsupport"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/tokenizer/transit/transittest"
	vpapp "github.com/payorch/vault-proxy/app"
	vpostgres "github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/sandbox/mock3ds"
	"github.com/payorch/vault-proxy/sandbox/mockcard"

	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/core-api/sandbox/mockredirect"
)

// Stack is one running product.
type Stack struct {
	VaultProxy *vpapp.Main
	CoreAPI    *coreapp.Main
	// MockCard is the sandbox card processor, vault-proxy's destination
	// MockCardDestination; nil in production, where it never runs.
	MockCard *mockcard.Main
	// MockThreeDS is the sandbox 3-D Secure server, vault-proxy's
	// destination MockThreeDSDestination; nil in production.
	MockThreeDS *mock3ds.Main
	// MockBank is the sandbox bank, core-api's CORE_API_MOCK_BANK_URL,
	// which sends its notifications to core-api; nil in production.
	MockBank *mockbank.Main
	// MockDirect is the sandbox direct-integration (PayPal-like) wallet,
	// core-api's mock-direct connector's processor; nil in production.
	MockDirect *mockdirect.Main
	// MockRedirect is the sandbox redirect-payment processor, core-api's
	// CORE_API_MOCK_REDIRECT_URL, which sends its notifications to
	// core-api; nil in production.
	MockRedirect *mockredirect.Main
	// MockAntiFraud is the sandbox anti-fraud provider, core-api's
	// mock-antifraud connector's; nil in production.
	MockAntiFraud *mockantifraud.Main
	DBs           *testsupport.Databases
	Transit       *transittest.Env
	PKI           certs.DevFiles
	Logs          *logging.LogCatcher

	PublicURL   string // vault-proxy public, https
	InternalURL string // vault-proxy internal, https + client cert
	AdminURL    string // vault-proxy admin, http on loopback
	CoreURL     string // core-api, http

	PublicClient   *http.Client // trusts the dev CA
	InternalClient *http.Client // presents core-api's client certificate

	authDir string
}

// Token mints a bearer token with scopes from the stack's API key, for
// every merchant account (merchant_account_ids ["*"]): tests move between
// accounts with the header. TokenFor mints narrower ones.
func (s *Stack) Token(t testing.TB, scopes ...string) string {
	t.Helper()
	tok, err := auth.IssueDevToken(s.authDir, Issuer, scopes, time.Hour, time.Now(), []string{auth.AllMerchantAccounts})
	if err != nil {
		t.Fatalf("stack: token: %v", err)
	}
	return tok
}

// Issuer is the API key issuer the stack registers.
const Issuer = "payorch-test"

// MockCardDestination names the stack's mock-card in detokenized calls.
const MockCardDestination = "mock-card"

// MockThreeDSDestination names the stack's mock-3ds in detokenized calls.
const MockThreeDSDestination = "mock-3ds"

// WithDestinations sets vault-proxy's detokenize destinations
// ("name=https://127.0.0.1:port,...") and a CA it trusts for them;
// mock-card and mock-3ds are added to them unless they name them.
func WithDestinations(spec, caFile string) Option {
	return func(v *vpapp.Config, _ *coreapp.Config) { v.Destinations, v.ExtraCAFile = spec, caFile }
}

// Option adjusts the configuration before the services start.
type Option func(*vpapp.Config, *coreapp.Config)

// WithEnvironment sets both services' environment (default sandbox).
func WithEnvironment(e config.Environment) Option {
	return func(v *vpapp.Config, c *coreapp.Config) { v.Environment, c.Environment = e, e }
}

// Start brings the product up and registers its shutdown with t.Cleanup.
func Start(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	s := &Stack{Logs: &logging.LogCatcher{}}
	s.DBs = testsupport.NewTestDatabases(t)
	// The deploy step, as the owner roles; the services then run as the
	// runtime roles, with the grants the migrations gave them.
	if err := vpostgres.Migrate(ctx, s.DBs.VaultOwnerDSN); err != nil {
		t.Fatalf("stack: %v", err)
	}
	if err := corepostgres.Migrate(ctx, s.DBs.CoreOwnerDSN); err != nil {
		t.Fatalf("stack: %v", err)
	}
	s.Transit = transittest.New(t)
	coreVault := coreVaultConfig(ctx, t, s.Transit)

	dir := t.TempDir()
	if err := certs.WriteDevPKI(dir, time.Now()); err != nil {
		t.Fatalf("stack: dev PKI: %v", err)
	}
	s.PKI = certs.DevPKIFiles(dir)
	s.authDir = filepath.Join(dir, "auth")
	if _, err := auth.IssueDevToken(s.authDir, Issuer, []string{"*.read"}, time.Minute, time.Now(), nil); err != nil {
		t.Fatalf("stack: auth keys: %v", err)
	}
	keysFile := filepath.Join(s.authDir, auth.PublicKeysFile)

	lns := make([]net.Listener, 4)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("stack: listen: %v", err)
		}
		lns[i] = ln
	}
	public, internal, admin, core := lns[0], lns[1], lns[2], lns[3]

	vcfg := vpapp.Config{
		Environment:            config.Sandbox,
		DatabaseURL:            s.DBs.VaultDSN,
		Vault:                  transit.Config{Addr: s.Transit.Vault.Addr, Token: s.Transit.Tokens.Service, Mount: s.Transit.Mount},
		PublicAddr:             public.Addr().String(),
		InternalAddr:           internal.Addr().String(),
		AdminAddr:              admin.Addr().String(),
		PublicCertFile:         s.PKI.PublicCert,
		PublicKeyFile:          s.PKI.PublicKey,
		InternalCertFile:       s.PKI.VaultProxyCert,
		InternalKeyFile:        s.PKI.VaultProxyKey,
		ClientCAFile:           s.PKI.CA,
		InternalAllowedClients: []string{certs.CoreAPIName},
		CoreAPIURL:             "http://" + core.Addr().String(),
		AuthKeysFile:           keysFile,
		AuthIssuer:             Issuer,
		AuditSpoolDir:          filepath.Join(dir, "audit-spool"),
	}
	ccfg := coreapp.Config{
		Environment:      config.Sandbox,
		DatabaseURL:      s.DBs.CoreDSN,
		Addr:             core.Addr().String(),
		VaultProxyURL:    "https://" + internal.Addr().String(),
		VaultProxyCAFile: s.PKI.CA,
		ClientCertFile:   s.PKI.CoreAPICert,
		ClientKeyFile:    s.PKI.CoreAPIKey,
		AuthKeysFile:     keysFile,
		AuthIssuer:       Issuer,
		Vault:            coreVault,
		PublicURL:        "https://" + public.Addr().String(),
		NotificationURL:  "http://" + core.Addr().String(),
	}
	for _, o := range opts {
		o(&vcfg, &ccfg)
	}

	var out io.Writer = s.Logs
	if testing.Verbose() && os.Getenv("STACK_LOGS") != "" {
		out = io.MultiWriter(s.Logs, os.Stderr)
	}
	log := logging.New(out, slog.LevelDebug)

	// Started first, so that it stops last: vault-proxy may still be
	// sending to it.
	if vcfg.Environment != config.Production {
		s.MockCard = startMockCard(ctx, t, vcfg.Environment, log.With("service", "mock-card"))
		if !names(vcfg.Destinations, MockCardDestination) {
			vcfg.Destinations = strings.TrimPrefix(vcfg.Destinations+","+MockCardDestination+"="+s.MockCard.URL(), ",")
		}
		s.MockThreeDS = startMockThreeDS(ctx, t, vcfg.Environment, log.With("service", "mock-3ds"))
		if !names(vcfg.Destinations, MockThreeDSDestination) {
			vcfg.Destinations += "," + MockThreeDSDestination + "=" + s.MockThreeDS.URL()
		}
		s.MockDirect = startMockDirect(ctx, t, vcfg.Environment, log.With("service", "mock-direct"))
		if ccfg.MockDirectURL == "" { // an option may put a link in front of it
			ccfg.MockDirectURL = s.MockDirect.URL()
		}
		s.MockAntiFraud = startMockAntiFraud(ctx, t, vcfg.Environment, log.With("service", "mock-antifraud"))
		ccfg.MockAntiFraudURL = s.MockAntiFraud.URL()
	}

	if ccfg.Environment != config.Production {
		s.MockBank = startMockBank(ctx, t, ccfg.Environment, log.With("service", "mock-bank"))
		if ccfg.MockBankURL == "" {
			ccfg.MockBankURL = s.MockBank.URL()
		}
		s.MockRedirect = startMockRedirect(ctx, t, ccfg.Environment, log.With("service", "mock-redirect"))
		if ccfg.MockRedirectURL == "" { // an option may put a link in front of it
			ccfg.MockRedirectURL = s.MockRedirect.URL()
		}
	}

	vp, err := vpapp.New(vcfg, log.With("service", "vault-proxy"))
	if err != nil {
		t.Fatalf("stack: vault-proxy config: %v", err)
	}
	vp.Listeners.Public, vp.Listeners.Internal, vp.Listeners.Admin = public, internal, admin
	if err := vp.Run(ctx); err != nil {
		t.Fatalf("stack: vault-proxy: %v", err)
	}
	t.Cleanup(func() { _ = vp.Close() })
	s.VaultProxy = vp

	ca, err := coreapp.New(ccfg, log.With("service", "core-api"))
	if err != nil {
		t.Fatalf("stack: core-api config: %v", err)
	}
	ca.Listener = core
	if err := ca.Run(ctx); err != nil {
		t.Fatalf("stack: core-api: %v", err)
	}
	t.Cleanup(func() { _ = ca.Close() })
	s.CoreAPI = ca

	s.PublicURL = "https://" + public.Addr().String()
	s.InternalURL = "https://" + internal.Addr().String()
	s.AdminURL = "http://" + admin.Addr().String()
	s.CoreURL = "http://" + core.Addr().String()

	pool, err := certs.LoadCertPool(s.PKI.CA)
	if err != nil {
		t.Fatalf("stack: %v", err)
	}
	s.PublicClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	clientTLS, err := certs.ClientTLSConfig(s.PKI.CoreAPICert, s.PKI.CoreAPIKey, s.PKI.CA)
	if err != nil {
		t.Fatalf("stack: %v", err)
	}
	s.InternalClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	return s
}

// Do sends a JSON request with a bearer token and returns status and body.
// The exchange is validated against the service's OpenAPI document
// (CheckAPI); a mismatch fails t.
func (s *Stack) Do(t testing.TB, c *http.Client, method, url, token string, body any, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	var sent []byte // for the OpenAPI check
	switch b := body.(type) {
	case nil:
	case string:
		rd, sent = strings.NewReader(b), []byte(b)
	case []byte:
		rd, sent = bytes.NewReader(b), b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd, sent = bytes.NewReader(raw), raw
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s.CheckAPI(t, req, sent, resp, raw) // every exchange against the services' OpenAPI documents
	return resp.StatusCode, raw
}

// Dump returns a data-only pg_dump of one of the stack's databases
// ("vault" or "core"), for searching for card numbers.
//
// The vault zone's dump is everything it stores: its database, once the
// audit spool has shipped, followed by the raw bytes of the spool's files,
// so a search of it covers both.
func (s *Stack) Dump(t testing.TB, which string) string {
	t.Helper()
	if which != "vault" {
		return s.DBs.Dump(t, s.DBs.Core.Name)
	}
	s.FlushAudit(t)
	var b strings.Builder
	b.WriteString(s.DBs.Dump(t, s.DBs.Vault.Name))
	files, err := filepath.Glob(filepath.Join(s.VaultProxy.Config.AuditSpoolDir, "*"))
	if err != nil {
		t.Fatalf("stack: audit spool: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("stack: audit spool: %v", err)
		}
		b.WriteString("\n-- audit spool file " + filepath.Base(f) + "\n")
		b.Write(raw)
	}
	return b.String()
}

// FlushAudit waits until every audit record vault-proxy has written is in
// its database, for tests that read audit_events directly.
func (s *Stack) FlushAudit(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.VaultProxy.Audit.Flush(ctx); err != nil {
		t.Fatalf("stack: audit spool flush: %v", err)
	}
}

// TokenFor mints a bearer token restricted to the given merchant accounts
// (its merchant_account_ids claim), with scopes, from the stack's API key.
// Without accounts the token has no claim, and acts in the default account
// only.
func (s *Stack) TokenFor(t testing.TB, merchants []string, scopes ...string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.authDir, auth.SigningKeyFile))
	if err != nil {
		t.Fatalf("stack: signing key: %v", err)
	}
	priv, err := auth.ParsePrivateKeyPEM(data)
	if err != nil {
		t.Fatalf("stack: signing key: %v", err)
	}
	tok, err := auth.Mint(priv, Issuer, scopes, time.Hour, time.Now(), merchants)
	if err != nil {
		t.Fatalf("stack: token: %v", err)
	}
	return tok
}

// WithForwardLoopback lets /vault-forward reach loopback targets that a
// forwarding config lists (VAULT_FORWARD_ALLOW_LOOPBACK=true, honoured in
// development and sandbox only) and trusts caFile for them
// (VAULT_FORWARD_EXTRA_CA_FILE).
func WithForwardLoopback(caFile string) Option {
	return func(v *vpapp.Config, _ *coreapp.Config) { v.ForwardAllowLoopback, v.ExtraCAFile = true, caFile }
}

// startMockCard runs mock-card on loopback port 0, its logs among the
// stack's, and stops it when t ends.
func startMockCard(ctx context.Context, t testing.TB, env config.Environment, log *slog.Logger) *mockcard.Main {
	t.Helper()
	m, err := mockcard.New(mockcard.Config{Environment: env, Addr: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatalf("stack: mock-card config: %v", err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("stack: mock-card: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// startMockThreeDS runs mock-3ds on loopback port 0, as startMockCard.
func startMockThreeDS(ctx context.Context, t testing.TB, env config.Environment, log *slog.Logger) *mock3ds.Main {
	t.Helper()
	m, err := mock3ds.New(mock3ds.Config{Environment: env, Addr: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatalf("stack: mock-3ds config: %v", err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("stack: mock-3ds: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// WithRateLimit sets both services' request limit (the stack has none
// by default, so that tests and benchmarks are not refused).
func WithRateLimit(p ratelimit.Policy) Option {
	return func(v *vpapp.Config, c *coreapp.Config) { v.RateLimit, c.RateLimit = p, p }
}

// WithCoreAPI adjusts core-api's configuration (say a short QR expiry and
// sweep interval).
func WithCoreAPI(f func(*coreapp.Config)) Option {
	return func(_ *vpapp.Config, c *coreapp.Config) { f(c) }
}

// startMockBank runs mock-bank on loopback port 0, as startMockCard.
func startMockBank(ctx context.Context, t testing.TB, env config.Environment, log *slog.Logger) *mockbank.Main {
	t.Helper()
	m, err := mockbank.New(mockbank.Config{Config: simulator.Config{Environment: env, Addr: "127.0.0.1:0", RetryDelay: 100 * time.Millisecond}}, log)
	if err != nil {
		t.Fatalf("stack: mock-bank config: %v", err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("stack: mock-bank: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// startMockDirect runs mock-direct on loopback port 0, its logs among the
// stack's, and stops it when t ends.
func startMockDirect(ctx context.Context, t testing.TB, env config.Environment, log *slog.Logger) *mockdirect.Main {
	t.Helper()
	m, err := mockdirect.New(mockdirect.Config{Environment: env, Addr: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatalf("stack: mock-direct config: %v", err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("stack: mock-direct: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// startMockRedirect runs mock-redirect on loopback port 0, as
// startMockBank.
func startMockRedirect(ctx context.Context, t testing.TB, env config.Environment, log *slog.Logger) *mockredirect.Main {
	t.Helper()
	m, err := mockredirect.New(mockredirect.Config{Config: simulator.Config{Environment: env, Addr: "127.0.0.1:0", RetryDelay: 100 * time.Millisecond}}, log)
	if err != nil {
		t.Fatalf("stack: mock-redirect config: %v", err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("stack: mock-redirect: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// startMockAntiFraud runs mock-antifraud on loopback port 0, as
// startMockBank.
func startMockAntiFraud(ctx context.Context, t testing.TB, env config.Environment, log *slog.Logger) *mockantifraud.Main {
	t.Helper()
	m, err := mockantifraud.New(mockantifraud.Config{Environment: env, Addr: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatalf("stack: mock-antifraud config: %v", err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("stack: mock-antifraud: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// names reports whether a VAULT_PROXY_DESTINATIONS spec names a
// destination.
func names(spec, name string) bool {
	for _, part := range strings.Split(spec, ",") {
		if n, _, _ := strings.Cut(strings.TrimSpace(part), "="); n == name {
			return true
		}
	}
	return false
}

// coreVaultConfig prepares core-api's credentials key and policy on the
// stack's transit mount, as `core-api vault-setup` does, and returns the
// configuration holding the policy-bound token: core-api reaches its own
// key alone, beside vault-proxy's card keys on the same mount.
func coreVaultConfig(ctx context.Context, t testing.TB, tr *transittest.Env) vaulttransit.Config {
	t.Helper()
	cfg := vaulttransit.Config{Addr: tr.Vault.Addr, Token: tr.Vault.RootToken, Mount: tr.Mount}
	root, err := vaulttransit.New(cfg)
	if err != nil {
		t.Fatalf("stack: core-api vault: %v", err)
	}
	repo, err := testsupport.RepoRoot()
	if err != nil {
		t.Fatalf("stack: %v", err)
	}
	if cfg.Token, err = vaulttransit.Bootstrap(ctx, root, filepath.Join(repo, "deploy", "vault", vaulttransit.PolicyFile)); err != nil {
		t.Fatalf("stack: core-api vault: %v", err)
	}
	return cfg
}
