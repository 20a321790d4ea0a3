package mockbank

import (
	"net/http"
	"testing"
)

// Each refusal of the mandate and debit API, with its documented code.
func TestBankRefusals(t *testing.T) {
	m, srv := start(t)
	t.Cleanup(func() { _ = m.Close() })
	notify := srv.URL + "/notifications"
	_, mandate := call(t, http.MethodPost, srv.URL+"/v1/mandates", key,
		map[string]any{"reference": "pm-1", "scheme": "sepa", "currency": "EUR", "account_holder_name": "E", "notification_url": notify})
	mid, _ := mandate["id"].(string)
	if mandate["status"] != MandatePending || mid == "" {
		t.Fatalf("mandate %v", mandate)
	}
	debit := func(mut func(map[string]any)) map[string]any {
		b := map[string]any{"reference": "tx-1", "account": "pm-1", "scheme": "sepa", "amount": 100, "currency": "EUR", "notification_url": notify}
		mut(b)
		return b
	}
	for _, tc := range []struct {
		name   string
		method string
		path   string
		key    string
		body   any
		status int
		code   string
	}{
		{"no key", http.MethodPost, "/v1/mandates", "", map[string]any{}, 401, "invalid_api_key"},
		{"mandate: unknown field", http.MethodPost, "/v1/mandates", key, map[string]any{"iban": "x"}, 400, "invalid_json"},
		{"mandate: no reference", http.MethodPost, "/v1/mandates", key, map[string]any{"scheme": "ach", "notification_url": notify}, 400, "invalid_reference"},
		{"mandate: scheme", http.MethodPost, "/v1/mandates", key, map[string]any{"reference": "r", "scheme": "swift", "notification_url": notify}, 400, "unsupported_scheme"},
		{"mandate: url", http.MethodPost, "/v1/mandates", key, map[string]any{"reference": "r", "scheme": "ach", "notification_url": "ftp://x"}, 400, "invalid_notification_url"},
		{"mandate: another key's", http.MethodGet, "/v1/mandates/" + mid, "mb_test_another_key", nil, 404, "mandate_not_found"},
		{"revoke: unknown", http.MethodPost, "/v1/mandates/mbm_unknown/revoke", key, nil, 404, "mandate_not_found"},
		{"debit: amount", http.MethodPost, "/v1/debits", key, debit(func(b map[string]any) { b["amount"] = 0 }), 400, "invalid_amount"},
		{"debit: account", http.MethodPost, "/v1/debits", key, debit(func(b map[string]any) { delete(b, "account") }), 400, "invalid_account"},
		{"debit: currency", http.MethodPost, "/v1/debits", key, debit(func(b map[string]any) { b["currency"] = "GBP" }), 400, "unsupported_currency"},
		{"debit: cart items not an array", http.MethodPost, "/v1/debits", key, debit(func(b map[string]any) { b["cart_items"] = "kettle" }), 400, "invalid_cart_items"},
		{"debit: unknown mandate", http.MethodPost, "/v1/debits", key, debit(func(b map[string]any) { b["mandate_id"] = "mbm_unknown" }), 404, "mandate_not_found"},
		{"debit: pending mandate", http.MethodPost, "/v1/debits", key, debit(func(b map[string]any) { b["mandate_id"] = mid }), 422, "mandate_not_active"},
		{"debit: unknown", http.MethodGet, "/v1/debits/mbd_unknown", key, nil, 404, "debit_not_found"},
		{"sandbox: token of a pending mandate", http.MethodPost, "/sandbox/mandates/" + mid + "/recurring-token", "", nil, 409, "mandate_pending"},
		{"sandbox: unknown mandate", http.MethodPost, "/sandbox/mandates/mbm_unknown/activate", "", nil, 404, "mandate_not_found"},
		{"sandbox: unknown debit", http.MethodPost, "/sandbox/debits/mbd_unknown/notify", "", nil, 404, "debit_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := call(t, tc.method, srv.URL+tc.path, tc.key, tc.body)
			if status != tc.status || out["error"] != tc.code {
				t.Fatalf("%d %v, want %d %s", status, out, tc.status, tc.code)
			}
		})
	}
	// Nothing refused was recorded as a debit.
	if _, out := call(t, http.MethodGet, srv.URL+"/v1/debits", key, nil); len(out["items"].([]any)) != 0 {
		t.Fatalf("debits %v", out)
	}
}
