package mockcard

import (
	"errors"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// Config is everything mock-card reads at start.
type Config struct {
	Environment config.Environment
	// Addr is the listen address; a loopback one unless the simulator
	// serves TLS, since card numbers come in.
	Addr string
	// CertFile and KeyFile, both or neither: serve TLS with them.
	CertFile, KeyFile string
	// MaxAuthorizations bounds the idempotency keys kept, each with its
	// authorization; the oldest are forgotten first.
	MaxAuthorizations int
	// Hold is how long the answer of AmountHeld waits: longer than any
	// client waits (vault-proxy's detokenized call gives up after 60 s at
	// most, core-api's client after 70 s).
	Hold time.Duration
	// WebhookSecret signs the notifications of results that come later
	// (DefaultWebhookSecret, public, unless configured otherwise);
	// DeliveryAttempts and RetryDelay bound their sends, as the other
	// simulators' (shared/simulator).
	WebhookSecret    string
	DeliveryAttempts int
	RetryDelay       time.Duration
	// SettleDelay is how long a pending authorization, capture or refund
	// waits before its result is decided and notified.
	SettleDelay time.Duration
}

// Defaults of the fields a Config may leave zero.
const (
	DefaultAddr              = "127.0.0.1:9700"
	DefaultMaxAuthorizations = 50_000
	DefaultHold              = 2 * time.Minute
	DefaultSettleDelay       = 500 * time.Millisecond
	// DefaultWebhookSecret is public, as a processor's published sandbox
	// secret is: core-api's built-in sandbox configuration verifies with it.
	DefaultWebhookSecret = "whsec_mock_card_sandbox_public"
)

// EnvPrefixes name mock-card's own variables: one it does not read is
// refused at start (a misspelt name).
var EnvPrefixes = []string{"MOCK_CARD_"}

// LoadConfig reads the environment through l; call l.Err() afterwards.
func LoadConfig(l *config.Loader) Config {
	sim := simulator.LoadConfig(l, "MOCK_CARD_", DefaultAddr, DefaultWebhookSecret)
	return Config{
		Environment:       sim.Environment,
		Addr:              sim.Addr,
		WebhookSecret:     sim.WebhookSecret,
		DeliveryAttempts:  sim.DeliveryAttempts,
		RetryDelay:        sim.RetryDelay,
		SettleDelay:       l.Duration("MOCK_CARD_SETTLE_DELAY", time.Millisecond, time.Hour, config.Default("500ms")),
		CertFile:          l.String("MOCK_CARD_CERT_FILE", config.Optional()),
		KeyFile:           l.String("MOCK_CARD_KEY_FILE", config.Optional()),
		MaxAuthorizations: l.Int("MOCK_CARD_MAX_AUTHORIZATIONS", 1, 10_000_000, config.Default("50000")),
		Hold:              l.Duration("MOCK_CARD_HOLD", time.Second, time.Hour, config.Default("2m")),
	}
}

// Validate checks what the loader cannot: relations between values.
func (c Config) Validate() error {
	errs := []error{simulator.CheckEnvironment("mock-card", c.Environment)}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("MOCK_CARD_CERT_FILE and MOCK_CARD_KEY_FILE go together"))
	}
	if c.CertFile == "" && !config.LoopbackAddr(c.Addr) {
		errs = append(errs, errors.New("MOCK_CARD_ADDR must be a loopback address unless MOCK_CARD_CERT_FILE is set: card numbers cross the network only over TLS"))
	}
	if c.MaxAuthorizations < 0 || c.Hold < 0 {
		errs = append(errs, errors.New("MOCK_CARD_MAX_AUTHORIZATIONS and MOCK_CARD_HOLD must not be negative"))
	}
	return errors.Join(errs...)
}

// withDefaults fills the zero fields of a Config built in code (tests,
// the end-to-end stack).
func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxAuthorizations == 0 {
		c.MaxAuthorizations = DefaultMaxAuthorizations
	}
	if c.Hold == 0 {
		c.Hold = DefaultHold
	}
	if c.SettleDelay == 0 {
		c.SettleDelay = DefaultSettleDelay
	}
	sim := simulator.Config{WebhookSecret: c.WebhookSecret, DeliveryAttempts: c.DeliveryAttempts, RetryDelay: c.RetryDelay}.WithDefaults(c.Addr, DefaultWebhookSecret)
	c.WebhookSecret, c.DeliveryAttempts, c.RetryDelay = sim.WebhookSecret, sim.DeliveryAttempts, sim.RetryDelay
	return c
}
