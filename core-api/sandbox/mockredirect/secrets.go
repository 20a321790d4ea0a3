package mockredirect

import (
	"net/http"
	"strings"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// A merchant's webhook secret: what mock-redirect signs the
// notifications of the payments created with its API key with, as a
// processor's dashboard lets a merchant set one per key. A key without
// one is signed with Config.WebhookSecret (the public sandbox secret by
// default).

// Bounds of a webhook secret, as core-api's mock-redirect connector
// takes it.
const (
	minSecretLength = 16
	maxSecretLength = 128
)

// validSecret reports whether s can be a webhook secret.
func validSecret(s string) bool {
	return len(s) >= minSecretLength && len(s) <= maxSecretLength && !strings.ContainsAny(s, ",=")
}

// loadSecrets reads MOCK_REDIRECT_WEBHOOK_SECRETS: comma-separated
// api_key=webhook_secret pairs, the secrets configured at start-up.
func loadSecrets(l *config.Loader) map[string]string {
	const name = "MOCK_REDIRECT_WEBHOOK_SECRETS"
	raw := l.Secret(name, config.Optional())
	out := map[string]string{}
	if raw.Reveal() == "" {
		return out
	}
	for _, pair := range strings.Split(raw.Reveal(), ",") {
		key, secret, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !validKey(key) || !validSecret(secret) {
			// Never the pair itself: it holds a secret.
			l.Invalid(name, "each entry must be api_key=webhook_secret: an mr_test_ key and a secret of 16 to 128 characters without , or =")
			return nil
		}
		out[key] = secret
	}
	return out
}

// secretFor is the secret the notifications of key's payments are signed
// with.
func (m *Main) secretFor(key string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.secrets[key]; ok {
		return s
	}
	return m.Config.WebhookSecret
}

// webhookSecretRequest is the body of PUT /sandbox/webhook-secret.
type webhookSecretRequest struct {
	WebhookSecret string `json:"webhook_secret"`
}

// setSecret answers PUT /sandbox/webhook-secret: the calling key's
// webhook secret, which signs every notification sent from now on about
// its payments (retries of earlier ones included).
func (m *Main) setSecret(w http.ResponseWriter, r *http.Request) {
	var in webhookSecretRequest
	key, ok := keyAndBody(w, r, 1<<12, &in)
	if !ok {
		return
	}
	if !validSecret(in.WebhookSecret) {
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_webhook_secret"})
		return
	}
	m.mu.Lock()
	m.secrets[key] = in.WebhookSecret
	m.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// deleteSecret answers DELETE /sandbox/webhook-secret: the calling key's
// notifications are signed with the default secret again.
func (m *Main) deleteSecret(w http.ResponseWriter, r *http.Request) {
	key, ok := apiKey(r)
	if !ok {
		simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
		return
	}
	m.mu.Lock()
	delete(m.secrets, key)
	m.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
