package connector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/secret"
	"github.com/payorch/shared/zone"
)

// recorder stands in for vault-proxy: it keeps the call and answers a
// recorded mock-card answer (or an error of vaultclient's).
type recorder struct {
	merchant, actor string
	got             zone.DetokenizeRequest
	answer          *zone.DetokenizeResponse
	err             error
}

func (r *recorder) Detokenize(_ context.Context, merchant, actor string, req zone.DetokenizeRequest) (*zone.DetokenizeResponse, error) {
	r.merchant, r.actor, r.got = merchant, actor, req
	return r.answer, r.err
}

// recorded is a mock-card answer recorded from the e2e stack
// (testdata/mockcard), as vault-proxy passes it on.
func recorded(t *testing.T, status int, name string) *zone.DetokenizeResponse {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "mockcard", name))
	if err != nil {
		t.Fatal(err)
	}
	return &zone.DetokenizeResponse{Status: status, Headers: map[string]string{"content-type": "application/json"}, Body: raw}
}

func TestMockCardBuildsRequestsFromPlaceholders(t *testing.T) {
	ok := &zone.DetokenizeResponse{Status: 201, Body: []byte(`{"type":"authorization","id":"auth_x","status":"authorized"}`)}
	const pm = "3f0c2a57-8a4e-4c55-9d5c-4f8e1f7d9a10"
	// step is a capture, void or refund (a method expression) of auth_x.
	step := func(f func(connector.MockCard, context.Context, connector.CardOperation) (coreapi.ConnectorResult, error), amount int64, ref string) func(connector.MockCard) error {
		return func(m connector.MockCard) error {
			_, err := f(m, context.Background(), connector.CardOperation{MerchantAccountID: "m-1", PaymentMethodID: pm, AuthorizationID: "auth_x", Amount: amount, Reference: ref})
			return err
		}
	}
	cases := []struct {
		name    string
		call    func(connector.MockCard) error
		auth    string // "": the built-in sandbox key
		method  string
		path    string
		purpose string
		key     string
		body    string // "" for none
	}{
		{
			name: "customer-initiated authorization with the held security code",
			call: func(m connector.MockCard) error {
				_, err := m.Authorize(context.Background(), connector.CardAuthorization{MerchantAccountID: "m-1", PaymentMethodID: pm, Reference: "txn-1",
					Amount: 1299, Currency: "EUR", Intent: coreapi.IntentAuthorize, SecurityCodeHeld: true, BillingPostalCode: "10115",
					Options: connector.Values{"soft_descriptor": "ORDER 42"},
					Config: connector.Config{Settings: connector.Values{"merchant_descriptor": "ACME SHOP"},
						Credentials: connector.Secrets{"api_key": secret.New("mc_test_case0000key")}}})
				return err
			},
			auth:   "Bearer mc_test_case0000key",
			method: "POST", path: "/v1/authorizations", purpose: "authorization", key: "txn-1",
			body: `{"amount":1299,"currency":"EUR","capture":false,"card":{"number":"{{ CARD_NUMBER_1 }}","expiry_month":"{{ CARD_EXPIRATION_DATE_MM_1 }}",` +
				`"expiry_year":"{{ CARD_EXPIRATION_DATE_YYYY_1 }}","security_code":"{{ CARD_SECURITY_CODE_1 }}"},"billing":{"postal_code":"10115"},` +
				`"merchant_initiated":false,"payment_source":"ecommerce","merchant_descriptor":"ACME SHOP","soft_descriptor":"ORDER 42"}`,
		},
		{
			name: "merchant-initiated sale without a security code",
			call: func(m connector.MockCard) error {
				_, err := m.Authorize(context.Background(), connector.CardAuthorization{MerchantAccountID: "m-1", PaymentMethodID: pm, Reference: "txn-2",
					Amount: 500, Currency: "USD", Intent: coreapi.IntentCapture, MerchantInitiated: true,
					PaymentSource: coreapi.PaymentSourceRecurring, PreviousSchemeTransactionID: "483920175544213"})
				return err
			},
			method: "POST", path: "/v1/authorizations", purpose: "authorization", key: "txn-2",
			body: `{"amount":500,"currency":"USD","capture":true,"card":{"number":"{{ CARD_NUMBER_1 }}","expiry_month":"{{ CARD_EXPIRATION_DATE_MM_1 }}",` +
				`"expiry_year":"{{ CARD_EXPIRATION_DATE_YYYY_1 }}"},"merchant_initiated":true,"payment_source":"recurring",` +
				`"previous_scheme_transaction_id":"483920175544213"}`,
		},
		{
			name:   "partial capture",
			call:   step(connector.MockCard.Capture, 500, "cap-1"),
			method: "POST", path: "/v1/authorizations/auth_x/captures", purpose: "capture", key: "cap-1", body: `{"amount":500}`,
		},
		{
			name:   "capture of all that is left",
			call:   step(connector.MockCard.Capture, 0, "cap-2"),
			method: "POST", path: "/v1/authorizations/auth_x/captures", purpose: "capture", key: "cap-2", body: `{}`,
		},
		{
			name:   "void",
			call:   step(connector.MockCard.Void, 0, "void-1"),
			method: "POST", path: "/v1/authorizations/auth_x/voids", purpose: "void", key: "void-1", body: `{}`,
		},
		{
			name:   "refund",
			call:   step(connector.MockCard.Refund, 200, "ref-1"),
			method: "POST", path: "/v1/authorizations/auth_x/refunds", purpose: "refund", key: "ref-1", body: `{"amount":200}`,
		},
		{
			name: "lookup by reference, without a card placeholder",
			call: func(m connector.MockCard) error {
				_, err := m.Lookup(context.Background(), connector.CardLookup{MerchantAccountID: "m-1", PaymentMethodID: pm, Reference: "txn 1:authorize"})
				return err
			},
			method: "GET", path: "/v1/authorizations?idempotency_key=txn+1%3Aauthorize", purpose: "lookup",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{answer: ok, err: errors.New("stop")} // the request is what is checked
			_ = tc.call(connector.MockCard{VaultProxy: rec, TimeoutMillis: 1500})
			g := rec.got
			if rec.merchant != "m-1" || rec.actor != "connector:mock-card" || g.Destination != "mock-card" || g.Method != tc.method ||
				g.Path != tc.path || g.Purpose != tc.purpose || g.TimeoutMillis != 1500 || len(g.PaymentMethod) != 1 || g.PaymentMethod[0] != pm {
				t.Fatalf("call: merchant %q actor %q %+v", rec.merchant, rec.actor, g)
			}
			auth := tc.auth
			if auth == "" {
				auth = "Bearer " + connector.MockCardSandboxAPIKey
			}
			if g.Headers["content-type"] != "application/json" || g.Headers["idempotency-key"] != tc.key || g.Headers["authorization"] != auth {
				t.Fatalf("headers: %v, want idempotency-key %q and %s", g.Headers, tc.key, auth)
			}
			if g.Body != tc.body {
				t.Fatalf("body:\n got %s\nwant %s", g.Body, tc.body)
			}
		})
	}
}

func TestMockCardParsesAnswers(t *testing.T) {
	authz := connector.CardAuthorization{MerchantAccountID: "default", PaymentMethodID: "pm", Reference: "txn-a", Amount: 1299, Currency: "EUR"}
	type call = func(connector.MockCard) (coreapi.ConnectorResult, error)
	authorize := func(m connector.MockCard) (coreapi.ConnectorResult, error) {
		return m.Authorize(context.Background(), authz)
	}
	// step is a capture, void or refund (a method expression) sent with ref.
	step := func(f func(connector.MockCard, context.Context, connector.CardOperation) (coreapi.ConnectorResult, error), ref string) call {
		return func(m connector.MockCard) (coreapi.ConnectorResult, error) {
			return f(m, context.Background(), connector.CardOperation{MerchantAccountID: "default", PaymentMethodID: "pm",
				AuthorizationID: "auth_u5exqgniqaxzrdgtbhtdubuzew", Reference: ref})
		}
	}
	refusedKey := &zone.DetokenizeResponse{Status: 401, Body: []byte(`{"type":"error","code":"invalid_credentials","status":401,"message":"the API key is not valid","details":[]}`)}
	processorError := &zone.DetokenizeResponse{Status: 500, Body: []byte(`{"type":"error","code":"processor_error","status":500,"message":"the processor failed","details":[]}`)}
	cases := []struct {
		name    string
		answer  *zone.DetokenizeResponse
		err     error
		call    call
		want    coreapi.ConnectorResult
		wantErr any // an error for errors.Is, or a **ProcessorError for errors.As
	}{
		{
			name: "approved", answer: recorded(t, 201, "authorization-approved.json"),
			call: authorize,
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth_u5exqgniqaxzrdgtbhtdubuzew", RawResponseCode: "00",
				RawResponseDescription: "Approved", AVSResponseCode: "Y", CVVResponseCode: "M", SchemeTransactionID: "803023186132014"},
		},
		{
			name: "declined by amount 4051", answer: recorded(t, 201, "authorization-declined.json"),
			call: authorize,
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, Reference: "auth_dq5nhtcwmkyrq2z6d4v5ym7j4l", ErrorCode: "insufficient_funds",
				RawResponseCode: "51", RawResponseDescription: "Not sufficient funds"},
		},
		{
			name: "merchant-initiated approval has no CVV result", answer: recorded(t, 201, "authorization-merchant-initiated.json"),
			call: authorize,
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth_ty7iloh2gdclxedvppysb4fx77", RawResponseCode: "00",
				RawResponseDescription: "Approved", SchemeTransactionID: "443657601389859"},
		},
		{
			name: "credentials refused: failed, invalid_credentials", answer: refusedKey,
			call: authorize,
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: connector.ErrorCodeInvalidCredentials,
				RawResponseCode: "invalid_credentials", RawResponseDescription: "the processor refused the payment service's credentials"},
		},
		{
			name: "credentials refused for a capture: declined, nothing done", answer: refusedKey,
			call: step(connector.MockCard.Capture, "cap-1"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: connector.ErrorCodeInvalidCredentials,
				RawResponseCode: "invalid_credentials", RawResponseDescription: "the processor refused the payment service's credentials"},
		},
		{
			name: "processor error: failed, nothing recorded", answer: processorError,
			call: authorize,
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: "processor_error"},
		},
		{
			name: "vault-proxy's 504 forward_timeout: outcome unknown", err: &vaultclient.StatusError{Method: "POST", Path: zone.DetokenizePath, Status: 504},
			call: authorize,
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, wantErr: connector.ErrOutcomeUnknown,
		},
		{
			name: "the context ends before an answer: outcome unknown", err: context.DeadlineExceeded,
			call: step(connector.MockCard.Capture, "cap-1"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, wantErr: connector.ErrOutcomeUnknown,
		},
		{
			name:    "vault-proxy refuses (nothing sent): an error, not unknown",
			err:     fmt.Errorf("%w: %w", coreapi.ErrVaultProxyRefused, &apierror.Error{Status: 400, Code: "bad_request"}),
			call:    authorize,
			wantErr: coreapi.ErrVaultProxyRefused,
		},
		{
			name: "partial capture", answer: recorded(t, 200, "capture.json"),
			call: step(connector.MockCard.Capture, "txn-a:capture-1"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "cap_ozdmrqql7d7eccba673emt57ik"},
		},
		{
			name: "capture beyond the authorization: declined", answer: recorded(t, 422, "capture-exceeds.json"),
			call: step(connector.MockCard.Capture, "txn-a:capture-3"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: "amount_exceeds_authorized",
				RawResponseDescription: "the capture amount exceeds what is left (0)"},
		},
		{
			name: "refund", answer: recorded(t, 200, "refund.json"),
			call: step(connector.MockCard.Refund, "txn-a:refund-1"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "ref_oi7g73clyjkoz3ld7at62sw3lw"},
		},
		{
			name: "a capture answer without the sent reference is a processor fault", answer: recorded(t, 200, "capture.json"),
			call:    step(connector.MockCard.Capture, "other"),
			wantErr: new(*connector.ProcessorError),
		},
		{
			name: "void", answer: recorded(t, 200, "void.json"),
			call: step(connector.MockCard.Void, "txn-v:void-1"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth_x67pkbrx4fo6fp6qlfnaqdqhyf"},
		},
		{
			name: "void of a captured authorization: declined", answer: recorded(t, 422, "void-not-voidable.json"),
			call: step(connector.MockCard.Void, "txn-a:void-1"),
			want: coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: "authorization_not_voidable",
				RawResponseDescription: "the authorization is captured: only an authorized one with nothing captured can be voided"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.call(connector.MockCard{VaultProxy: &recorder{answer: tc.answer, err: tc.err}})
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("error %v", err)
				}
			case **connector.ProcessorError:
				if !errors.As(err, want) {
					t.Fatalf("error %v, want a ProcessorError", err)
				}
			case error:
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %v", err, want)
				}
			}
			if got != tc.want {
				t.Fatalf("result\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMockCardParsesTheLookup(t *testing.T) {
	m := connector.MockCard{VaultProxy: &recorder{answer: recorded(t, 200, "lookup.json")}}
	st, err := m.Lookup(context.Background(), connector.CardLookup{MerchantAccountID: "default", PaymentMethodID: "pm", Reference: "txn-a"})
	if err != nil || st.Outcome != coreapi.OutcomeSucceeded || st.Status != "captured" || st.AuthorizedAmount != 1299 || st.CapturedAmount != 1299 ||
		st.RefundedAmount != 200 || st.Voided || len(st.Captures) != 2 || len(st.Refunds) != 1 || st.Reference != "auth_u5exqgniqaxzrdgtbhtdubuzew" {
		t.Fatalf("lookup: %+v %v", st, err)
	}
	if c, ok := connector.Step(st.Captures, "txn-a:capture-2"); !ok || c.Amount != 799 || c.ID == "" {
		t.Fatalf("capture-2: %+v", st.Captures)
	}

	m = connector.MockCard{VaultProxy: &recorder{answer: recorded(t, 404, "lookup-not-found.json")}}
	if _, err := m.Lookup(context.Background(), connector.CardLookup{MerchantAccountID: "default", PaymentMethodID: "pm", Reference: "txn-h"}); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("never recorded: %v, want ErrNotFound", err)
	}
}

func TestRegistryCards(t *testing.T) {
	r := connector.NewRegistry(connector.MockBank{}, connector.MockCard{})
	if c, err := r.Cards("mock-card"); err != nil || c.Name() != "mock-card" {
		t.Fatalf("mock-card: %v %v", c, err)
	}
	for _, name := range []string{"mock-bank", "nope"} {
		if _, err := r.Cards(name); !errors.Is(err, connector.ErrUnknown) {
			t.Fatalf("%s as a card connector: %v", name, err)
		}
	}
	if _, err := r.Mandates("mock-card"); !errors.Is(err, connector.ErrUnknown) {
		t.Fatalf("mock-card as a mandate connector: %v", err)
	}
}

// A UUID reference goes to mock-card as a key no card number scan can
// read a card number in, and comes back as itself from the steps the
// processor lists; any other reference goes as it is.
func TestMockCardKey(t *testing.T) {
	// Its groups' digits joined by the dashes, 4111-1111-1111-1111 reads
	// as a card number.
	const panLike = "abcdefab-4111-1111-1111-1111abcdef12"
	for _, ref := range []string{panLike, "00000000-0000-4000-8000-000000000000", "7e0cda1a-1cd0-4530-8045-c470b06d8f8d"} {
		key := connector.MockCardKey(ref)
		if !strings.HasPrefix(key, "ref_") || len(key) != 30 || panscan.InIdentifier(key) || strings.ContainsAny(key, "-ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Fatalf("key of %s = %q", ref, key)
		}
		st := lookupWithStep(t, key)
		if s, ok := connector.Step(st.Captures, ref); !ok || s.ID != "cap_1" {
			t.Fatalf("the step sent with %s is not found by its reference: %+v", ref, st.Captures)
		}
	}
	if !panscan.InIdentifier(panLike) {
		t.Fatal("the test's reference does not read as a card number")
	}
	for _, ref := range []string{"txn-a", "txn-a:capture-1", "ABCDEFAB-4111-1111-1111-111111ABCDEF", "ref_x"} {
		if key := connector.MockCardKey(ref); key != ref {
			t.Fatalf("key of %q = %q, want it as it is", ref, key)
		}
	}
}

// lookupWithStep is a lookup whose authorization lists one capture,
// cap_1, sent with key.
func lookupWithStep(t *testing.T, key string) connector.CardState {
	t.Helper()
	body := `{"type":"authorization","id":"auth_1","idempotency_key":"k","status":"captured","amount":10,"authorized_amount":10,` +
		`"captured_amount":10,"refunded_amount":0,"response_code":"00","response_message":"Approved","decline_code":null,"avs_result":null,` +
		`"cvv_result":null,"scheme_transaction_id":null,"captures":[{"id":"cap_1","idempotency_key":"` + key + `","amount":10}],"refunds":[],"voided_at":null}`
	m := connector.MockCard{VaultProxy: &recorder{answer: &zone.DetokenizeResponse{Status: 200, Body: []byte(body)}}}
	st, err := m.Lookup(context.Background(), connector.CardLookup{MerchantAccountID: "m", PaymentMethodID: "pm", Reference: "r"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A payment's cart items and its buyer's postal code go to the processor
// as the merchant wrote them, braces and all, but none of their text can
// stand as a placeholder that vault-proxy would fill with card data (or
// refuse as unknown): the detokenized body's only "{{" are the
// connector's own.
func TestMockCardSendsCartItemsInert(t *testing.T) {
	rec := &recorder{answer: &zone.DetokenizeResponse{Status: 201, Body: []byte(`{"type":"authorization","id":"auth_x","status":"authorized"}`)}}
	sku := `{{CARD_NUMBER_1}}`
	items := []coreapi.CartItem{
		{Name: "{{ CARD_NUMBER_1 }} and {{ CARD_CRYPTOGRAM_1 }}", Quantity: 1, UnitAmount: 100, SKU: &sku},
		{Name: `a "quoted" \ {brace}`, Quantity: 2, UnitAmount: 50, Categories: []string{"{{x}}"}},
	}
	for _, tc := range []struct {
		name   string
		items  []coreapi.CartItem
		postal string
		want   []coreapi.CartItem
		sent   string // the billing postal code sent
	}{
		{"with cart items and a postal code like a placeholder", items, "{{ CARD_CVV_1 }}", items, "{{ CARD_CVV_1 }}"},
		{"without; a postal code longer than mock-card takes is not sent", nil, "12345678901234567", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := connector.MockCard{VaultProxy: rec}
			if _, err := m.Authorize(context.Background(), connector.CardAuthorization{MerchantAccountID: "m-1",
				PaymentMethodID: "3f0c2a57-8a4e-4c55-9d5c-4f8e1f7d9a10", Reference: "txn-cart", Amount: 200, Currency: "EUR",
				CartItems: tc.items, BillingPostalCode: tc.postal}); err != nil {
				t.Fatal(err)
			}
			body := rec.got.Body
			if n := strings.Count(body, "{{"); n != 3 { // the card's number, month and year
				t.Fatalf("%d placeholders in %s", n, body)
			}
			var sent struct {
				CartItems []coreapi.CartItem `json:"cart_items"`
				Billing   struct {
					PostalCode string `json:"postal_code"`
				} `json:"billing"`
			}
			if err := json.Unmarshal([]byte(body), &sent); err != nil || !reflect.DeepEqual(sent.CartItems, tc.want) || sent.Billing.PostalCode != tc.sent {
				t.Fatalf("sent cart items %+v, postal code %q (%v); want %+v, %q: %s", sent.CartItems, sent.Billing.PostalCode, err, tc.want, tc.sent, body)
			}
		})
	}
}

// A gift card redemption's cart items go inert beside the number and
// PIN placeholders, as an authorization's.
func TestMockCardRedemptionSendsCartItemsInert(t *testing.T) {
	rec := &recorder{answer: &zone.DetokenizeResponse{Status: 201, Body: []byte(`{"type":"gift-card-redemption","id":"red_x","status":"approved","redeemed_amount":200}`)}}
	items := []coreapi.CartItem{{Name: "{{ CARD_NUMBER_1 }} {{ GIFT_CARD_PIN_1 }}", Quantity: 1, UnitAmount: 200}}
	for _, tc := range []struct {
		name  string
		items []coreapi.CartItem
	}{{"with cart items", items}, {"without", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			m := connector.MockCard{VaultProxy: rec}
			if _, err := m.Redeem(context.Background(), connector.GiftCardRedemption{MerchantAccountID: "m-1",
				PaymentMethodID: "3f0c2a57-8a4e-4c55-9d5c-4f8e1f7d9a10", Reference: "txn-gift", Amount: 200, Currency: "USD",
				CartItems: tc.items}); err != nil {
				t.Fatal(err)
			}
			body := rec.got.Body
			if n := strings.Count(body, "{{"); n != 2 { // the card's number and PIN
				t.Fatalf("%d placeholders in %s", n, body)
			}
			var sent struct {
				CartItems []coreapi.CartItem `json:"cart_items"`
			}
			if err := json.Unmarshal([]byte(body), &sent); err != nil || !reflect.DeepEqual(sent.CartItems, tc.items) {
				t.Fatalf("sent cart items %+v (%v), want %+v: %s", sent.CartItems, err, tc.items, body)
			}
		})
	}
}
