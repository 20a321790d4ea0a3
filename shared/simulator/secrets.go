package simulator

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/payorch/shared/config"
)

// Bounds of a webhook secret, as core-api's connectors take it.
const (
	MinWebhookSecretLength = 16
	MaxWebhookSecretLength = 128
)

// ValidWebhookSecret reports whether s can be a webhook secret: 16 to 128
// characters, without the "," and "=" that separate the entries of a
// simulator's *_WEBHOOK_SECRETS variable.
func ValidWebhookSecret(s string) bool {
	return len(s) >= MinWebhookSecretLength && len(s) <= MaxWebhookSecretLength && !strings.ContainsAny(s, ",=")
}

// ValidTestKey reports whether k is an API key of a simulator's test
// form: prefix (such as "mb_test_") and at least 8 letters, digits, _ or
// -, at most 128 characters in all. A simulator accepts any such key.
func ValidTestKey(prefix, k string) bool {
	rest, test := strings.CutPrefix(k, prefix)
	if !test || len(rest) < 8 || len(k) > 128 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// BearerKey is the request's bearer API key, if it is of the test form
// of prefix (ValidTestKey).
func BearerKey(r *http.Request, prefix string) (string, bool) {
	k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return k, ok && ValidTestKey(prefix, k)
}

// WebhookSecrets are the webhook secrets of a simulator's API keys, as a
// processor's dashboard lets a merchant set one per key: the notifications
// about what a key created are signed with its secret, and those of a key
// without one with the simulator's own (Config.WebhookSecret, the public
// sandbox secret by default). They are given at start-up
// (LoadWebhookSecrets) or set by the key itself (Routes). Safe for
// concurrent use.
type WebhookSecrets struct {
	fallback  string
	keyPrefix string

	mu    sync.Mutex
	byKey map[string]string
}

// NewWebhookSecrets holds initial, the secrets of API keys of the test
// form of keyPrefix, and signs for other keys with fallback. A key or a
// secret that is not valid is an error that shows neither.
func NewWebhookSecrets(name, keyPrefix, fallback string, initial map[string]string) (*WebhookSecrets, error) {
	s := &WebhookSecrets{fallback: fallback, keyPrefix: keyPrefix, byKey: make(map[string]string, len(initial))}
	for k, v := range initial {
		if !ValidTestKey(keyPrefix, k) || !ValidWebhookSecret(v) {
			return nil, errors.New(name + ": a webhook secret is given for an invalid API key, or is invalid")
		}
		s.byKey[k] = v
	}
	return s, nil
}

// For is the secret the notifications about key's objects are signed
// with: key's own, or the fallback.
func (s *WebhookSecrets) For(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.byKey[key]; ok {
		return v
	}
	return s.fallback
}

// LoadWebhookSecrets reads the variable name through l: comma-separated
// api_key=webhook_secret pairs, keys of the test form of keyPrefix. A
// malformed entry is reported without showing it (it holds a secret).
func LoadWebhookSecrets(l *config.Loader, name, keyPrefix string) map[string]string {
	raw := l.Secret(name, config.Optional())
	out := map[string]string{}
	if raw.Reveal() == "" {
		return out
	}
	for _, pair := range strings.Split(raw.Reveal(), ",") {
		key, secret, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !ValidTestKey(keyPrefix, key) || !ValidWebhookSecret(secret) {
			l.Invalid(name, "each entry must be api_key=webhook_secret: a "+keyPrefix+" key and a secret of 16 to 128 characters without , or =")
			return nil
		}
		out[key] = secret
	}
	return out
}

// Routes serves the sandbox endpoints through which an API key (the
// bearer) sets its own secret, for every notification sent from then on
// (retries of earlier ones included), or removes it:
// PUT /sandbox/webhook-secret {"webhook_secret": "…"} and
// DELETE /sandbox/webhook-secret, both answered 204. Errors are
// {"error": code}: invalid_api_key (401), invalid_json or
// invalid_webhook_secret (400).
func (s *WebhookSecrets) Routes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /sandbox/webhook-secret", s.set)
	mux.HandleFunc("DELETE /sandbox/webhook-secret", s.remove)
}

type errorBody struct {
	Error string `json:"error"`
}

func (s *WebhookSecrets) set(w http.ResponseWriter, r *http.Request) {
	key, ok := BearerKey(r, s.keyPrefix)
	if !ok {
		WriteJSON(w, http.StatusUnauthorized, errorBody{"invalid_api_key"})
		return
	}
	var in struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<12))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		WriteJSON(w, http.StatusBadRequest, errorBody{"invalid_json"})
		return
	}
	if !ValidWebhookSecret(in.WebhookSecret) {
		WriteJSON(w, http.StatusBadRequest, errorBody{"invalid_webhook_secret"})
		return
	}
	s.mu.Lock()
	s.byKey[key] = in.WebhookSecret
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *WebhookSecrets) remove(w http.ResponseWriter, r *http.Request) {
	key, ok := BearerKey(r, s.keyPrefix)
	if !ok {
		WriteJSON(w, http.StatusUnauthorized, errorBody{"invalid_api_key"})
		return
	}
	s.mu.Lock()
	delete(s.byKey, key)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
