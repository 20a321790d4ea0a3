package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
)

// coreClient sends requests to one base URL as one merchant account.
type coreClient struct {
	s        *stack.Stack
	c        *http.Client
	base     string
	token    string
	merchant string // x-service-merchant-account-id; "" sends none
}

func newCore(s *stack.Stack, token, merchant string) coreClient {
	return coreClient{s: s, c: http.DefaultClient, base: s.CoreURL, token: token, merchant: merchant}
}

func (c coreClient) do(t testing.TB, method, path string, body any, header ...string) (int, []byte) {
	t.Helper()
	if c.merchant != "" {
		header = append([]string{"x-service-merchant-account-id", c.merchant}, header...)
	}
	return c.s.Do(t, c.c, method, c.base+path, c.token, body, header...)
}

// ok sends a request that must answer want and returns the decoded body.
func (c coreClient) ok(t testing.TB, want int, method, path string, body any) map[string]any {
	t.Helper()
	code, raw := c.do(t, method, path, body)
	if code != want {
		t.Fatalf("%s %s = %d, want %d: %s", method, path, code, want, raw)
	}
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return m
}

// apiError decodes an error envelope, failing the test if it is not one.
func apiError(t testing.TB, raw []byte) *apierror.Error {
	t.Helper()
	e, err := apierror.Parse(raw)
	if err != nil {
		t.Fatalf("not an error envelope: %s", raw)
	}
	return e
}

func buyerCount(t testing.TB, s *stack.Stack, merchant string) int {
	t.Helper()
	n, err := s.CoreAPI.DB.CountBuyers(context.Background(), merchant)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func createMerchantAccount(t testing.TB, s *stack.Stack, id string) {
	t.Helper()
	c := newCore(s, s.Token(t, "merchant-accounts.write"), "")
	c.ok(t, 201, "POST", "/merchant-accounts", map[string]any{"id": id, "display_name": "Merchant " + id})
}

func TestBuyerLifecycle(t *testing.T) {
	s := stack.Start(t)
	c := newCore(s, s.Token(t, "buyers.write"), "")

	b := c.ok(t, 201, "POST", "/buyers", map[string]any{
		"display_name":        "Ada Lovelace",
		"external_identifier": "cust-1",
		"account_number":      "acc-9",
		"billing_details": map[string]any{
			"first_name": "Ada", "last_name": "Lovelace", "email_address": "ada@example.com", "phone_number": "+442071234567",
			"address": map[string]any{"city": "London", "country": "GB", "postal_code": "N1 9GU", "state_code": "GB-LND", "line1": "1 Main St"},
			"tax_id":  map[string]any{"value": "GB123"},
		},
	})
	id, _ := b["id"].(string)
	if b["type"] != "buyer" || len(id) != 36 || b["merchant_account_id"] != "default" || b["display_name"] != "Ada Lovelace" ||
		b["external_identifier"] != "cust-1" || b["account_number"] != "acc-9" {
		t.Fatalf("created buyer %v", b)
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if ts, _ := b[k].(string); !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000000Z") {
			t.Fatalf("%s = %v", k, b[k])
		}
	}
	wantKeys := []string{"type", "id", "merchant_account_id", "display_name", "external_identifier", "account_number", "billing_details", "created_at", "updated_at"}
	if len(b) != len(wantKeys) {
		t.Fatalf("buyer keys %v", b)
	}
	addr := b["billing_details"].(map[string]any)["address"].(map[string]any)
	if addr["city"] != "London" || addr["line2"] != nil {
		t.Fatalf("address %v", addr)
	}
	if got := c.ok(t, 200, "GET", "/buyers/"+id, nil); !reflect.DeepEqual(got, b) {
		t.Fatalf("GET = %v\nwant %v", got, b)
	}

	// PUT: omitted stays, null clears, billing_details is replaced whole.
	u := c.ok(t, 200, "PUT", "/buyers/"+id, map[string]any{
		"account_number":  nil,
		"billing_details": map[string]any{"first_name": "Augusta"},
	})
	bd := u["billing_details"].(map[string]any)
	if u["display_name"] != "Ada Lovelace" || u["external_identifier"] != "cust-1" || u["account_number"] != nil ||
		bd["first_name"] != "Augusta" || bd["last_name"] != nil || bd["address"] != nil || u["created_at"] != b["created_at"] {
		t.Fatalf("updated buyer %v", u)
	}
	u = c.ok(t, 200, "PUT", "/buyers/"+id, map[string]any{"billing_details": nil})
	if u["billing_details"] != nil || u["display_name"] != "Ada Lovelace" {
		t.Fatalf("cleared billing_details %v", u)
	}
	// An empty body changes nothing.
	if got := c.ok(t, 200, "PUT", "/buyers/"+id, map[string]any{}); !reflect.DeepEqual(got, u) {
		t.Fatalf("empty PUT = %v\nwant %v", got, u)
	}

	c.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Charles Babbage", "external_identifier": "cust-2"})
	c.ok(t, 201, "POST", "/buyers", map[string]any{}) // everything is optional
	c.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "100%_sure"})

	// List: summary items, filters.
	l := c.ok(t, 200, "GET", "/buyers", nil)
	items := l["items"].([]any)
	if len(items) != 4 || l["limit"] != float64(20) || l["next_cursor"] != nil || l["previous_cursor"] != nil {
		t.Fatalf("list %v", l)
	}
	first := items[0].(map[string]any) // newest first
	if first["display_name"] != "100%_sure" || len(first) != 6 || first["type"] != "buyer" {
		t.Fatalf("list item %v", first)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"search=LOVE", []string{"Ada Lovelace"}},
		{"search=cust-", []string{"Charles Babbage", "Ada Lovelace"}},
		{"search=%25_", []string{"100%_sure"}}, // wildcards are literal
		{"search=_", []string{"100%_sure"}},
		{"external_identifier=cust-2", []string{"Charles Babbage"}},
		{"external_identifier=CUST-2", nil},
		{"search=nobody", nil},
	} {
		l := c.ok(t, 200, "GET", "/buyers?"+tc.query, nil)
		var names []string
		for _, it := range l["items"].([]any) {
			names = append(names, it.(map[string]any)["display_name"].(string))
		}
		if !reflect.DeepEqual(names, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, names, tc.want)
		}
	}

	c.ok(t, 204, "DELETE", "/buyers/"+id, nil)
	for _, m := range []string{"GET", "DELETE"} {
		code, raw := c.do(t, m, "/buyers/"+id, nil)
		if e := apiError(t, raw); code != 404 || e.Code != "not_found" {
			t.Fatalf("%s after delete: %d %s", m, code, raw)
		}
	}
	// The external_identifier is free again.
	c.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "cust-1"})
}

// One base URL: vault-proxy's public listener passes buyer routes through
// to core-api unchanged, errors included.
func TestBuyerThroughVaultProxy(t *testing.T) {
	s := stack.Start(t)
	c := newCore(s, s.Token(t, "buyers.write"), "")
	pc := coreClient{s: s, c: s.PublicClient, base: s.PublicURL, token: c.token}
	pb := pc.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Via proxy", "external_identifier": "proxy-1"})
	id := pb["id"].(string)
	if got := c.ok(t, 200, "GET", "/buyers/"+id, nil); !reflect.DeepEqual(got, pb) {
		t.Fatalf("GET from core-api = %v, want %v", got, pb)
	}
	code, raw := pc.do(t, "POST", "/buyers", map[string]any{"external_identifier": "proxy-1"})
	if e := apiError(t, raw); code != 409 || e.Code != "duplicate_record" || e.ResourceID != id {
		t.Fatalf("duplicate through proxy: %d %s", code, raw)
	}
	code, raw = pc.do(t, "POST", "/buyers", map[string]any{"billing_details": map[string]any{"address": map[string]any{"foo": 1}}})
	if e := apiError(t, raw); code != 400 || len(e.Details) != 1 || e.Details[0].Pointer != "/billing_details/address/foo" {
		t.Fatalf("bad body through proxy: %d %s", code, raw)
	}
	pc.ok(t, 200, "PUT", "/buyers/"+id, map[string]any{"display_name": nil})
	l := pc.ok(t, 200, "GET", "/buyers?limit=1", nil)
	if items := l["items"].([]any); len(items) != 1 || items[0].(map[string]any)["display_name"] != nil {
		t.Fatalf("list through proxy %v", l)
	}
	pc.ok(t, 204, "DELETE", "/buyers/"+id, nil)
}

func TestBuyerDuplicateExternalIdentifier(t *testing.T) {
	s := stack.Start(t)
	c := newCore(s, s.Token(t, "buyers.write"), "")
	a := c.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "dup"})
	b := c.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "other", "display_name": "B"})

	code, raw := c.do(t, "POST", "/buyers", map[string]any{"external_identifier": "dup", "display_name": "x"})
	if e := apiError(t, raw); code != 409 || e.Code != "duplicate_record" || e.ResourceID != a["id"] {
		t.Fatalf("POST duplicate: %d %s", code, raw)
	}
	code, raw = c.do(t, "PUT", "/buyers/"+b["id"].(string), map[string]any{"external_identifier": "dup", "display_name": "changed"})
	if e := apiError(t, raw); code != 409 || e.Code != "duplicate_record" || e.ResourceID != a["id"] {
		t.Fatalf("PUT duplicate: %d %s", code, raw)
	}
	if got := c.ok(t, 200, "GET", "/buyers/"+b["id"].(string), nil); !reflect.DeepEqual(got, b) {
		t.Fatalf("failed PUT changed the buyer: %v", got)
	}
	// Setting a buyer's own identifier again is no conflict; nulls never collide.
	c.ok(t, 200, "PUT", "/buyers/"+a["id"].(string), map[string]any{"external_identifier": "dup"})
	c.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": nil})
	c.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": nil})
	if n := buyerCount(t, s, "default"); n != 4 {
		t.Fatalf("%d buyers", n)
	}
}

// Every bad input gets a clear error in the envelope, and changes nothing.
func TestBuyerBadInput(t *testing.T) {
	s := stack.Start(t)
	writer := s.Token(t, "buyers.write")
	c := newCore(s, writer, "")
	existing := c.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Keep me", "external_identifier": "keep"})
	id := existing["id"].(string)
	before := buyerCount(t, s, "default")

	long := strings.Repeat("é", 201) // 201 characters, 402 bytes
	bd := func(fields map[string]any) map[string]any { return map[string]any{"billing_details": fields} }
	addr := func(fields map[string]any) map[string]any { return bd(map[string]any{"address": fields}) }
	type detail struct{ pointer, typ string }
	tests := []struct {
		name    string
		body    any
		status  int
		code    string
		details []detail // checked in order when set
	}{
		{"empty display_name", map[string]any{"display_name": ""}, 400, "bad_request", []detail{{"/display_name", "value_error.any_str.min_length"}}},
		{"long display_name", map[string]any{"display_name": long}, 400, "bad_request", []detail{{"/display_name", "value_error.any_str.max_length"}}},
		{"long external_identifier", map[string]any{"external_identifier": long}, 400, "bad_request", []detail{{"/external_identifier", "value_error.any_str.max_length"}}},
		{"empty account_number", map[string]any{"account_number": ""}, 400, "bad_request", []detail{{"/account_number", "value_error.any_str.min_length"}}},
		{"number for a string", map[string]any{"display_name": 5}, 400, "bad_request", []detail{{"/display_name", "type_error.str"}}},
		{"bool for a string", map[string]any{"external_identifier": true}, 400, "bad_request", []detail{{"/external_identifier", "type_error.str"}}},
		{"unknown field id", map[string]any{"id": "x"}, 400, "bad_request", []detail{{"/id", "value_error.extra"}}},
		{"type is not accepted", map[string]any{"type": "buyer"}, 400, "bad_request", []detail{{"/type", "value_error.extra"}}},
		{"merchant_account_id is not accepted", map[string]any{"merchant_account_id": "other"}, 400, "bad_request", []detail{{"/merchant_account_id", "value_error.extra"}}},
		{"field names are case-sensitive", map[string]any{"Display_Name": "x"}, 400, "bad_request", []detail{{"/Display_Name", "value_error.extra"}}},
		{"billing_details not an object", map[string]any{"billing_details": "x"}, 400, "bad_request", []detail{{"/billing_details", "type_error.dict"}}},
		{"unknown billing field", bd(map[string]any{"middle_name": "x"}), 400, "bad_request", []detail{{"/billing_details/middle_name", "value_error.extra"}}},
		{"unknown address field", addr(map[string]any{"foo": "x"}), 400, "bad_request", []detail{{"/billing_details/address/foo", "value_error.extra"}}},
		{"long first_name", bd(map[string]any{"first_name": long}), 400, "bad_request", []detail{{"/billing_details/first_name", "value_error.any_str.max_length"}}},
		{"email with display name", bd(map[string]any{"email_address": "Ada <ada@example.com>"}), 400, "bad_request", []detail{{"/billing_details/email_address", "value_error.email"}}},
		{"email in angle brackets", bd(map[string]any{"email_address": "<ada@example.com>"}), 400, "bad_request", []detail{{"/billing_details/email_address", "value_error.email"}}},
		{"not an email", bd(map[string]any{"email_address": "ada.example.com"}), 400, "bad_request", []detail{{"/billing_details/email_address", "value_error.email"}}},
		{"phone without plus", bd(map[string]any{"phone_number": "4155550100"}), 400, "bad_request", []detail{{"/billing_details/phone_number", "value_error.phone_number"}}},
		{"phone with leading zero", bd(map[string]any{"phone_number": "+04155550100"}), 400, "bad_request", []detail{{"/billing_details/phone_number", "value_error.phone_number"}}},
		{"phone too short", bd(map[string]any{"phone_number": "+12345"}), 400, "bad_request", []detail{{"/billing_details/phone_number", "value_error.phone_number"}}},
		{"phone too long", bd(map[string]any{"phone_number": "+1234567890123456"}), 400, "bad_request", []detail{{"/billing_details/phone_number", "value_error.phone_number"}}},
		{"country not assigned", addr(map[string]any{"country": "XX"}), 400, "bad_request", []detail{{"/billing_details/address/country", "value_error.country_code"}}},
		{"country lower case", addr(map[string]any{"country": "us"}), 400, "bad_request", []detail{{"/billing_details/address/country", "value_error.country_code"}}},
		{"country alpha-3", addr(map[string]any{"country": "USA"}), 400, "bad_request", []detail{{"/billing_details/address/country", "value_error.country_code"}}},
		{"state_code shape", addr(map[string]any{"state_code": "USCA"}), 400, "bad_request", []detail{{"/billing_details/address/state_code", "value_error.state_code"}}},
		{"state_code long subdivision", addr(map[string]any{"state_code": "US-CALI"}), 400, "bad_request", []detail{{"/billing_details/address/state_code", "value_error.state_code"}}},
		{"state_code unknown country", addr(map[string]any{"state_code": "ZZ-1"}), 400, "bad_request", []detail{{"/billing_details/address/state_code", "value_error.state_code"}}},
		{"state_code other country", addr(map[string]any{"country": "GB", "state_code": "US-CA"}), 400, "bad_request", []detail{{"/billing_details/address/state_code", "value_error.state_code.country_mismatch"}}},
		{"empty city", addr(map[string]any{"city": ""}), 400, "bad_request", []detail{{"/billing_details/address/city", "value_error.any_str.min_length"}}},
		{"address not an object", bd(map[string]any{"address": []any{}}), 400, "bad_request", []detail{{"/billing_details/address", "type_error.dict"}}},
		{"tax_id without value", bd(map[string]any{"tax_id": map[string]any{}}), 400, "bad_request", []detail{{"/billing_details/tax_id/value", "value_error.missing"}}},
		{"tax_id unknown field", bd(map[string]any{"tax_id": map[string]any{"value": "1", "kind": "x"}}), 400, "bad_request", []detail{{"/billing_details/tax_id/kind", "value_error.extra"}}},
		{"every problem at once", map[string]any{"display_name": "", "foo": 1, "billing_details": map[string]any{"phone_number": "1", "address": map[string]any{"country": "XX"}}},
			400, "bad_request", []detail{{"/foo", "value_error.extra"}}}, // shape errors come first, alone
		{"every value problem at once", map[string]any{"display_name": "", "billing_details": map[string]any{"phone_number": "1", "address": map[string]any{"country": "XX"}}},
			400, "bad_request", []detail{{"/display_name", "value_error.any_str.min_length"}, {"/billing_details/phone_number", "value_error.phone_number"}, {"/billing_details/address/country", "value_error.country_code"}}},
		{"duplicate field", `{"display_name":"a","display_name":"b"}`, 400, "bad_request", []detail{{"/display_name", "value_error.duplicate"}}},
		{"malformed JSON", `{"display_name":`, 400, "bad_request", []detail{{"", "value_error.jsondecode"}}},
		{"trailing data", `{} {}`, 400, "bad_request", []detail{{"", "value_error.jsondecode"}}},
		{"array body", `[]`, 400, "bad_request", []detail{{"", "type_error.dict"}}},
		{"null body", `null`, 400, "bad_request", []detail{{"", "type_error.none.not_allowed"}}},
		{"empty body", ``, 400, "bad_request", nil},
		{"invalid UTF-8", []byte("{\"display_name\":\"\xff\"}"), 400, "bad_request", nil},
		{"escaped pointer", map[string]any{"a/b~c": 1}, 400, "bad_request", []detail{{"/a~1b~0c", "value_error.extra"}}},
		{"too large", `{"display_name":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "too_large", nil},
	}
	for _, method := range []string{"POST", "PUT"} {
		path := "/buyers"
		if method == "PUT" {
			path += "/" + id
		}
		for _, tt := range tests {
			t.Run(method+" "+tt.name, func(t *testing.T) {
				code, raw := c.do(t, method, path, tt.body)
				e := apiError(t, raw)
				if code != tt.status || e.Status != tt.status || e.Code != tt.code || e.RequestID == "" {
					t.Fatalf("got %d %s", code, raw)
				}
				if tt.details == nil {
					return
				}
				if len(e.Details) != len(tt.details) {
					t.Fatalf("details %+v", e.Details)
				}
				for i, d := range tt.details {
					got := e.Details[i]
					if got.Location != "body" || got.Pointer != d.pointer || got.Type != d.typ || got.Message == "" {
						t.Fatalf("detail %d = %+v, want %+v", i, got, d)
					}
				}
			})
		}
	}

	// 200 characters (400 bytes) is fine: lengths count characters.
	ok := c.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": strings.Repeat("é", 200)})
	c.ok(t, 204, "DELETE", "/buyers/"+ok["id"].(string), nil)

	other := s.Token(t, "buyers.read")
	noMerchant := s.TokenFor(t, []string{"someone-else"}, "buyers.write")
	headers := []struct {
		name    string
		token   string
		method  string
		path    string
		body    any
		header  []string
		status  int
		code    string
		pointer string
	}{
		{"missing token", "", "POST", "/buyers", map[string]any{}, nil, 401, "unauthorized", ""},
		{"garbage token", "not-a-jwt", "POST", "/buyers", map[string]any{}, nil, 401, "unauthorized", ""},
		{"missing scope", other, "POST", "/buyers", map[string]any{}, nil, 403, "forbidden", ""},
		{"missing scope on PUT", other, "PUT", "/buyers/" + id, map[string]any{"display_name": "x"}, nil, 403, "forbidden", ""},
		{"missing scope on DELETE", other, "DELETE", "/buyers/" + id, nil, nil, 403, "forbidden", ""},
		{"token for another merchant", noMerchant, "POST", "/buyers", map[string]any{}, nil, 403, "forbidden", ""},
		{"unknown merchant account", writer, "POST", "/buyers", map[string]any{}, []string{"x-service-merchant-account-id", "nope"}, 404, "not_found", ""},
		{"bad merchant header", writer, "POST", "/buyers", map[string]any{}, []string{"x-service-merchant-account-id", "NOPE!"}, 400, "bad_request", "x-service-merchant-account-id"},
		{"wrong content type", writer, "POST", "/buyers", `{}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", ""},
		{"form content type", writer, "PUT", "/buyers/" + id, `display_name=x`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", ""},
		{"other charset", writer, "POST", "/buyers", `{}`, []string{"Content-Type", "application/json; charset=latin1"}, 415, "unsupported_media_type", ""},
		{"invalid buyer id", writer, "PUT", "/buyers/123", map[string]any{}, nil, 400, "bad_request", "buyer_id"},
		{"unknown buyer", writer, "PUT", "/buyers/00000000-0000-4000-8000-000000000000", map[string]any{"display_name": "x"}, nil, 404, "not_found", ""},
	}
	for _, tt := range headers {
		t.Run(tt.name, func(t *testing.T) {
			code, raw := s.Do(t, http.DefaultClient, tt.method, s.CoreURL+tt.path, tt.token, tt.body, tt.header...)
			e := apiError(t, raw)
			if code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %s", code, raw)
			}
			if tt.pointer != "" && (len(e.Details) != 1 || e.Details[0].Pointer != tt.pointer) {
				t.Fatalf("details %+v", e.Details)
			}
		})
	}
	// No content type at all.
	req, _ := http.NewRequest("POST", s.CoreURL+"/buyers", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+writer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Fatalf("no content type: %d", resp.StatusCode)
	}

	// Nothing changed.
	if n := buyerCount(t, s, "default"); n != before {
		t.Fatalf("%d buyers after failed requests, want %d", n, before)
	}
	if got := c.ok(t, 200, "GET", "/buyers/"+id, nil); !reflect.DeepEqual(got, existing) {
		t.Fatalf("failed requests changed the buyer:\n%v\nwant %v", got, existing)
	}
}
