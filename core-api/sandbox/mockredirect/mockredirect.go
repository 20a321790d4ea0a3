// Package mockredirect is mock-redirect, the sandbox processor of
// redirect (push) payments the product ships (docs/sandbox/mock-redirect.md):
// a third party in spirit, its own HTTP server that core-api's
// mock-redirect connector reaches over the wire. It creates payments with
// an expiring reference, serves the approval page the buyer is sent to
// (approve or decline), sends the buyer back to the merchant's
// redirect_url, and, independently of the buyer's browser, sends its
// signed notification over HTTP to the URL the payment was created with.
// It sees no card data and lives on the non-PCI side of the tree, but it
// is never linked into the core-api binary (core-api/deps_test.go).
// State is in memory and gone at a restart. It runs in development and
// sandbox only.
package mockredirect

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// The headers of a notification (docs/sandbox/mock-redirect.md, "Notifications").
const (
	HeaderNotificationID = "Mock-Redirect-Notification-Id"
	HeaderTimestamp      = "Mock-Redirect-Timestamp"
	HeaderSignature      = "Mock-Redirect-Signature" // "v1=" + hex HMAC-SHA256(secret, timestamp + "." + body)
)

// SandboxWebhookSecret is the secret mock-redirect signs notifications
// with unless configured otherwise: public, as a processor's published
// sandbox test secret is, and the secret of core-api's built-in sandbox
// configuration (connector.MockRedirectSandboxWebhookSecret).
const SandboxWebhookSecret = "whsec_mock_redirect_sandbox_public"

// KeyPrefix starts every API key mock-redirect accepts
// (simulator.ValidTestKey).
const KeyPrefix = "mr_test_"

// DefaultAddr is the listen address.
const DefaultAddr = "127.0.0.1:9730"

// MaxWindow is how far ahead a payment's expires_at may be.
const MaxWindow = 30 * 24 * time.Hour

// InstantApprovalAmount is the sandbox amount whose payment the buyer
// approves at once: its notification is sent before the create is
// answered, as a processor's may race its own answer.
const InstantApprovalAmount = 1001

// Config is mock-redirect's configuration. Its WebhookSecret signs the
// notifications of the payments of an API key that WebhookSecrets (or
// PUT /sandbox/webhook-secret) gives none (simulator.WebhookSecrets).
type Config struct {
	simulator.Config
	PublicURL string // base of the approval URLs ("": its own http:// address)
	// WebhookSecrets are the webhook secrets of API keys at start-up.
	WebhookSecrets map[string]string
	// MaxPayments bounds the payments kept; the oldest are forgotten first.
	MaxPayments int
}

// EnvPrefixes name mock-redirect's own variables.
var EnvPrefixes = []string{"MOCK_REDIRECT_"}

// LoadConfig reads the environment through l.
func LoadConfig(l *config.Loader) Config {
	return Config{
		Config:         simulator.LoadConfig(l, "MOCK_REDIRECT_", DefaultAddr, SandboxWebhookSecret),
		PublicURL:      l.String("MOCK_REDIRECT_PUBLIC_URL", config.Optional()),
		WebhookSecrets: simulator.LoadWebhookSecrets(l, "MOCK_REDIRECT_WEBHOOK_SECRETS", KeyPrefix),
		MaxPayments:    l.Int("MOCK_REDIRECT_MAX_PAYMENTS", 1, 10_000_000, config.Default("50000")),
	}
}

// Payment statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDeclined = "declined"
	StatusExpired  = "expired"
)

// Payment is a push payment, as the API answers it.
type Payment struct {
	ID          string    `json:"id"`
	Reference   string    `json:"reference"`
	Method      string    `json:"method"`
	Type        string    `json:"type"` // sale or authorization
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	Status      string    `json:"status"`
	ApprovalURL string    `json:"approval_url"`
	RedirectURL string    `json:"redirect_url"`
	ExpiresAt   time.Time `json:"expires_at"`
	CreatedAt   time.Time `json:"created_at"`
	// CartItems are the request's, as sent (absent when none).
	CartItems json.RawMessage `json:"cart_items,omitempty"`
	// Captures and Refunds are an approved payment's, oldest first;
	// Voided an authorization's void, with the reference it was sent
	// with.
	Captures      []Operation `json:"captures"`
	Refunds       []Operation `json:"refunds"`
	Voided        bool        `json:"voided"`
	VoidReference string      `json:"void_reference,omitempty"`

	apiKey    string
	notifyURL string
}

// Notification is the body mock-redirect sends.
type Notification struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"` // payment.approved, payment.declined, payment.expired
	CreatedAt time.Time `json:"created_at"`
	Data      Payment   `json:"data"`
}

// NotificationID is the id of the notification of payment id's status:
// the same on each retry.
func NotificationID(paymentID, status string) string { return "mrn_" + paymentID + "_" + status }

// Sign is the signature header's value for body sent at timestamp ts.
func Sign(secret, ts string, body []byte) string { return simulator.Sign(secret, ts, body) }

// Main is the simulator.
type Main struct {
	Config   Config
	Log      *slog.Logger
	Listener net.Listener // optional: serve on it instead of Config.Addr
	Now      func() time.Time

	mu          sync.Mutex
	payments    map[string]*Payment // by id
	byReference map[string]string   // api key + "\x00" + reference -> id
	secrets     *simulator.WebhookSecrets
	order       []string // ids, oldest first

	http    simulator.Server
	client  *http.Client
	stop    context.Context // ends the deliveries in the background at Close
	cancel  context.CancelFunc
	pending sync.WaitGroup
	closed  sync.Once
}

// New checks cfg and builds the simulator.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if err := simulator.CheckEnvironment("mock-redirect", cfg.Environment); err != nil {
		return nil, err
	}
	cfg.Config = cfg.WithDefaults(DefaultAddr, SandboxWebhookSecret)
	if cfg.MaxPayments <= 0 {
		cfg.MaxPayments = 50_000
	}
	secrets, err := simulator.NewWebhookSecrets("mock-redirect", KeyPrefix, cfg.WebhookSecret, cfg.WebhookSecrets)
	if err != nil {
		return nil, err
	}
	stop, cancel := context.WithCancel(context.Background())
	return &Main{Config: cfg, Log: log, Now: time.Now, payments: map[string]*Payment{}, byReference: map[string]string{},
		secrets: secrets, client: &http.Client{Timeout: 10 * time.Second}, stop: stop, cancel: cancel}, nil
}

// Run starts serving; it returns once the listener accepts connections.
func (m *Main) Run(ctx context.Context) error {
	if err := m.http.Listen(ctx, "mock-redirect", m.Config.Addr, m.Listener); err != nil {
		return err
	}
	m.http.Serve(m.Handler(), m.Log)
	m.Log.Warn("mock-redirect started: a sandbox redirect-payment simulator, not a processor",
		"environment", m.Config.Environment, "addr", m.http.Addr())
	return nil
}

// URL is the simulator's base URL.
func (m *Main) URL() string { return m.http.URL() }

func (m *Main) publicURL() string {
	if m.Config.PublicURL != "" {
		return m.Config.PublicURL
	}
	return m.URL()
}

// Close drains in-flight requests and ends the deliveries still retrying.
// It may be called more than once.
func (m *Main) Close() error {
	var err error
	m.closed.Do(func() {
		err = m.http.Close()
		m.cancel()
		m.pending.Wait()
	})
	return err
}

func (m *Main) now() time.Time { return m.Now().UTC().Truncate(time.Second) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// add keeps p, forgetting the oldest payment beyond MaxPayments; m.mu held.
func (m *Main) add(refKey string, p *Payment) {
	m.payments[p.ID], m.byReference[refKey] = p, p.ID
	m.order = append(m.order, p.ID)
	if len(m.order) > m.Config.MaxPayments {
		old := m.payments[m.order[0]]
		delete(m.payments, old.ID)
		delete(m.byReference, old.apiKey+"\x00"+old.Reference)
		m.order = m.order[1:]
	}
}

// expire moves a pending payment past its expiry to expired; m.mu held.
// It reports whether it did.
func (m *Main) expire(p *Payment) bool {
	if p.Status == StatusPending && !m.now().Before(p.ExpiresAt) {
		p.Status = StatusExpired
		return true
	}
	return false
}

// delivery is what became of a notification's sends.
type delivery = simulator.Delivery

// notification is the body of p's notification of its status.
func (m *Main) notification(p Payment) (string, []byte) {
	id := NotificationID(p.ID, p.Status)
	body, _ := json.Marshal(Notification{ID: id, Type: "payment." + p.Status, CreatedAt: m.now(), Data: p})
	return id, body
}

// deliver sends p's notification until a 2xx answer or upTo attempts in
// all (d counts those made before).
func (m *Main) deliver(ctx context.Context, p Payment, d *delivery, upTo int) {
	id, body := m.notification(p)
	n := simulator.Notifier{Headers: simulator.Headers{ID: HeaderNotificationID, Timestamp: HeaderTimestamp, Signature: HeaderSignature}, Client: m.client, Now: m.Now}
	if !n.Deliver(ctx, p.notifyURL, id, m.secrets.For(p.apiKey), body, d, upTo, m.Config.RetryDelay) {
		return
	}
	if upTo < m.Config.DeliveryAttempts {
		return // more to come (deliverLater)
	}
	m.Log.Warn("mock-redirect: notification not delivered", "payment", p.ID, "attempts", d.Attempts, "status", d.StatusCode, "err", d.Error)
}

// deliverLater delivers p's notification in the background (after the
// attempts d records), independently of whoever asked.
func (m *Main) deliverLater(p Payment, d delivery) {
	m.pending.Add(1)
	go func() {
		defer m.pending.Done()
		m.deliver(m.stop, p, &d, m.Config.DeliveryAttempts)
	}()
}
