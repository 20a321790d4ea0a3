// Package mockbank is the sandbox bank simulator (docs/sandbox/mock-bank.md):
// a third party in spirit, its own HTTP server that core-api's mock-bank
// connector reaches over the wire. It issues instant bank transfer
// charges paid by QR code, lets a tester play the buyer who pays one, and
// then sends the processor's signed notification over HTTP to the URL the
// charge was created with. It sees no card data and lives on the non-PCI
// side of the tree, but it is never linked into the core-api binary
// (core-api/deps_test.go).
package mockbank

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// The headers of a notification (docs/sandbox/mock-bank.md, "Notifications").
const (
	HeaderNotificationID = "Mock-Bank-Notification-Id"
	HeaderTimestamp      = "Mock-Bank-Timestamp"
	HeaderSignature      = "Mock-Bank-Signature" // "v1=" + hex HMAC-SHA256(secret, timestamp + "." + body)
)

// SandboxWebhookSecret is the secret mock-bank signs notifications with
// unless configured otherwise, or the API key they are about has its own
// (simulator.WebhookSecrets): public, as a processor's published sandbox
// test secret is, and the secret of core-api's built-in sandbox
// configuration (connector.MockBankSandboxWebhookSecret).
const SandboxWebhookSecret = "whsec_mock_bank_sandbox_public"

// KeyPrefix starts every API key mock-bank accepts
// (simulator.ValidTestKey).
const KeyPrefix = "mb_test_"

// DefaultAddr is the listen address.
const DefaultAddr = "127.0.0.1:9710"

// Config is mock-bank's configuration. Its WebhookSecret signs the
// notifications about the charges, mandates and debits of an API key
// that WebhookSecrets (or PUT /sandbox/webhook-secret) gives none.
type Config struct {
	simulator.Config
	// WebhookSecrets are the webhook secrets of API keys at start-up.
	WebhookSecrets map[string]string
	// DebitDelay is how long a bank debit stays pending before its
	// result is notified.
	DebitDelay time.Duration
}

// EnvPrefixes name mock-bank's own variables.
var EnvPrefixes = []string{"MOCK_BANK_"}

// LoadConfig reads the environment through l.
func LoadConfig(l *config.Loader) Config {
	return Config{
		Config:         simulator.LoadConfig(l, "MOCK_BANK_", DefaultAddr, SandboxWebhookSecret),
		WebhookSecrets: simulator.LoadWebhookSecrets(l, "MOCK_BANK_WEBHOOK_SECRETS", KeyPrefix),
		DebitDelay:     l.Duration("MOCK_BANK_DEBIT_DELAY", 0, time.Hour, config.Default("500ms")),
	}
}

// Charge statuses.
const (
	StatusPending = "pending"
	StatusPaid    = "paid"
	StatusExpired = "expired"
)

// Charge is an instant bank transfer charge, as the API answers it.
type Charge struct {
	ID        string    `json:"id"`
	Reference string    `json:"reference"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	Status    string    `json:"status"`
	QRCode    string    `json:"qr_code"`
	ExpiresAt time.Time `json:"expires_at"`
	// CartItems are the request's, as sent (absent when none).
	CartItems json.RawMessage `json:"cart_items,omitempty"`

	apiKey    string
	notifyURL string
}

// createRequest is the body of POST /v1/qr-charges.
type createRequest struct {
	Reference        string `json:"reference"`
	Amount           int64  `json:"amount"`
	Currency         string `json:"currency"`
	NotificationURL  string `json:"notification_url"`
	ExpiresInSeconds int64  `json:"expires_in_seconds"`
	// CartItems are recorded and answered as sent (an array), never
	// decided on.
	CartItems json.RawMessage `json:"cart_items"`
}

// Main is the simulator.
type Main struct {
	Config   Config
	Log      *slog.Logger
	Listener net.Listener // optional: serve on it instead of Config.Addr
	Now      func() time.Time

	mu          sync.Mutex
	charges     map[string]*Charge // by id
	byReference map[string]string  // api key + "\x00" + reference -> id
	mandates    map[string]*Mandate
	debits      map[string]*Debit
	debitOrder  []string // ids in creation order
	secrets     *simulator.WebhookSecrets

	// background sends the notifications of debits; Close stops and
	// waits for it.
	background context.Context
	stop       context.CancelFunc
	sending    sync.WaitGroup

	http   simulator.Server
	client *http.Client
}

// New checks cfg and builds the simulator.
func New(cfg Config, log *slog.Logger) (*Main, error) {
	if err := simulator.CheckEnvironment("mock-bank", cfg.Environment); err != nil {
		return nil, err
	}
	cfg.Config = cfg.WithDefaults(DefaultAddr, SandboxWebhookSecret)
	secrets, err := simulator.NewWebhookSecrets("mock-bank", KeyPrefix, cfg.WebhookSecret, cfg.WebhookSecrets)
	if err != nil {
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	return &Main{Config: cfg, Log: log, Now: time.Now, charges: map[string]*Charge{}, byReference: map[string]string{},
		mandates: map[string]*Mandate{}, debits: map[string]*Debit{}, secrets: secrets, background: bg, stop: stop,
		client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Run starts serving.
func (m *Main) Run(ctx context.Context) error {
	if err := m.http.Listen(ctx, "mock-bank", m.Config.Addr, m.Listener); err != nil {
		return err
	}
	m.http.Serve(m.Handler(), m.Log)
	m.Log.Info("mock-bank listening", "addr", m.http.Addr())
	return nil
}

// URL is the simulator's base URL.
func (m *Main) URL() string { return m.http.URL() }

// Close stops the notifications being sent, then drains in-flight
// requests.
func (m *Main) Close() error {
	m.stop()
	m.sending.Wait()
	return m.http.Close()
}

// Handler routes the API and the sandbox endpoints.
func (m *Main) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/qr-charges", m.create)
	mux.HandleFunc("GET /v1/qr-charges/{id}", m.authorized(func(w http.ResponseWriter, c *Charge) { simulator.WriteJSON(w, http.StatusOK, c) }))
	mux.HandleFunc("POST /v1/qr-charges/{id}/cancel", m.authorized(m.cancel))
	mux.HandleFunc("POST /sandbox/qr/{id}/pay", m.pay)
	m.bankRoutes(mux)
	m.secrets.Routes(mux)
	mux.HandleFunc("GET /healthz", simulator.Healthz)
	return mux
}

type apiError struct {
	Error string `json:"error"`
}

// apiKey is the request's bearer key: any key of the test form
// (KeyPrefix and at least 8 letters, digits, _ or -) is accepted.
func apiKey(r *http.Request) (string, bool) { return simulator.BearerKey(r, KeyPrefix) }

func (m *Main) create(w http.ResponseWriter, r *http.Request) {
	key, ok := apiKey(r)
	if !ok {
		simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
		return
	}
	var in createRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_json"})
		return
	}
	switch {
	case in.Reference == "" || len(in.Reference) > 255:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_reference"})
		return
	case in.Amount <= 0 || in.Amount > 99_999_999:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_amount"})
		return
	case in.Currency != "BRL":
		// Pix settles in reais only.
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"unsupported_currency"})
		return
	case !strings.HasPrefix(in.NotificationURL, "http://") && !strings.HasPrefix(in.NotificationURL, "https://"):
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_notification_url"})
		return
	case in.ExpiresInSeconds < 1 || in.ExpiresInSeconds > 86400:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_expiry"})
		return
	case !simulator.JSONArrayOrAbsent(in.CartItems):
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_cart_items"})
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	refKey := key + "\x00" + in.Reference
	if id, ok := m.byReference[refKey]; ok { // the same reference is the same charge
		simulator.WriteJSON(w, http.StatusOK, m.charges[id])
		return
	}
	id := "mbq_" + randomHex(12)
	c := &Charge{ID: id, Reference: in.Reference, Amount: in.Amount, Currency: in.Currency, Status: StatusPending,
		QRCode:    qrPayload(id, in.Amount),
		ExpiresAt: m.Now().Add(time.Duration(in.ExpiresInSeconds) * time.Second).UTC().Truncate(time.Second),
		CartItems: in.CartItems, apiKey: key, notifyURL: in.NotificationURL}
	m.charges[id], m.byReference[refKey] = c, id
	simulator.WriteJSON(w, http.StatusCreated, c)
}

// qrPayload is an EMV-style "copia e cola" payload naming the charge.
func qrPayload(id string, amount int64) string {
	amt := strconv.FormatFloat(float64(amount)/100, 'f', 2, 64)
	return "00020126" + strconv.Itoa(len(id)+14) + "0014br.gov.bcb.pix" + id + "5303986" + fmt.Sprintf("54%02d%s", len(amt), amt) + "5802BR6304MOCK"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// authorized runs h on the charge the path names, for its own API key.
func (m *Main) authorized(h func(http.ResponseWriter, *Charge)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := apiKey(r)
		if !ok {
			simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		c, ok := m.charges[r.PathValue("id")]
		if !ok || c.apiKey != key {
			simulator.WriteJSON(w, http.StatusNotFound, apiError{"charge_not_found"})
			return
		}
		m.expire(c)
		h(w, c)
	}
}

// expire moves a pending charge past its expiry to expired; m.mu held.
func (m *Main) expire(c *Charge) {
	if c.Status == StatusPending && !m.Now().Before(c.ExpiresAt) {
		c.Status = StatusExpired
	}
}

// cancel ends a pending charge (expired) so that it can no longer be
// paid; a paid one stays paid, which the answer says.
func (m *Main) cancel(w http.ResponseWriter, c *Charge) {
	if c.Status == StatusPending {
		c.Status = StatusExpired
	}
	simulator.WriteJSON(w, http.StatusOK, c)
}

// Notification is the body mock-bank sends.
type Notification struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"` // "qr_charge.paid", "debit.succeeded", "mandate.activated", ...
	CreatedAt time.Time `json:"created_at"`
	Data      any       `json:"data"` // a *Charge, *Debit or *Mandate
}

// payResult answers POST /sandbox/qr/{id}/pay.
type payResult struct {
	Charge   *Charge  `json:"charge"`
	Delivery delivery `json:"delivery"`
}

type delivery = simulator.Delivery

// pay plays the buyer: the charge is paid and its notification sent,
// retried on anything but a 2xx. Paying a paid charge sends the same
// notification again (the same id), as a processor's retry would.
func (m *Main) pay(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	c, ok := m.charges[r.PathValue("id")]
	if !ok {
		m.mu.Unlock()
		simulator.WriteJSON(w, http.StatusNotFound, apiError{"charge_not_found"})
		return
	}
	m.expire(c)
	if c.Status == StatusExpired {
		m.mu.Unlock()
		simulator.WriteJSON(w, http.StatusConflict, apiError{"charge_expired"})
		return
	}
	c.Status = StatusPaid
	snapshot := *c
	m.mu.Unlock()
	body, _ := json.Marshal(Notification{ID: "mbn_" + strings.TrimPrefix(c.ID, "mbq_"), Type: "qr_charge.paid", CreatedAt: m.Now().UTC(), Data: snapshot})
	d := m.deliver(r.Context(), snapshot.apiKey, snapshot.notifyURL, "mbn_"+strings.TrimPrefix(c.ID, "mbq_"), body)
	simulator.WriteJSON(w, http.StatusOK, payResult{Charge: &snapshot, Delivery: d})
}

// Sign is the signature header's value for body sent at timestamp ts.
func Sign(secret, ts string, body []byte) string { return simulator.Sign(secret, ts, body) }

// deliver sends a notification about an object created with key, signed
// with key's webhook secret, until a 2xx answer or the attempts run out.
func (m *Main) deliver(ctx context.Context, key, url, id string, body []byte) delivery {
	var d delivery
	n := simulator.Notifier{Headers: simulator.Headers{ID: HeaderNotificationID, Timestamp: HeaderTimestamp, Signature: HeaderSignature}, Client: m.client, Now: m.Now}
	n.Deliver(ctx, url, id, m.secrets.For(key), body, &d, m.Config.DeliveryAttempts, m.Config.RetryDelay)
	return d
}
