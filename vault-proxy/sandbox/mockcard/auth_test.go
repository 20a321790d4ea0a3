package mockcard_test

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// Every processor route needs an API key of the test form: none is 401
// missing_credentials, another is 401 invalid_credentials, and nothing is
// recorded; the key is never answered or logged.
func TestAPIKeys(t *testing.T) {
	s := start(t, mockcard.Config{})
	a := s.authorize(t, "auth-key", request(1000))
	cases := []struct {
		name, header string
		status       int
		code         string
	}{
		{"none", "", 401, mockcard.CodeMissingCredentials},
		{"not bearer", "Basic " + testAPIKey, 401, mockcard.CodeInvalidCredentials},
		{"live key", "Bearer mc_live_0123456789abcdef", 401, mockcard.CodeInvalidCredentials},
		{"too short", "Bearer mc_test_1", 401, mockcard.CodeInvalidCredentials},
		{"too long", "Bearer mc_test_" + strings.Repeat("k", 121), 401, mockcard.CodeInvalidCredentials},
		{"other characters", "Bearer mc_test_abc.def/ghi", 401, mockcard.CodeInvalidCredentials},
		{"test key", "Bearer mc_test_0123456789abcdef", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct{ method, path, key string }{
				{http.MethodPost, "/v1/authorizations", "auth-" + tc.name},
				{http.MethodGet, "/v1/authorizations/" + a.ID, ""},
				{http.MethodPost, "/v1/authorizations/" + a.ID + "/captures", "cap-" + tc.name},
			} {
				req, err := http.NewRequest(r.method, s.base+r.path, bodyReader(t, map[string]any{}))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				if r.key != "" {
					req.Header.Set("Idempotency-Key", r.key)
				}
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				resp, err := s.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if tc.status == 401 {
					if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
						t.Fatalf("%s %s: %d, want 401 with WWW-Authenticate", r.method, r.path, resp.StatusCode)
					}
					code, raw, _ := callWith(t, s, r.method, r.path, r.key, tc.header)
					apiError(t, code, raw, 401, tc.code)
				} else if resp.StatusCode == 401 {
					t.Fatalf("%s %s: refused a test key", r.method, r.path)
				}
			}
		})
	}
	if st := s.stats(t, "auth-none"); st.Key.Requests != 0 || st.Key.Charges != 0 {
		t.Fatalf("a refused key reached the authorization: %+v", *st.Key)
	}
	if strings.Contains(s.logs.String(), "0123456789abcdef") {
		t.Fatal("an API key was logged")
	}
}

// The descriptors an authorization is sent with are answered, so that a
// sandbox user sees what arrived; none is null.
func TestDescriptorsAreAnswered(t *testing.T) {
	s := start(t, mockcard.Config{})
	with := s.authorize(t, "desc-1", request(1000, field("merchant_descriptor", "ACME SHOP"), field("soft_descriptor", "ORDER 42")))
	if str(with.MerchantDescriptor) != "ACME SHOP" || str(with.SoftDescriptor) != "ORDER 42" {
		t.Fatalf("descriptors %s / %s", str(with.MerchantDescriptor), str(with.SoftDescriptor))
	}
	without := s.authorize(t, "desc-2", request(1000))
	if without.MerchantDescriptor != nil || without.SoftDescriptor != nil {
		t.Fatalf("descriptors without any sent: %s / %s", str(without.MerchantDescriptor), str(without.SoftDescriptor))
	}
}

// callWith is sim.call with the Authorization header h ("" for none).
func callWith(t *testing.T, s *sim, method, path, key, h string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, bodyReader(t, map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if h != "" {
		req.Header.Set("Authorization", h)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw, resp.Header
}

// The cart an authorization is sent with is recorded and answered as
// sent; none is an empty list.
func TestCartItemsAreAnswered(t *testing.T) {
	s := start(t, mockcard.Config{})
	sku := "SKU-1"
	items := []mockcard.CartItem{{Name: "Socks {{ blue }}", Quantity: 2, UnitAmount: 500, SKU: &sku, Categories: []string{"clothing"}}}
	with := s.authorize(t, "cart-1", request(1000, field("cart_items", items)))
	if !reflect.DeepEqual(with.CartItems, items) {
		t.Fatalf("cart items %+v, want %+v", with.CartItems, items)
	}
	if without := s.authorize(t, "cart-2", request(1000)); without.CartItems == nil || len(without.CartItems) != 0 {
		t.Fatalf("cart items without any sent: %#v", without.CartItems)
	}
}
