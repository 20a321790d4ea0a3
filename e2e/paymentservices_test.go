package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// The test secrets: never in an answer, a log line or the core database.
const (
	psKeyA = "mc_test_e2eSECRETkeyAAAA"
	psKeyB = "mc_test_e2eSECRETkeyBBBB"
)

// mockCardService is a POST /payment-services body for mock-card.
func mockCardService(name, key, descriptor string) map[string]any {
	return map[string]any{"connector": "mock-card", "display_name": name,
		"settings": map[string]any{"merchant_descriptor": descriptor}, "credentials": map[string]any{"api_key": key}}
}

// processorRecord reads mock-card's authorization id as the processor
// keeps it, with the built-in sandbox key (mock-card takes any test key).
func processorRecord(t *testing.T, s *stack.Stack, id string) mockcard.Authorization {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.MockCard.URL()+"/v1/authorizations/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+connector.MockCardSandboxAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a mockcard.Authorization
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("mock-card authorization %s: %d %v", id, resp.StatusCode, err)
	}
	return a
}

func TestPaymentServices(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-services.write", "payment-methods.write", "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	var answers [][]byte // every payment service answer, searched for the secrets at the end

	create := func(t *testing.T, body map[string]any) map[string]any {
		t.Helper()
		code, raw := core.do(t, http.MethodPost, "/payment-services", body)
		answers = append(answers, raw)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, raw)
		}
		return m
	}

	var a, b map[string]any
	t.Run("create, read, list: credentials write-only", func(t *testing.T) {
		a = create(t, mockCardService("Mock A", psKeyA, "SHOP A"))
		if a["type"] != "payment-service" || a["connector"] != "mock-card" || a["method"] != "card" || a["active"] != true ||
			a["default"] != false || a["merchant_account_id"] != "default" || a["credentials"] != nil {
			t.Fatalf("created: %v", a)
		}
		if set := a["credentials_set"].([]any); len(set) != 1 || set[0] != "api_key" {
			t.Fatalf("credentials_set: %v", a["credentials_set"])
		}
		if a["settings"].(map[string]any)["merchant_descriptor"] != "SHOP A" {
			t.Fatalf("settings: %v", a["settings"])
		}
		got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-services/"+a["id"].(string), nil)
		if got["id"] != a["id"] || got["display_name"] != "Mock A" || got["credentials"] != nil {
			t.Fatalf("get: %v", got)
		}
		b = create(t, mockCardService("Mock B", psKeyB, "SHOP B"))
		page := core.ok(t, http.StatusOK, http.MethodGet, "/payment-services?limit=1", nil)
		items := page["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["id"] != b["id"] || page["next_cursor"] == nil {
			t.Fatalf("first page: %v", page)
		}
		next := core.ok(t, http.StatusOK, http.MethodGet, "/payment-services?limit=1&cursor="+page["next_cursor"].(string), nil)
		if items := next["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != a["id"] {
			t.Fatalf("second page: %v", next)
		}
	})

	t.Run("refused requests", func(t *testing.T) {
		long := strings.Repeat("A", 23)
		with := func(k string, v any) map[string]any {
			body := mockCardService("X", psKeyA, "SHOP")
			body[k] = v
			return body
		}
		cases := []struct {
			name, method, path string
			body               any
			status             int
			code               string
			pointers           []string
		}{
			{"unknown connector", "POST", "/payment-services", with("connector", "stripe"), 400, "bad_request", []string{"/connector"}},
			{"no connector", "POST", "/payment-services", map[string]any{"credentials": map[string]any{"api_key": psKeyA}}, 400, "bad_request", []string{"/connector"}},
			{"another method", "POST", "/payment-services", with("method", "bank"), 400, "bad_request", []string{"/method"}},
			{"no credentials", "POST", "/payment-services", map[string]any{"connector": "mock-card"}, 400, "bad_request", []string{"/credentials"}},
			{"api key missing", "POST", "/payment-services", with("credentials", map[string]any{}), 400, "bad_request", []string{"/credentials/api_key"}},
			{"api key too short", "POST", "/payment-services", with("credentials", map[string]any{"api_key": "abc"}), 400, "bad_request", []string{"/credentials/api_key"}},
			{"unknown credential", "POST", "/payment-services", with("credentials", map[string]any{"api_key": psKeyA, "password": "x"}), 400, "bad_request", []string{"/credentials/password"}},
			{"unknown setting", "POST", "/payment-services", with("settings", map[string]any{"timeout": 3}), 400, "bad_request", []string{"/settings/timeout"}},
			{"descriptor too long", "POST", "/payment-services", with("settings", map[string]any{"merchant_descriptor": long}), 400, "bad_request", []string{"/settings/merchant_descriptor"}},
			{"descriptor of another type", "POST", "/payment-services", with("settings", map[string]any{"merchant_descriptor": 7}), 400, "bad_request", []string{"/settings/merchant_descriptor"}},
			{"default while inactive", "POST", "/payment-services", func() map[string]any {
				m := with("default", true)
				m["active"] = false
				return m
			}(), 400, "bad_request", []string{"/default"}},
			{"unknown field", "POST", "/payment-services", with("colour", "red"), 400, "bad_request", []string{"/colour"}},
			{"display name empty", "POST", "/payment-services", with("display_name", ""), 400, "bad_request", []string{"/display_name"}},
			{"connector is fixed", "PUT", "/payment-services/" + a["id"].(string), map[string]any{"connector": "mock-card"}, 400, "bad_request", []string{"/connector"}},
			{"null credentials", "PUT", "/payment-services/" + a["id"].(string), map[string]any{"credentials": nil}, 400, "bad_request", []string{"/credentials"}},
			{"id not a UUID", "GET", "/payment-services/nope", nil, 400, "bad_request", []string{"payment_service_id"}},
			{"unknown id", "GET", "/payment-services/00000000-0000-4000-8000-000000000000", nil, 404, "not_found", nil},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := core.do(t, tc.method, tc.path, tc.body)
				answers = append(answers, raw)
				e := apiError(t, raw)
				var ptrs []string
				for _, d := range e.Details {
					ptrs = append(ptrs, d.Pointer)
				}
				if code != tc.status || e.Code != tc.code || !slices.Equal(ptrs, tc.pointers) {
					t.Fatalf("%d %s, want %d %s at %v", code, raw, tc.status, tc.code, tc.pointers)
				}
			})
		}
		readOnly := newCore(s, s.Token(t, "payment-services.read"), "")
		if code, raw := readOnly.do(t, http.MethodPost, "/payment-services", mockCardService("X", psKeyA, "S")); code != http.StatusForbidden {
			t.Fatalf("create with a read scope: %d %s", code, raw)
		}
		createMerchantAccount(t, s, "other")
		other := newCore(s, s.TokenFor(t, []string{"other"}, "payment-services.write"), "other")
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			var body any
			if m == http.MethodPut {
				body = map[string]any{"active": false}
			}
			if code, raw := other.do(t, m, "/payment-services/"+a["id"].(string), body); code != http.StatusNotFound {
				t.Fatalf("%s another account's payment service: %d %s", m, code, raw)
			}
		}
	})

	t.Run("partial update and default switching", func(t *testing.T) {
		got := core.ok(t, http.StatusOK, http.MethodPut, "/payment-services/"+a["id"].(string), map[string]any{"display_name": nil, "default": true})
		if got["display_name"] != nil || got["default"] != true || got["settings"].(map[string]any)["merchant_descriptor"] != "SHOP A" {
			t.Fatalf("update: %v", got)
		}
		got = core.ok(t, http.StatusOK, http.MethodPut, "/payment-services/"+b["id"].(string), map[string]any{"default": true})
		if got["default"] != true {
			t.Fatalf("b made the default: %v", got)
		}
		if got := core.ok(t, http.StatusOK, http.MethodGet, "/payment-services/"+a["id"].(string), nil); got["default"] != false {
			t.Fatalf("a is still the default: %v", got)
		}
		if code, raw := core.do(t, http.MethodPut, "/payment-services/"+b["id"].(string), map[string]any{"active": false}); code != http.StatusBadRequest ||
			apiError(t, raw).Details[0].Pointer != "/active" {
			t.Fatalf("deactivating the default alone: %d %s", code, raw)
		}
	})

	pm := vaultCard(t, s, tok, "4111111111111111", "123")["id"].(string)

	t.Run("routing: the default, by id, and only the connector's own connection options", func(t *testing.T) {
		body := payment(pm, 1200)
		body["connection_options"] = map[string]any{"mock-card": map[string]any{"soft_descriptor": "ORDER 42"},
			"another-connector": map[string]any{"soft_descriptor": "NOT FOR MOCK CARD"}}
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["payment_service_id"] != b["id"] {
			t.Fatalf("by default: %d %v", code, tx)
		}
		if ps := tx["payment_service"].(map[string]any); ps["id"] != b["id"] || ps["connector"] != "mock-card" || ps["display_name"] != "Mock B" {
			t.Fatalf("payment_service: %v", ps)
		}
		rec := processorRecord(t, s, tx["payment_service_transaction_id"].(string))
		if rec.MerchantDescriptor == nil || *rec.MerchantDescriptor != "SHOP B" || rec.SoftDescriptor == nil || *rec.SoftDescriptor != "ORDER 42" {
			t.Fatalf("what reached mock-card: %v / %v", rec.MerchantDescriptor, rec.SoftDescriptor)
		}

		body = payment(pm, 1300)
		body["payment_service_id"] = a["id"]
		code, tx = pay(t, s, tok, body)
		if code != http.StatusCreated || tx["payment_service_id"] != a["id"] || tx["payment_service"].(map[string]any)["display_name"] != nil {
			t.Fatalf("by id: %d %v", code, tx)
		}
		if rec := processorRecord(t, s, tx["payment_service_transaction_id"].(string)); *rec.MerchantDescriptor != "SHOP A" || rec.SoftDescriptor != nil {
			t.Fatalf("what reached mock-card: %v / %v", rec.MerchantDescriptor, rec.SoftDescriptor)
		}

		body = payment(pm, 1400)
		body["connection_options"] = map[string]any{"mock-card": map[string]any{"soft_descriptor": "{{ CARD_NUMBER_1 }}"}}
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body)
		if e := apiError(t, raw); code != http.StatusBadRequest || e.Details[0].Pointer != "/connection_options/mock-card/soft_descriptor" {
			t.Fatalf("a bad connection option: %d %s", code, raw)
		}
	})

	t.Run("captures and refunds go through the authorizing payment service, deleted or not", func(t *testing.T) {
		body := payment(pm, 2000)
		body["payment_service_id"] = a["id"]
		_, tx := pay(t, s, tok, body)
		if code, raw := core.do(t, http.MethodDelete, "/payment-services/"+a["id"].(string), nil); code != http.StatusNoContent || len(raw) != 0 {
			t.Fatalf("delete: %d %s", code, raw)
		}
		core.ok(t, http.StatusNotFound, http.MethodGet, "/payment-services/"+a["id"].(string), nil)
		captured := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+tx["id"].(string)+"/capture", nil)
		if captured["status"] != "capture_succeeded" || captured["payment_service"].(map[string]any)["id"] != a["id"] {
			t.Fatalf("capture: %v", captured)
		}
		body = payment(pm, 100)
		body["payment_service_id"] = a["id"]
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body)
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "payment_service_not_found" || e.Details[0].Pointer != "/payment_service_id" {
			t.Fatalf("paying with a deleted payment service: %d %s", code, raw)
		}
	})

	t.Run("a wrong api key: authorization_failed, invalid_credentials", func(t *testing.T) {
		wrong := create(t, mockCardService("Wrong key", "mc_live_notAtestKey1", "SHOP W"))
		body := payment(pm, 1500)
		body["payment_service_id"] = wrong["id"]
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated || tx["status"] != "authorization_failed" || tx["error_code"] != "invalid_credentials" ||
			tx["raw_response_code"] != "invalid_credentials" || tx["authorized_amount"] != 0.0 {
			t.Fatalf("wrong key: %d %v", code, tx)
		}
	})

	t.Run("an inactive payment service: 422", func(t *testing.T) {
		inactive := create(t, func() map[string]any {
			m := mockCardService("Off", psKeyA, "SHOP O")
			m["active"] = false
			return m
		}())
		body := payment(pm, 1600)
		body["payment_service_id"] = inactive["id"]
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body)
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "payment_service_inactive" || e.Details[0].Pointer != "/payment_service_id" {
			t.Fatalf("inactive: %d %s", code, raw)
		}
	})

	t.Run("without a payment service or a default: the built-in sandbox mock-card", func(t *testing.T) {
		core.ok(t, http.StatusOK, http.MethodPut, "/payment-services/"+b["id"].(string), map[string]any{"default": false})
		code, tx := pay(t, s, tok, payment(pm, 1700))
		if code != http.StatusCreated || tx["status"] != "authorization_succeeded" || tx["payment_service_id"] != nil || tx["payment_service"] != nil {
			t.Fatalf("built-in: %d %v", code, tx)
		}
		if rec := processorRecord(t, s, tx["payment_service_transaction_id"].(string)); rec.MerchantDescriptor != nil {
			t.Fatalf("the built-in configuration sent a descriptor: %v", *rec.MerchantDescriptor)
		}
	})

	for _, secret := range []string{psKeyA, psKeyB, "e2eSECRET"} {
		for _, raw := range answers {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("an answer carries a credential: %s", raw)
			}
		}
		if strings.Contains(s.Logs.String(), secret) {
			t.Fatal("a log line carries a credential")
		}
		if strings.Contains(s.Dump(t, "core"), secret) {
			t.Fatal("the core database holds a credential in the clear")
		}
	}
}
