package simulator

import (
	"time"

	"github.com/payorch/shared/config"
)

// Config is what a simulator that sends signed notifications is
// configured with, each under its own variable prefix; the simulator
// embeds it in its own configuration.
type Config struct {
	Environment config.Environment
	Addr        string
	// WebhookSecret signs the notifications (the simulator's public
	// sandbox secret unless configured otherwise).
	WebhookSecret string
	// DeliveryAttempts bounds the sends of one notification (the first
	// and its retries on anything but a 2xx answer).
	DeliveryAttempts int
	// RetryDelay is the wait before the first retry, doubled after each.
	RetryDelay time.Duration
}

// LoadConfig reads ENVIRONMENT and the simulator's prefix + ADDR,
// WEBHOOK_SECRET, DELIVERY_ATTEMPTS and RETRY_DELAY through l, defaulting
// to addr and secret.
func LoadConfig(l *config.Loader, prefix, addr, secret string) Config {
	return Config{
		Environment:      l.Environment("ENVIRONMENT"),
		Addr:             l.String(prefix+"ADDR", config.Default(addr)),
		WebhookSecret:    l.String(prefix+"WEBHOOK_SECRET", config.Default(secret)),
		DeliveryAttempts: l.Int(prefix+"DELIVERY_ATTEMPTS", 1, 20, config.Default("6")),
		RetryDelay:       l.Duration(prefix+"RETRY_DELAY", time.Millisecond, time.Minute, config.Default("200ms")),
	}
}

// WithDefaults is c with what it leaves zero defaulted as LoadConfig
// does, for a simulator built in code (tests, the e2e stack).
func (c Config) WithDefaults(addr, secret string) Config {
	if c.Addr == "" {
		c.Addr = addr
	}
	if c.WebhookSecret == "" {
		c.WebhookSecret = secret
	}
	if c.DeliveryAttempts <= 0 {
		c.DeliveryAttempts = 6
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 200 * time.Millisecond
	}
	return c
}
