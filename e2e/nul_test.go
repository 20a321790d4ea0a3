package e2e

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
)

// TestTextPostgreSQLCannotHoldIsRefused: PostgreSQL's text and jsonb hold
// neither U+0000 nor invalid UTF-8. A value with either, anywhere a
// merchant can write text (bodies of both services, core-api's query
// parameters), is a 400 in the error envelope with a pointer to it, and
// nothing is stored: not a 500 from a failed insert, and no vaulted card
// left behind. Credentials are the exception
// (docs/vault-forward-authentication.md): a credential value holding U+0000 is stored and used as entered.
func TestTextPostgreSQLCannotHoldIsRefused(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "buyers.write", "buyers.read", "payment-methods.write", "payment-methods.read",
		"vault-forward-configs.write", "vault-forward-configs.read", "merchant-accounts.write")
	cfg := createForwardConfig(t, s, tok, "api.processor.example")
	buyer := newCore(s, tok, "").ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Kept"})["id"].(string)
	authURL := "/vault-forward/configs/" + cfg + "/authentications"

	const nul = "a\x00b"
	card := func(extra map[string]any) map[string]any {
		m := map[string]any{"method": "card", "number": "4111111111111111", "expiration_date": futureExpiry()}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	signature := func(displayName string) map[string]any {
		return map[string]any{"kind": "signature", "display_name": displayName,
			"fields": []map[string]string{{"key": "algorithm", "value": "hmac-sha256"}, {"key": "key_id", "value": "k-1"}, {"key": "key", "value": "secret"}}}
	}
	tables := map[string]string{"core": s.DBs.CoreDSN, "vault": s.DBs.VaultDSN}
	counted := []struct{ db, table string }{
		{"core", "buyers"}, {"core", "payment_methods"}, {"core", "merchant_accounts"},
		{"vault", "vaulted_cards"}, {"vault", "forward_configs"}, {"vault", "forward_auth_methods"},
	}
	counts := func() map[string]int {
		m := map[string]int{}
		for _, c := range counted {
			m[c.db+"."+c.table] = countRows(t, tables[c.db], c.table)
		}
		return m
	}
	before := counts()

	tests := []struct {
		name, method, path string
		body               any
		location, pointer  string // of the one detail
	}{
		{"buyer display_name", "POST", "/buyers", map[string]any{"display_name": nul}, "body", "/display_name"},
		{"buyer external_identifier", "POST", "/buyers", map[string]any{"external_identifier": nul}, "body", "/external_identifier"},
		{"nested billing field", "POST", "/buyers", map[string]any{"billing_details": map[string]any{"address": map[string]any{"line1": nul}}}, "body", "/billing_details/address/line1"},
		{"NUL in a field name", "POST", "/buyers", map[string]any{"display\x00name": "x"}, "body", "/display\x00name"},
		{"buyer update", "PUT", "/buyers/" + buyer, map[string]any{"display_name": nul}, "body", "/display_name"},
		{"search", "GET", "/buyers?search=a%00b", nil, "query", "search"},
		{"external_identifier filter", "GET", "/buyers?external_identifier=%FF", nil, "query", "external_identifier"},
		{"buyer_external_identifier filter", "GET", "/buyers/payment-methods?buyer_external_identifier=a%00b", nil, "query", "buyer_external_identifier"},
		{"card's external_identifier (vaulted, then shredded)", "POST", "/payment-methods", card(map[string]any{"external_identifier": nul}), "body", "/external_identifier"},
		{"card's buyer_external_identifier", "POST", "/payment-methods", card(map[string]any{"buyer_external_identifier": nul}), "body", "/buyer_external_identifier"},
		{"merchant account name", "POST", "/merchant-accounts", map[string]any{"id": "nul-test", "display_name": nul}, "body", "/display_name"},
		{"forwarding config name", "POST", "/vault-forward/configs", map[string]any{"display_name": nul, "hosts": []string{"a.example"}}, "body", "/display_name"},
		{"authentication method name", "POST", authURL, signature(nul), "body", "/display_name"},
		{"invalid UTF-8 to vault-proxy", "POST", "/vault-forward/configs", []byte("{\"display_name\":\"\xff\",\"hosts\":[\"a.example\"]}"), "body", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, raw := badRequest(t, s, tc.method, tc.path, tok, tc.body)
			if e.Code != "bad_request" || len(e.Details) != 1 || string(e.Details[0].Location) != tc.location || e.Details[0].Pointer != tc.pointer {
				t.Fatalf("error %s", raw)
			}
		})
	}
	if after := counts(); !maps.Equal(before, after) {
		t.Fatalf("rows changed: %v -> %v", before, after)
	}

	// A credential is used as entered: U+0000 in a secret and in a public
	// value is stored, and the public one comes back as written.
	auth := signature("NUL in credentials")
	auth["fields"] = []map[string]string{{"key": "algorithm", "value": "hmac-sha256"}, {"key": "key_id", "value": nul}, {"key": "key", "value": nul}}
	code, raw := s.Do(t, s.PublicClient, "POST", s.PublicURL+authURL, tok, auth)
	if code != http.StatusCreated {
		t.Fatalf("credential with U+0000: %d %s", code, raw)
	}
	var out authOut
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	code, raw = s.Do(t, s.PublicClient, "GET", s.PublicURL+authURL, tok, nil)
	if code != http.StatusOK || !bytes.Contains(raw, []byte(`"key_id","value":"a\u0000b"`)) {
		t.Fatalf("listed: %d %s", code, raw)
	}
}

// badRequest sends body to vault-proxy's public path and requires a 400 in
// the error envelope, which it returns with the raw answer.
func badRequest(t *testing.T, s *stack.Stack, method, path, tok string, body any) (*apierror.Error, []byte) {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, method, s.PublicURL+path, tok, body)
	if code != http.StatusBadRequest {
		t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	return apiError(t, raw), raw
}
