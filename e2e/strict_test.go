package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
)

// TestVaultProxyRefusesNestedProblems: vault-proxy holds every body it
// reads to the rules core-api holds its own to (shared/strictjson), at
// every depth: a field its type does not have, inside a bank account's
// mandate, a forward authentication method's fields or an internal
// call's body, is refused as core-api refuses one (400 bad_request, a
// detail with the field's pointer and value_error.extra), as is a value
// of the wrong type (type_error.*), and nothing is stored: no account is
// vaulted, nothing is passed on to core-api, no config or method is kept.
func TestVaultProxyRefusesNestedProblems(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, append(pmScopes, "vault-forward-configs.write")...)
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/vault-forward/configs", tok,
		map[string]any{"display_name": "processor", "hosts": []string{"api.processor.example"}})
	if code != 201 {
		t.Fatalf("config: %d %s", code, raw)
	}
	var cfg struct{ ID string }
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	ach := `"method":"bank","scheme":"ach","account_number":"000123456789","routing_number":"011000015","account_type":"checking","account_holder_name":"Jane Doe"`
	detokenize := `"destination":"mock-card","method":"POST","path":"/v1/authorizations","body":"{}","payment_methods":["0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"],"purpose":"authorization"`
	internal := func(path string) (string, *http.Client, string, []string) {
		return s.InternalURL + path, s.InternalClient, "", []string{accountid.Header, "default", zone.ActorHeader, "test"}
	}
	public := func(path string) (string, *http.Client, string, []string) {
		return s.PublicURL + path, s.PublicClient, tok, nil
	}

	for _, tc := range []struct {
		name    string
		route   func(string) (string, *http.Client, string, []string)
		path    string
		body    string
		pointer string
		typ     string
	}{
		{"an unknown field in a bank account's mandate", public, "/payment-methods",
			`{` + ach + `,"mandate":{"recurring":true,"interval":"monthly"}}`, "/mandate/interval", "value_error.extra"},
		{"a mandate's recurring that is no boolean", public, "/payment-methods",
			`{` + ach + `,"mandate":{"recurring":"yes"}}`, "/mandate/recurring", "type_error.bool"},
		{"a mandate that is no object", public, "/payment-methods",
			`{` + ach + `,"mandate":[true]}`, "/mandate", "type_error.dict"},
		{"a card with a buyer object", public, "/payment-methods",
			`{"method":"card","number":"4111111111111111","expiration_date":"` + expiryIn(2) + `","buyer":{"id":"x"}}`, "/buyer", "value_error.extra"},
		{"a card with billing details", public, "/payment-methods",
			`{"method":"card","number":"4111111111111111","expiration_date":"` + expiryIn(2) + `","billing_details":{"address":{"country":"US"}}}`, "/billing_details", "value_error.extra"},
		{"a forward config's host that is an object", public, "/vault-forward/configs",
			`{"display_name":"x","hosts":[{"host":"a.example"}]}`, "/hosts/0", "type_error.str"},
		{"an unknown field in an authentication method's field", public, "/vault-forward/configs/" + cfg.ID + "/authentications",
			`{"kind":"signature","display_name":"k","fields":[{"key":"key_id","value":"k1","secret":true}]}`, "/fields/0/secret", "value_error.extra"},
		{"an authentication method's value that is an object", public, "/vault-forward/configs/" + cfg.ID + "/authentications",
			`{"kind":"signature","display_name":"k","fields":[{"key":"key_id","value":{"v":"k1"}}]}`, "/fields/0/value", "type_error.str"},
		{"an unknown field in a detokenized call", internal, zone.DetokenizePath,
			`{` + detokenize + `,"url":"https://elsewhere.example"}`, "/url", "value_error.extra"},
		{"a field of a detokenized call in another case", internal, zone.DetokenizePath,
			`{"Destination":"mock-card","method":"POST","path":"/v1/authorizations","body":"{}","payment_methods":["0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"]}`, "/Destination", "value_error.extra"},
		{"a detokenized call's header that is no string", internal, zone.DetokenizePath,
			`{` + detokenize + `,"headers":{"x-api-key":{"value":"k"}}}`, "/headers/x-api-key", "type_error.str"},
		{"an unknown field in a closure attempt", internal, zone.MerchantAccountPath(zone.MerchantAccountCancelClosePath, "default"),
			`{"attempt_id":"2b0c7a34-6c4b-4f43-9a3e-3f3a3c1d9b11","merchant_account_id":"default"}`, "/merchant_account_id", "value_error.extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vaulted, audited := vaultCount(t, s, `SELECT count(*) FROM vaulted_cards`), auditCount(t, s, `action = 'vault'`)
			configs := vaultCount(t, s, `SELECT (SELECT count(*) FROM forward_configs) + (SELECT count(*) FROM forward_auth_methods)`)
			passedOn := coreRequests(s, http.MethodPost, "/payment-methods")

			url, client, token, hdr := tc.route(tc.path)
			code, raw := s.Do(t, client, http.MethodPost, url, token, tc.body, hdr...)
			e, err := apierror.Parse(raw)
			if code != 400 || err != nil || e.Code != apierror.CodeBadRequest || len(e.Details) != 1 ||
				e.Details[0].Location != apierror.LocationBody || e.Details[0].Pointer != tc.pointer || e.Details[0].Type != tc.typ {
				t.Fatalf("= %d %s, want 400 with one body detail at %s, %s", code, raw, tc.pointer, tc.typ)
			}
			logging.AssertNoPANIn(t, "error response", string(raw), testPANs...)

			if n := vaultCount(t, s, `SELECT count(*) FROM vaulted_cards`); n != vaulted {
				t.Errorf("%d records vaulted", n-vaulted)
			}
			if n := auditCount(t, s, `action = 'vault'`); n != audited {
				t.Errorf("%d vaultings audited: the vault was reached", n-audited)
			}
			if n := coreRequests(s, http.MethodPost, "/payment-methods"); n != passedOn {
				t.Errorf("%d creations passed on to core-api", n-passedOn)
			}
			if n := vaultCount(t, s, `SELECT (SELECT count(*) FROM forward_configs) + (SELECT count(*) FROM forward_auth_methods)`); n != configs {
				t.Errorf("%d forward configs or methods stored", n-configs)
			}
		})
	}
}

// coreRequests counts core-api's access lines for method and path since
// the logs were last reset.
func coreRequests(s *stack.Stack, method, path string) int {
	n := 0
	for _, l := range s.Logs.Lines() {
		var a struct{ Msg, Service, Method, Path string }
		if json.Unmarshal([]byte(l), &a) == nil && a.Msg == logging.AccessMessage && a.Service == "core-api" && a.Method == method && a.Path == path {
			n++
		}
	}
	return n
}
