package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
)

// pmScopes is what a merchant's server uses for payment methods and buyers.
var pmScopes = []string{"payment-methods.write", "buyers.write"}

// publicCore sends requests through vault-proxy's public listener (where
// card and bank data enter) as one merchant account.
func publicCore(s *stack.Stack, token, merchant string) coreClient {
	return coreClient{s: s, c: s.PublicClient, base: s.PublicURL, token: token, merchant: merchant}
}

// internalCard asks vault-proxy's internal listener for a token's metadata.
func internalCard(t *testing.T, s *stack.Stack, merchant, id string) (int, zone.CardMetadata) {
	t.Helper()
	code, raw := s.Do(t, s.InternalClient, http.MethodGet, s.InternalURL+"/internal/cards/"+id, "", nil, accountid.Header, merchant)
	var m zone.CardMetadata
	if code == 200 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
	}
	return code, m
}

// expiryIn returns MM/YY years from now.
func expiryIn(years int) string { return time.Now().AddDate(years, 0, 0).Format("01/06") }

// responses collects every body a test saw, to search for card numbers.
type responses []string

func (r *responses) add(raw []byte) []byte { *r = append(*r, string(raw)); return raw }

func (r *responses) addMap(m map[string]any) map[string]any {
	raw, _ := json.Marshal(m)
	r.add(raw)
	return m
}

func (r responses) assertNoPAN(t *testing.T, pans ...string) {
	t.Helper()
	for i, body := range r {
		logging.AssertNoPANIn(t, fmt.Sprintf("response %d", i), body, pans...)
	}
}

func TestPaymentMethodLifecycle(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	core := newCore(s, tok, "")
	pub := publicCore(s, tok, "")
	var seen responses

	buyer := seen.addMap(core.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "pm-buyer"}))
	buyerID := buyer["id"].(string)

	exp := expiryIn(3)
	pm := seen.addMap(pub.ok(t, 201, "POST", "/payment-methods", map[string]any{
		"method": "card", "number": "4111111111111111", "expiration_date": exp, "security_code": "123",
		"buyer_id": buyerID, "external_identifier": "card-ref-1",
	}))
	id := pm["id"].(string)
	details, _ := pm["details"].(map[string]any)
	b, _ := pm["buyer"].(map[string]any)
	if pm["type"] != "payment-method" || pm["merchant_account_id"] != "default" || pm["method"] != "card" || pm["status"] != "succeeded" ||
		pm["scheme"] != "visa" || pm["label"] != "1111" || details["bin"] != "41111111" || len(details) != 2 ||
		pm["expiration_date"] != exp || pm["fingerprint"] == nil || pm["external_identifier"] != "card-ref-1" ||
		b["id"] != buyerID || b["external_identifier"] != "pm-buyer" || pm["scheme_transaction_id"] != nil ||
		pm["last_used_at"] != nil || pm["usage_count"] != 0.0 || pm["cit_last_used_at"] != nil || pm["cit_usage_count"] != 0.0 ||
		pm["created_at"] == nil || pm["updated_at"] == nil || pm["mandate"] != nil {
		t.Fatalf("created payment method %v", pm)
	}
	// The record matches the vault's metadata, not anything the client said.
	code, meta := internalCard(t, s, "default", id)
	if code != 200 || meta.Fingerprint != pm["fingerprint"] || meta.BIN != details["bin"] {
		t.Fatalf("vault metadata %d %+v", code, meta)
	}

	got := seen.addMap(core.ok(t, 200, "GET", "/payment-methods/"+id, nil))
	if fmt.Sprint(got) != fmt.Sprint(pm) {
		t.Fatalf("GET = %v\nwant %v", got, pm)
	}

	// A second card of the same buyer, and one without a buyer.
	pm2 := seen.addMap(pub.ok(t, 201, "POST", "/payment-methods", map[string]any{
		"method": "card", "number": "5555555555554444", "expiration_date": exp, "buyer_external_identifier": "pm-buyer"}))
	pm3 := seen.addMap(pub.ok(t, 201, "POST", "/payment-methods", map[string]any{
		"method": "card", "number": "378282246310005", "expiration_date": exp}))
	if pm2["buyer"].(map[string]any)["id"] != buyerID || pm3["buyer"] != nil {
		t.Fatalf("buyers: %v / %v", pm2["buyer"], pm3["buyer"])
	}

	// Lists: paginated, newest first, filtered by buyer.
	all := seen.addMap(core.ok(t, 200, "GET", "/payment-methods?limit=2", nil))
	items := all["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["id"] != pm3["id"] || all["next_cursor"] == nil {
		t.Fatalf("first page %v", all)
	}
	next := seen.addMap(core.ok(t, 200, "GET", "/payment-methods?limit=2&cursor="+url.QueryEscape(all["next_cursor"].(string)), nil))
	if items := next["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id || next["next_cursor"] != nil {
		t.Fatalf("second page %v", next)
	}
	mine := seen.addMap(core.ok(t, 200, "GET", "/payment-methods?buyer_id="+buyerID, nil))
	if items := mine["items"].([]any); len(items) != 2 {
		t.Fatalf("buyer's list %v", mine)
	}
	summaries := seen.addMap(core.ok(t, 200, "GET", "/buyers/payment-methods?buyer_external_identifier=pm-buyer", nil))
	sitems := summaries["items"].([]any)
	if len(sitems) != 2 || len(summaries) != 1 {
		t.Fatalf("buyer payment methods %v", summaries)
	}
	for _, it := range sitems {
		m := it.(map[string]any)
		if m["method"] != "card" || m["label"] == nil || m["expiration_date"] != exp || m["scheme"] == nil || m["details"] != nil {
			t.Fatalf("summary %v", m)
		}
	}
	if _, err := s.CoreAPI.DB.PaymentMethod(context.Background(), "default", id); err != nil {
		t.Fatal(err)
	}
	// Usage recorded by a (future) transaction puts the card first.
	if err := s.CoreAPI.DB.RecordUsage(context.Background(), "default", id, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	summaries = seen.addMap(core.ok(t, 200, "GET", "/buyers/payment-methods?buyer_id="+buyerID, nil))
	if first := summaries["items"].([]any)[0].(map[string]any); first["id"] != id || first["usage_count"] != 1.0 || first["cit_usage_count"] != 1.0 {
		t.Fatalf("most recently used first: %v", summaries)
	}

	// PUT: partial; the vault has the new expiry before core answers.
	newExp := expiryIn(5)
	u := seen.addMap(core.ok(t, 200, "PUT", "/payment-methods/"+id, map[string]any{
		"expiration_date": newExp, "scheme_transaction_id": "123456789012345", "scheme_transaction_id_scheme": "visa"}))
	if u["expiration_date"] != newExp || u["scheme_transaction_id"] != "123456789012345" || u["scheme_transaction_id_scheme"] != "visa" ||
		u["external_identifier"] != "card-ref-1" || u["created_at"] != pm["created_at"] {
		t.Fatalf("updated %v", u)
	}
	if code, meta := internalCard(t, s, "default", id); code != 200 || meta.ExpirationDate != newExp {
		t.Fatalf("vault expiry after PUT: %d %q", code, meta.ExpirationDate)
	}
	if g := seen.addMap(core.ok(t, 200, "GET", "/payment-methods/"+id, nil)); g["expiration_date"] != newExp {
		t.Fatalf("GET after PUT %v", g)
	}
	u = seen.addMap(core.ok(t, 200, "PUT", "/payment-methods/"+id, map[string]any{"scheme_transaction_id": nil}))
	if u["scheme_transaction_id"] != nil || u["scheme_transaction_id_scheme"] != "visa" || u["expiration_date"] != newExp {
		t.Fatalf("null clears only that field: %v", u)
	}
	u = seen.addMap(core.ok(t, 200, "PUT", "/payment-methods/"+id, map[string]any{}))
	if u["expiration_date"] != newExp {
		t.Fatalf("empty PUT %v", u)
	}

	// DELETE: shredded in the vault, gone from core; a second DELETE is 404.
	if code, raw := core.do(t, "DELETE", "/payment-methods/"+id, nil); code != 204 || len(raw) != 0 {
		t.Fatalf("DELETE = %d %s", code, raw)
	}
	if code, raw := core.do(t, "GET", "/payment-methods/"+id, nil); code != 404 || apiError(t, seen.add(raw)).Code != "not_found" {
		t.Fatalf("GET after DELETE = %d %s", code, raw)
	}
	if code, _ := internalCard(t, s, "default", id); code != 404 {
		t.Fatalf("vault still has the card: %d", code)
	}
	if code, raw := core.do(t, "DELETE", "/payment-methods/"+id, nil); code != 404 {
		t.Fatalf("second DELETE = %d %s", code, raw)
	}
	if code, raw := core.do(t, "DELETE", "/payment-methods/"+pm2["id"].(string), nil); code != 204 {
		t.Fatalf("DELETE = %d %s", code, raw)
	}

	seen.assertNoPAN(t, testPANs...)
	assertNoCardDataLogged(t, s, testPANs...)
	logging.AssertNoPANIn(t, "core database dump", s.Dump(t, "core"), testPANs...)
}

// A request that reaches core-api with card or bank data is refused with a
// pointer at the field, and nothing is stored or echoed.
func TestPaymentMethodDirectCardDataIsRefused(t *testing.T) {
	s := stack.Start(t)
	core := newCore(s, s.Token(t, pmScopes...), "")
	var seen responses
	vaulted := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")
	id := vaulted["id"].(string)
	before := countRows(t, s.DBs.CoreDSN, "payment_methods")

	for _, field := range []string{"number", "security_code", "account_number", "iban", "pin"} {
		for _, tc := range []struct {
			method, path string
			body         map[string]any
		}{
			{"POST", "/payment-methods", map[string]any{"method": "card", "id": uuid.NewString(), field: "4111111111111111", "expiration_date": expiryIn(2)}},
			{"POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "scheme": "ach", field: "5555555555554444"}},
			{"PUT", "/payment-methods/" + id, map[string]any{field: "378282246310005"}},
		} {
			t.Run(field+" "+tc.method, func(t *testing.T) {
				code, raw := core.do(t, tc.method, tc.path, tc.body)
				e := apiError(t, seen.add(raw))
				if code != 400 || e.Code != "bad_request" || e.Message != "card data must be sent through vault-proxy" ||
					len(e.Details) != 1 || e.Details[0].Pointer != "/"+field || e.Details[0].Location != "body" {
					t.Fatalf("%d %s", code, raw)
				}
			})
		}
	}
	if n := countRows(t, s.DBs.CoreDSN, "payment_methods"); n != before {
		t.Fatalf("payment_methods rows %d -> %d", before, n)
	}
	if g := core.ok(t, 200, "GET", "/payment-methods/"+id, nil); g["expiration_date"] != vaulted["expiration_date"] {
		t.Fatalf("refused PUT changed the card: %v", g)
	}
	seen.assertNoPAN(t, testPANs...)
	assertNoCardDataLogged(t, s, testPANs...)
	logging.AssertNoPANIn(t, "core database dump", s.Dump(t, "core"), testPANs...)
}

// A token vaulted for one merchant account is useless to another: it cannot
// be registered, read, changed or deleted there.
func TestPaymentMethodTokenOfAnotherMerchantIsNotUsable(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "other")
	tok := s.Token(t, pmScopes...)
	theirs := publicCore(s, tok, "other").ok(t, 201, "POST", "/payment-methods", map[string]any{
		"method": "card", "number": "4111111111111111", "expiration_date": expiryIn(2)})
	id := theirs["id"].(string)
	if theirs["merchant_account_id"] != "other" {
		t.Fatalf("%v", theirs)
	}
	core := newCore(s, tok, "")
	code, raw := core.do(t, "POST", "/payment-methods", map[string]any{"method": "card", "id": id})
	if e := apiError(t, raw); code != 400 || len(e.Details) != 1 || e.Details[0].Pointer != "/id" {
		t.Fatalf("registering another merchant's token = %d %s", code, raw)
	}
	for _, req := range []struct{ method, path string }{{"GET", "/payment-methods/" + id}, {"DELETE", "/payment-methods/" + id}} {
		if code, raw := core.do(t, req.method, req.path, nil); code != 404 {
			t.Fatalf("%s = %d %s", req.method, code, raw)
		}
	}
	if code, raw := core.do(t, "PUT", "/payment-methods/"+id, map[string]any{"expiration_date": expiryIn(4)}); code != 404 {
		t.Fatalf("PUT = %d %s", code, raw)
	}
	// Still intact for its owner.
	if code, m := internalCard(t, s, "other", id); code != 200 || m.ExpirationDate != theirs["expiration_date"] {
		t.Fatalf("owner's card: %d %+v", code, m)
	}
	newCore(s, tok, "other").ok(t, 200, "GET", "/payment-methods/"+id, nil)
	// A token restricted to the default account cannot act in "other".
	limited := newCore(s, s.TokenFor(t, []string{"default"}, pmScopes...), "other")
	if code, _ := limited.do(t, "GET", "/payment-methods/"+id, nil); code != 403 {
		t.Fatalf("restricted token = %d", code)
	}
}

func TestPaymentMethodBadRequests(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	core := newCore(s, tok, "")
	card := vaultCard(t, s, tok, "4111111111111111", "")
	cardID := card["id"].(string)
	gift := publicCore(s, tok, "").ok(t, 201, "POST", "/payment-methods", map[string]any{"method": "gift-card", "number": "6006491234567890", "pin": "1234"})
	giftID := gift["id"].(string)
	core.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "known"})
	long := strings.Repeat("x", 201)
	before := countRows(t, s.DBs.CoreDSN, "payment_methods")

	type want struct {
		status  int
		code    string
		pointer string // "" for no detail checked
	}
	cases := []struct {
		name, method, path string
		body               any
		want               want
	}{
		{"method missing", "POST", "/payment-methods", map[string]any{"id": uuid.NewString()}, want{400, "bad_request", "/method"}},
		{"method unknown", "POST", "/payment-methods", map[string]any{"method": "paypal", "id": uuid.NewString()}, want{400, "bad_request", "/method"}},
		{"method not a string", "POST", "/payment-methods", map[string]any{"method": 1, "id": uuid.NewString()}, want{400, "bad_request", "/method"}},
		{"id missing", "POST", "/payment-methods", map[string]any{"method": "card"}, want{400, "bad_request", "/id"}},
		{"id not a uuid", "POST", "/payment-methods", map[string]any{"method": "card", "id": "tok_123"}, want{400, "bad_request", "/id"}},
		{"id unknown to the vault", "POST", "/payment-methods", map[string]any{"method": "card", "id": uuid.NewString()}, want{400, "bad_request", "/id"}},
		{"id is a gift card", "POST", "/payment-methods", map[string]any{"method": "card", "id": giftID}, want{400, "bad_request", "/method"}},
		{"id is a card", "POST", "/payment-methods", map[string]any{"method": "gift-card", "id": cardID}, want{400, "bad_request", "/method"}},
		{"unknown field", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "label": "9999"}, want{400, "bad_request", "/label"}},
		{"display data from the client", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "scheme": "amex"}, want{400, "bad_request", "/scheme"}},
		{"buyer_id unknown", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "buyer_id": uuid.NewString()}, want{400, "bad_request", "/buyer_id"}},
		{"buyer_id not a uuid", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "buyer_id": "b1"}, want{400, "bad_request", "/buyer_id"}},
		{"buyer_external_identifier unknown", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "buyer_external_identifier": "nobody"}, want{400, "bad_request", "/buyer_external_identifier"}},
		{"external_identifier too long", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "external_identifier": long}, want{400, "bad_request", "/external_identifier"}},
		{"external_identifier empty", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID, "external_identifier": ""}, want{400, "bad_request", "/external_identifier"}},
		{"bank without scheme", "POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "country": "US", "currency": "USD", "account_holder_name": "J"}, want{400, "bad_request", "/scheme"}},
		{"bank routing missing", "POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "scheme": "ach", "country": "US", "currency": "USD", "account_holder_name": "J"}, want{400, "bad_request", "/routing_number"}},
		{"bank sort code on ach", "POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "scheme": "ach", "routing_number": "011000015", "sort_code": "601613", "country": "US", "currency": "USD", "account_holder_name": "J"}, want{400, "bad_request", "/sort_code"}},
		{"bank country", "POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "scheme": "sepa", "country": "ZZ", "currency": "EUR", "account_holder_name": "J"}, want{400, "bad_request", "/country"}},
		{"bank token unknown", "POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "scheme": "bacs", "sort_code": "601613", "country": "GB", "currency": "GBP", "account_holder_name": "J"}, want{400, "bad_request", "/id"}},
		{"mandate not an object", "POST", "/payment-methods", map[string]any{"method": "bank", "id": uuid.NewString(), "mandate": true}, want{400, "bad_request", "/mandate"}},
		{"not JSON", "POST", "/payment-methods", "{", want{400, "bad_request", ""}},
		{"duplicate", "POST", "/payment-methods", map[string]any{"method": "card", "id": cardID}, want{409, "duplicate_record", ""}},

		{"PUT expiry format", "PUT", "/payment-methods/" + cardID, map[string]any{"expiration_date": "2030-01"}, want{400, "bad_request", "/expiration_date"}},
		{"PUT expiry month 13", "PUT", "/payment-methods/" + cardID, map[string]any{"expiration_date": "13/30"}, want{400, "bad_request", "/expiration_date"}},
		{"PUT expired", "PUT", "/payment-methods/" + cardID, map[string]any{"expiration_date": "01/20"}, want{400, "bad_request", "/expiration_date"}},
		{"PUT expiry null", "PUT", "/payment-methods/" + cardID, map[string]any{"expiration_date": nil}, want{400, "bad_request", "/expiration_date"}},
		{"PUT sti too long", "PUT", "/payment-methods/" + cardID, map[string]any{"scheme_transaction_id": long}, want{400, "bad_request", "/scheme_transaction_id"}},
		{"PUT sti scheme", "PUT", "/payment-methods/" + cardID, map[string]any{"scheme_transaction_id_scheme": "Visa Card"}, want{400, "bad_request", "/scheme_transaction_id_scheme"}},
		{"PUT sti wrong type", "PUT", "/payment-methods/" + cardID, map[string]any{"scheme_transaction_id": 5}, want{400, "bad_request", "/scheme_transaction_id"}},
		{"PUT unknown field", "PUT", "/payment-methods/" + cardID, map[string]any{"label": "0000"}, want{400, "bad_request", "/label"}},
		{"PUT unknown id", "PUT", "/payment-methods/" + uuid.NewString(), map[string]any{}, want{404, "not_found", ""}},
		{"GET unknown id", "GET", "/payment-methods/" + uuid.NewString(), nil, want{404, "not_found", ""}},
		{"GET malformed id", "GET", "/payment-methods/abc", nil, want{400, "bad_request", "id"}},
		{"PUT malformed id", "PUT", "/payment-methods/abc", map[string]any{}, want{400, "bad_request", "id"}},
		{"DELETE malformed id", "DELETE", "/payment-methods/abc", nil, want{400, "bad_request", "id"}},
		{"DELETE unknown id", "DELETE", "/payment-methods/" + uuid.NewString(), nil, want{404, "not_found", ""}},
		{"list buyer_id", "GET", "/payment-methods?buyer_id=x", nil, want{400, "bad_request", "buyer_id"}},
		{"list method", "GET", "/payment-methods?method=cash", nil, want{400, "bad_request", "method"}},
		{"list limit", "GET", "/payment-methods?limit=101", nil, want{400, "bad_request", "limit"}},
		{"list cursor", "GET", "/payment-methods?cursor=abc", nil, want{400, "bad_request", "cursor"}},
		{"buyer list without buyer", "GET", "/buyers/payment-methods", nil, want{400, "bad_request", "buyer_id"}},
		{"buyer list unknown buyer", "GET", "/buyers/payment-methods?buyer_external_identifier=nobody", nil, want{400, "bad_request", "buyer_external_identifier"}},
		{"buyer list bad buyer_id", "GET", "/buyers/payment-methods?buyer_id=1", nil, want{400, "bad_request", "buyer_id"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := core.do(t, tc.method, tc.path, tc.body)
			e := apiError(t, raw)
			if code != tc.want.status || e.Code != tc.want.code {
				t.Fatalf("= %d %s", code, raw)
			}
			if tc.want.pointer != "" && (len(e.Details) == 0 || e.Details[0].Pointer != tc.want.pointer) {
				t.Fatalf("details %+v, want pointer %s", e.Details, tc.want.pointer)
			}
		})
	}
	if n := countRows(t, s.DBs.CoreDSN, "payment_methods"); n != before {
		t.Fatalf("payment_methods rows %d -> %d", before, n)
	}
	// Through vault-proxy's pass-through, the same answer.
	if code, raw := publicCore(s, tok, "").do(t, "GET", "/payment-methods/abc", nil); code != 400 {
		t.Fatalf("GET /payment-methods/abc through vault-proxy = %d %s", code, raw)
	} else if e := apiError(t, raw); len(e.Details) == 0 || e.Details[0].Location != "path" || e.Details[0].Pointer != "id" {
		t.Fatalf("through vault-proxy: details %+v, want one at path id", e.Details)
	}

	// Scopes: reading needs payment-methods.read (write implies it); writing needs write.
	reader := newCore(s, s.Token(t, "payment-methods.read"), "")
	reader.ok(t, 200, "GET", "/payment-methods/"+cardID, nil)
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/payment-methods", map[string]any{"method": "card", "id": uuid.NewString()}},
		{"PUT", "/payment-methods/" + cardID, map[string]any{}},
		{"DELETE", "/payment-methods/" + cardID, nil},
	} {
		if code, raw := reader.do(t, req.method, req.path, req.body); code != 403 {
			t.Fatalf("read-only %s = %d %s", req.method, code, raw)
		}
	}
	if code, _ := newCore(s, s.Token(t, "buyers.read"), "").do(t, "GET", "/payment-methods", nil); code != 403 {
		t.Fatalf("without payment-methods scope = %d", code)
	}
	if code, _ := newCore(s, "", "").do(t, "GET", "/payment-methods", nil); code != 401 {
		t.Fatalf("without a token = %d", code)
	}
}

// Bank accounts enter through vault-proxy like cards. Until vault-proxy
// vaults bank account numbers, it passes the request through and core-api
// refuses the account number: the test then skips.
func TestPaymentMethodBankAccounts(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, append(pmScopes, "payment-methods.read")...)
	pub := publicCore(s, tok, "")
	core := newCore(s, tok, "")
	var seen responses
	secrets := []string{"000123456789", "DE89370400440532013000", "31926819"}

	cases := []struct {
		name   string
		body   map[string]any
		scheme string
		label  string
		extra  map[string]any // expected fields
	}{
		{"ach with a recurring mandate", map[string]any{"method": "bank", "scheme": "ach", "account_number": "000123456789", "routing_number": "011000015",
			"account_type": "checking", "account_holder_name": "Jane Doe", "mandate": map[string]any{"recurring": true}},
			"ach", "6789", map[string]any{"country": "US", "currency": "USD"}},
		{"sepa", map[string]any{"method": "bank", "scheme": "sepa", "iban": "DE89 3704 0044 0532 0130 00", "bic": "COBADEFFXXX", "account_holder_name": "Erika Mustermann"},
			"sepa", "3000", map[string]any{"country": "DE", "currency": "EUR"}},
		{"bacs with a recurring mandate", map[string]any{"method": "bank", "scheme": "bacs", "account_number": "31926819", "sort_code": "60-16-13",
			"account_holder_name": "John Smith", "mandate": map[string]any{"recurring": true}},
			"bacs", "6819", map[string]any{"country": "GB", "currency": "GBP"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := pub.do(t, "POST", "/payment-methods", tc.body)
			seen.add(raw)
			if code != 201 {
				t.Fatalf("POST = %d %s", code, raw)
			}
			var pm map[string]any
			if err := json.Unmarshal(raw, &pm); err != nil {
				t.Fatal(err)
			}
			id := pm["id"].(string)
			if pm["method"] != "bank" || pm["scheme"] != tc.scheme || pm["label"] != tc.label || pm["status"] != "succeeded" || pm["expiration_date"] != nil {
				t.Fatalf("bank payment method %v", pm)
			}
			for k, v := range tc.extra {
				if pm[k] != v {
					t.Fatalf("%s = %v, want %v", k, pm[k], v)
				}
			}
			recurring := tc.body["mandate"] != nil
			mandate, _ := pm["mandate"].(map[string]any)
			if recurring != (mandate != nil) || recurring && (mandate["status"] != "pending" || mandate["payment_service"] != "mock-bank") {
				t.Fatalf("mandate %v", pm["mandate"])
			}
			seen.addMap(core.ok(t, 200, "GET", "/payment-methods/"+id, nil))
			// PUT cannot give a bank account an expiry.
			if code, raw := core.do(t, "PUT", "/payment-methods/"+id, map[string]any{"expiration_date": expiryIn(2)}); code != 400 {
				t.Fatalf("PUT expiry on a bank account = %d %s", code, raw)
			}
			if code, raw := core.do(t, "DELETE", "/payment-methods/"+id, nil); code != 204 {
				t.Fatalf("DELETE = %d %s", code, raw)
			}
			if recurring {
				m, err := s.CoreAPI.DB.Mandate(context.Background(), "default", mandate["id"].(string))
				if err != nil || m.Status != "revoked" || m.RevokedAt == nil || m.PaymentMethodID != id {
					t.Fatalf("mandate after DELETE: %+v %v", m, err)
				}
			}
			if code, _ := internalCard(t, s, "default", id); code != 404 {
				t.Fatalf("vault still has the account: %d", code)
			}
		})
	}
	for i, body := range seen {
		for _, sec := range secrets {
			if strings.Contains(body, sec) {
				t.Fatalf("response %d shows an account number", i)
			}
		}
	}
	logs, dump := s.Logs.String(), s.Dump(t, "core")
	for _, sec := range secrets {
		if strings.Contains(logs, sec) || strings.Contains(dump, sec) {
			t.Fatal("an account number reached the logs or the core database")
		}
	}
}

// Concurrent expiry updates of one card leave the vault and core holding
// the same expiry once they are answered; and an
// update whose value core already holds is still sent to the vault, which
// an earlier update may have changed before failing in core.
// Twelve parallel expiry updates of one card, and four more whose clients
// go away at some point while the others run, leave vault-proxy holding
// the expiry core-api shows once every one of them has ended (whatever the
// order in which they reached the vault and the row). The updates take
// turns on the card rather than give up: each client that stays gets 200.
func TestExpiryUpdatesKeepVaultAndCoreInStep(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	core := newCore(s, tok, "")
	id := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
	path := "/payment-methods/" + id
	year := time.Now().Year() % 100
	const stay, parallel = 12, 16
	leaves := func(g int) bool { return g >= stay }
	for round := range 8 {
		s.Logs.Reset()
		codes := make([]int, parallel)
		var wg sync.WaitGroup
		for g := range parallel {
			body := map[string]any{"expiration_date": fmt.Sprintf("%02d/%02d", g+1, year+3+round%2)}
			wg.Go(func() {
				if leaves(g) {
					putAndGoAway(t, s, tok, path, body, time.Duration(g-stay+1)*25*time.Millisecond)
					return
				}
				codes[g], _ = core.do(t, "PUT", path, body)
			})
		}
		wg.Wait()
		awaitCoreRequests(t, s, "PUT", path, parallel)
		for g, code := range codes {
			if !leaves(g) && code != 200 {
				t.Errorf("round %d, update %d: %d", round, g, code)
			}
		}
		inCore := core.ok(t, 200, "GET", path, nil)["expiration_date"]
		if code, inVault := internalCard(t, s, "default", id); code != 200 || inVault.ExpirationDate != inCore {
			t.Fatalf("round %d: core holds %v, the vault %q", round, inCore, inVault.ExpirationDate)
		}
	}

	// The vault ahead of core, as an update that failed after reaching it
	// leaves them when setting the vault back fails too (vault-proxy
	// unreachable); the merchant then sends the value core shows.
	inCore := core.ok(t, 200, "GET", "/payment-methods/"+id, nil)["expiration_date"].(string)
	ahead := fmt.Sprintf("12/%02d", year+6)
	if code, raw := s.Do(t, s.InternalClient, http.MethodPut, s.InternalURL+"/internal/cards/"+id, "",
		zone.ExpiryUpdate{ExpirationDate: ahead}, accountid.Header, "default"); code != 204 && code != 200 {
		t.Fatalf("set the vault's expiry: %d %s", code, raw)
	}
	core.ok(t, 200, "PUT", "/payment-methods/"+id, map[string]any{"expiration_date": inCore})
	if _, inVault := internalCard(t, s, "default", id); inVault.ExpirationDate != inCore {
		t.Fatalf("the vault kept %q after an update to %q", inVault.ExpirationDate, inCore)
	}
}

// Card or bank data sent through vault-proxy to any route it passes on to
// core-api (a payment method whose method is not exactly card, gift-card or
// bank, a PUT, a buyer, a query) is refused by vault-proxy itself: core-api never
// receives it (SECURITY.md, "The two zones"), and its logs show no such request.
func TestCardDataIsNeverPassedOnToCoreAPI(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	id := vaultCard(t, s, tok, "5555555555554444", "")["id"].(string)
	const pan = "4111111111111111"
	tests := []struct {
		name, method, path string
		body               any
		pointers           []string
		typ                string
	}{
		{"method in capitals", "POST", "/payment-methods", map[string]any{"method": "Card", "number": pan, "expiration_date": expiryIn(2), "security_code": "123"}, []string{"/number", "/security_code"}, "value_error.card_data"},
		{"no method", "POST", "/payment-methods", map[string]any{"number": pan, "expiration_date": expiryIn(2)}, []string{"/number"}, "value_error.card_data"},
		{"PUT with a number", "PUT", "/payment-methods/" + id, map[string]any{"number": pan}, []string{"/number"}, "value_error.card_data"},
		{"PUT with an account number", "PUT", "/payment-methods/" + id, map[string]any{"account_number": "31926819"}, []string{"/account_number"}, "value_error.card_data"},
		{"a buyer with a Number", "POST", "/buyers", map[string]any{"display_name": "x", "Number": pan}, []string{"/Number"}, "value_error.card_data"},
		{"an IBAN to another route", "POST", "/merchant-accounts", map[string]any{"id": "iban-test", "display_name": "x", "iban": "DE89370400440532013000"}, []string{"/iban"}, "value_error.card_data"},
		{"a card number in the query", "GET", "/buyers?external_identifier=" + pan, nil, []string{"external_identifier"}, "value_error.card_data"},
		// In any field's value, at any depth.
		{"a card number as a name", "POST", "/buyers", map[string]any{"display_name": "4111 1111 1111 1111"}, []string{"/display_name"}, "value_error.card_data"},
		{"a card number as a tax id", "POST", "/buyers", map[string]any{"display_name": "x", "billing_details": map[string]any{"tax_id": map[string]any{"value": pan}}},
			[]string{"/billing_details/tax_id/value"}, "value_error.card_data"},
		{"a card number as a merchant account id", "POST", "/merchant-accounts", map[string]any{"id": pan, "display_name": "x"}, []string{"/id"}, "value_error.card_data"},
		{"a card number beside a card", "POST", "/payment-methods", map[string]any{"method": "card", "number": "5555555555554444", "expiration_date": expiryIn(2), "external_identifier": pan},
			[]string{"/external_identifier"}, "value_error.card_data"},
		// Bodies that do not parse cannot be searched: refused whole.
		{"a trailing comma", "POST", "/payment-methods", `{"method":"Card","number":"` + pan + `",}`, []string{""}, "value_error.jsondecode"},
		{"a byte-order mark", "POST", "/buyers", "\ufeff" + `{"display_name":"x","number":"` + pan + `"}`, []string{""}, "value_error.jsondecode"},
		{"a form", "POST", "/payment-methods", "method=Card&number=" + pan, []string{""}, "value_error.jsondecode"},
	}
	s.Logs.Reset()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, raw := badRequest(t, s, tc.method, tc.path, tok, tc.body)
			if len(e.Details) != len(tc.pointers) {
				t.Fatalf("details %s", raw)
			}
			for i, p := range tc.pointers {
				if e.Details[i].Pointer != p || e.Details[i].Type != tc.typ {
					t.Fatalf("detail %d: %s", i, raw)
				}
			}
			if strings.Contains(string(raw), pan) {
				t.Fatal("the answer echoes the card number")
			}
		})
	}
	for _, l := range s.Logs.Lines() {
		if strings.Contains(l, `"service":"core-api"`) {
			t.Fatalf("core-api saw a request: %s", l)
		}
	}
	assertNoCardDataLogged(t, s, pan)

	// A phone number is digits by nature (zone.DigitFields): one that
	// passes the Luhn check is still a phone number.
	if code, raw := s.Do(t, s.PublicClient, "POST", s.PublicURL+"/buyers", s.Token(t, "buyers.write"),
		map[string]any{"display_name": "Ada", "billing_details": map[string]any{"phone_number": "+600000000007"}}); code != http.StatusCreated {
		t.Fatalf("a buyer with a Luhn-valid phone number: %d %s", code, raw)
	}
	// core-api refuses card numbers in values itself, for a client that
	// reaches it without vault-proxy.
	if code, raw := s.Do(t, http.DefaultClient, "POST", s.CoreURL+"/buyers", s.Token(t, "buyers.write"), map[string]any{"display_name": pan}); code != http.StatusBadRequest ||
		apiError(t, raw).Details[0].Type != "value_error.card_data" {
		t.Fatalf("core-api took a card number as a name: %d %s", code, raw)
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != 1 {
		t.Fatalf("%d cards vaulted, want only the first (a refused creation vaults nothing)", n)
	}

	// A buyer's account_number is the merchant's customer reference
	// (docs/api-conventions.md, "Buyers"), not a bank account: it passes on.
	if code, raw := s.Do(t, s.PublicClient, "POST", s.PublicURL+"/buyers", s.Token(t, "buyers.write"),
		map[string]any{"display_name": "Ada", "account_number": "cust-0042"}); code != http.StatusCreated {
		t.Fatalf("a buyer with an account number through vault-proxy: %d %s", code, raw)
	}
}

// A phone number or a card network's transaction id (zone.DigitFields) is
// refused, by vault-proxy and by core-api alike, when its digits are a card
// number of a known scheme, and is stored as sent otherwise, Luhn-valid or
// not: no card number reaches core-api's database through these fields.
func TestCardNumbersInDigitFields(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	// A refused update goes to one card and the accepted ones to another,
	// so that the database dump shows a refused value had it been stored.
	id := vaultCard(t, s, tok, "5555555555554444", "")["id"].(string)
	other := vaultCard(t, s, tok, "5105105105105100", "")["id"].(string)
	refused := []string{"4111111111111111", "378282246310005", "4222222222222"}
	for _, c := range []struct {
		name   string
		client coreClient
	}{
		{"through vault-proxy", publicCore(s, tok, "")},
		{"to core-api", newCore(s, tok, "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct {
				name, method, path string
				body               map[string]any
				pointer            string
			}{
				{"a visa number as a transaction id", "PUT", "/payment-methods/" + id, map[string]any{"scheme_transaction_id": refused[0]}, "/scheme_transaction_id"},
				{"an amex number as a phone number", "POST", "/buyers",
					map[string]any{"display_name": "Ada", "billing_details": map[string]any{"phone_number": "+" + refused[1]}}, "/billing_details/phone_number"},
				{"a 13-digit visa number as a phone number", "POST", "/buyers",
					map[string]any{"display_name": "Ada", "billing_details": map[string]any{"phone_number": "+" + refused[2]}}, "/billing_details/phone_number"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					code, raw := c.client.do(t, tc.method, tc.path, tc.body)
					if code != http.StatusBadRequest {
						t.Fatalf("%d %s", code, raw)
					}
					e := apiError(t, raw)
					if len(e.Details) != 1 || e.Details[0].Pointer != tc.pointer || e.Details[0].Type != "value_error.card_data" {
						t.Fatalf("details %s", raw)
					}
				})
			}
			// Luhn-valid, and of no scheme: Visa's cards have 13, 16 or 19
			// digits, its transaction ids 15.
			const sti, phone = "412345678901233", "+819012345677"
			if got := c.client.ok(t, 200, "PUT", "/payment-methods/"+other, map[string]any{"scheme_transaction_id": sti}); got["scheme_transaction_id"] != sti {
				t.Fatalf("transaction id stored as %v", got["scheme_transaction_id"])
			}
			b := c.client.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Ada", "billing_details": map[string]any{"phone_number": phone}})
			got := c.client.ok(t, 200, "GET", "/buyers/"+b["id"].(string), nil)
			if bd, _ := got["billing_details"].(map[string]any); bd["phone_number"] != phone {
				t.Fatalf("phone number stored as %v", got["billing_details"])
			}
		})
	}
	dump := s.Dump(t, "core")
	for i, pan := range refused {
		if strings.Contains(dump, pan) {
			t.Errorf("core's database holds refused number %d", i)
		}
	}
}

// putAndGoAway sends a PUT to core-api whose client gives up after wait,
// as one that times out does; the answer, if any came, is dropped.
func putAndGoAway(t *testing.T, s *stack.Stack, tok, path string, body any, wait time.Duration) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Error(err)
		return
	}
	// The client goes away wait after its request is written, not after
	// it started: on a loaded machine a request timed from its start can
	// be abandoned before core-api receives it, and never be served.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { time.AfterFunc(wait, cancel) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.CoreURL+path, bytes.NewReader(raw))
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// awaitCoreRequests waits until core-api has logged n finished requests
// `method path` since the logs were last reset: one whose client went away
// is still served to its end, which only the access line tells.
func awaitCoreRequests(t *testing.T, s *stack.Stack, method, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := coreRequests(s, method, path)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("core-api finished %d of %d requests %s %s", got, n, method, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A PUT without an expiration_date never waits on the vault and is a
// single write: `{}` changes nothing and returns the record as stored
// (docs/api-conventions.md), and parallel updates of other fields all
// succeed, the last one to commit winning.
func TestPaymentMethodUpdatesWithoutAnExpiry(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	core := newCore(s, tok, "")
	path := "/payment-methods/" + vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
	stored := core.ok(t, 200, "GET", path, nil)

	if got := core.ok(t, 200, "PUT", path, map[string]any{}); !reflect.DeepEqual(got, stored) {
		t.Fatalf("PUT {} = %v\nwant the record as stored %v", got, stored)
	}
	if got := core.ok(t, 200, "GET", path, nil); !reflect.DeepEqual(got, stored) {
		t.Fatalf("after PUT {}: %v\nwant %v", got, stored)
	}
	if code, raw := core.do(t, "PUT", "/payment-methods/"+uuid.NewString(), map[string]any{}); code != 404 || apiError(t, raw).Code != "not_found" {
		t.Fatalf("PUT {} of an unknown payment method = %d %s", code, raw)
	}

	codes := make([]int, 40)
	sent := map[any]bool{}
	var wg sync.WaitGroup
	for g := range codes {
		v := fmt.Sprintf("stid-%02d", g)
		sent[v] = true
		wg.Go(func() { codes[g], _ = core.do(t, "PUT", path, map[string]any{"scheme_transaction_id": v}) })
	}
	wg.Wait()
	for g, code := range codes {
		if code != 200 {
			t.Errorf("update %d: %d", g, code)
		}
	}
	got := core.ok(t, 200, "GET", path, nil)
	if !sent[got["scheme_transaction_id"]] || got["expiration_date"] != stored["expiration_date"] || got["updated_at"].(string) <= stored["updated_at"].(string) {
		t.Fatalf("after the parallel updates: %v", got)
	}
}

// A write in a merchant account deleted after core-api last checked it
// (it remembers accounts for a while, httpapi.Auth) is 404 "merchant
// account not found", not a 500 or another record's 404; nothing is
// stored, in core-api or in the vault.
func TestWritesInAMerchantAccountDeletedMeanwhile(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, append(pmScopes, "buyers.read")...)
	cases := []struct {
		name, account string
		via           func(merchant string) coreClient
		path          string
		body          map[string]any
	}{
		{"buyer", "gone-buyer", func(m string) coreClient { return newCore(s, tok, m) }, "/buyers", map[string]any{"display_name": "Ada"}},
		{"card", "gone-card", func(m string) coreClient { return publicCore(s, tok, m) }, "/payment-methods",
			map[string]any{"method": "card", "number": "4111111111111111", "expiration_date": expiryIn(2)}},
		{"bank account with a mandate", "gone-bank", func(m string) coreClient { return publicCore(s, tok, m) }, "/payment-methods",
			map[string]any{"method": "bank", "scheme": "bacs", "account_number": "31926819", "sort_code": "60-16-13",
				"account_holder_name": "John Smith", "mandate": map[string]any{"recurring": true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			createMerchantAccount(t, s, tc.account)
			newCore(s, tok, tc.account).ok(t, 200, "GET", "/buyers", nil) // core-api now knows the account
			if _, err := s.CoreAPI.DB.Pool.Exec(context.Background(), `DELETE FROM merchant_accounts WHERE id = $1`, tc.account); err != nil {
				t.Fatal(err)
			}
			vaulted := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
			code, raw := tc.via(tc.account).do(t, "POST", tc.path, tc.body)
			if e := apiError(t, raw); code != 404 || e.Code != "not_found" || e.Message != "merchant account not found" {
				t.Fatalf("POST %s = %d %s", tc.path, code, raw)
			}
			if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != vaulted {
				t.Fatalf("the vault holds %d records, %d before", n, vaulted)
			}
		})
	}
	for _, table := range []string{"buyers", "payment_methods", "mandates"} {
		if n := countRows(t, s.DBs.CoreDSN, table); n != 0 {
			t.Errorf("%d rows in %s", n, table)
		}
	}
}

// vault-proxy's own creations are as strict as core-api's routes: a field
// of another method, a body that is not JSON by its Content-Type, or a
// field given twice is refused, and nothing is vaulted.
func TestCardCreationIsStrict(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	exp := expiryIn(2)
	before := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		pointer, typ            string
	}{
		{"a card with a pin", "application/json", `{"method":"card","number":"4111111111111111","expiration_date":"` + exp + `","pin":"1234"}`, 400, "/pin", "value_error.extra"},
		{"a gift card with a security code", "application/json", `{"method":"gift-card","number":"6006491234567890","pin":"1234","security_code":"123"}`, 400, "/security_code", "value_error.extra"},
		{"two numbers", "application/json", `{"method":"card","number":"4111111111111111","number":"5555555555554444","expiration_date":"` + exp + `"}`, 400, "/number", "value_error.duplicate"},
		{"text/plain", "text/plain", `{"method":"card","number":"4111111111111111","expiration_date":"` + exp + `"}`, 415, "", ""},
		{"a bank account as a form", "application/x-www-form-urlencoded", `{"method":"bank","scheme":"ach","account_number":"123456789","routing_number":"011000015","country":"US","currency":"USD","account_holder_name":"J"}`, 415, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.PublicURL+"/payment-methods", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := s.PublicClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			e := apiError(t, raw)
			if tc.pointer != "" && (len(e.Details) != 1 || e.Details[0].Pointer != tc.pointer || e.Details[0].Type != tc.typ) {
				t.Fatalf("details %s", raw)
			}
			logging.AssertNoPANIn(t, "error response", string(raw), testPANs...)
		})
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != before {
		t.Fatalf("%d cards vaulted by refused creations", n-before)
	}
}
