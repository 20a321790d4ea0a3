package mockcard

import (
	"net/http"
	"strings"

	"github.com/payorch/shared/apierror"
)

// TestKeyPrefix starts every API key mock-card accepts. A sandbox issues
// no keys: any key of the test form (the prefix, then letters, digits, _
// or -, 16 to 128 characters in all) is valid, and any other is refused,
// so a sandbox user can configure a wrong one on purpose.
const TestKeyPrefix = "mc_test_"

// Codes of a refused API key (401).
const (
	CodeMissingCredentials = "missing_credentials"
	CodeInvalidCredentials = "invalid_credentials"
)

// checkAPIKey requires "Authorization: Bearer <key>" with a key of the
// test form on every /v1/ route. The key is never answered or logged.
func checkAPIKey(r *http.Request) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return apierror.New(http.StatusUnauthorized, CodeMissingCredentials,
			"an API key is required: Authorization: Bearer <key>")
	}
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || !ValidAPIKey(key) {
		return apierror.New(http.StatusUnauthorized, CodeInvalidCredentials, "the API key is not valid")
	}
	return nil
}

// ValidAPIKey reports whether key has the test form mock-card accepts.
func ValidAPIKey(key string) bool {
	if !strings.HasPrefix(key, TestKeyPrefix) || len(key) < 16 || len(key) > 128 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
