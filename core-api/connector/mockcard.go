package connector

import (
	"context"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
)

// MockCardName is the registry name of the sandbox card processor's
// connector, and vault-proxy's destination name for the processor.
const MockCardName = "mock-card"

// Detokenizer makes vault-proxy's detokenized call (vaultclient.Client).
type Detokenizer interface {
	Detokenize(ctx context.Context, merchant, actor string, r zone.DetokenizeRequest) (*zone.DetokenizeResponse, error)
}

// MockCard is the card connector to mock-card, the sandbox card processor
// (docs/sandbox/mock-card.md), registered as "mock-card" in the sandbox
// and development environments only. It is written as a real processor's
// connector is: its own wire types from the processor's documented
// contract, each call sent through vault-proxy with placeholders for the
// card, so core-api never holds a card number.
type MockCard struct {
	VaultProxy Detokenizer
	// TimeoutMillis bounds each call at vault-proxy (at most 60000); 0 is
	// vault-proxy's default (30 s).
	TimeoutMillis int
}

// Name is "mock-card".
func (MockCard) Name() string { return MockCardName }

// MockCardSandboxAPIKey is the API key of the built-in sandbox
// configuration (a zero Config: a payment outside production that names
// no payment service and whose merchant account has no default). It is
// public, as a processor's published sandbox test key is: mock-card
// accepts every key of its documented test form.
const MockCardSandboxAPIKey = "mc_test_payorch_builtin_sandbox"

// descriptorRE is what a card statement shows: letters, digits, spaces
// and . , * & ' - only, so that nothing in it can read as a vault-proxy
// placeholder or as JSON.
var descriptorRE = regexp.MustCompile(`^[A-Za-z0-9 .,*&'-]+$`)

const descriptorText = "letters, digits, spaces and . , * & ' - only"

// Schemas declares mock-card's configuration (docs/payment-services.md):
// the API key mock-card issued the merchant, the descriptor it shows on
// card statements, and a per-transaction soft descriptor.
func (MockCard) Schemas() Schemas {
	descriptor := func(name string) Field {
		return Field{Name: name, Kind: KindString, MaxLength: 22, Pattern: descriptorRE, PatternText: descriptorText}
	}
	return Schemas{
		Methods: []string{coreapi.MethodCard, coreapi.MethodGiftCard},
		Credentials: Schema{{Name: "api_key", Kind: KindString, Required: true, MinLength: 8, MaxLength: 128,
			Pattern: apiKeyRE, PatternText: "letters, digits, _ and - only"},
			// The secret mock-card signs its notifications with; without
			// it, the public sandbox secret verifies them.
			{Name: "webhook_secret", Kind: KindString, MinLength: 16, MaxLength: 128}},
		Settings:          Schema{descriptor("merchant_descriptor")},
		ConnectionOptions: Schema{descriptor("soft_descriptor")},
	}
}

var apiKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// apiKey is the key a call sends: the payment service's, or the built-in
// sandbox key.
func apiKey(c Config) string {
	if k, ok := c.Credentials["api_key"]; ok {
		return k.Reveal()
	}
	return MockCardSandboxAPIKey
}

// The actor and purposes vault-proxy's audit log records for each call.
const (
	mockCardActor   = "connector:" + MockCardName
	purposeAuthz    = "authorization" // the one purpose that may use a held security code
	purposeCapture  = "capture"
	purposeVoid     = "void"
	purposeRefund   = "refund"
	purposeLookup   = "lookup"
	mockCardAuthzes = "/v1/authorizations"
)

// mockCardCard is the card part of an authorization request: the
// placeholders vault-proxy fills in, never values.
type mockCardCard struct {
	Number       string `json:"number"`
	ExpiryMonth  string `json:"expiry_month"`
	ExpiryYear   string `json:"expiry_year"`
	SecurityCode string `json:"security_code,omitempty"`
}

type mockCardBilling struct {
	PostalCode string `json:"postal_code"`
}

// mockCardMaxPostalCode is the longest billing postal code mock-card
// takes, in bytes.
const mockCardMaxPostalCode = 16

// mockCardAuthorizationRequest is POST /v1/authorizations.
type mockCardAuthorizationRequest struct {
	Amount                      int64             `json:"amount"`
	Currency                    string            `json:"currency"`
	Capture                     bool              `json:"capture"`
	Card                        mockCardCard      `json:"card"`
	Billing                     inertJSON         `json:"billing,omitempty"`
	MerchantInitiated           bool              `json:"merchant_initiated"`
	PaymentSource               string            `json:"payment_source"`
	PreviousSchemeTransactionID *string           `json:"previous_scheme_transaction_id,omitempty"`
	MerchantDescriptor          string            `json:"merchant_descriptor,omitempty"`
	SoftDescriptor              string            `json:"soft_descriptor,omitempty"`
	ThreeDSecure                *ThreeDSecureData `json:"three_d_secure,omitempty"`
	NotificationURL             string            `json:"notification_url,omitempty"`
	CartItems                   inertJSON         `json:"cart_items,omitempty"`
}

// mockCardAmount is the body of a capture or refund; no amount takes all
// that is left.
type mockCardAmount struct {
	Amount int64 `json:"amount,omitempty"`
}

// mockCardAuthorization is mock-card's authorization answer.
type mockCardAuthorization struct {
	Type                string         `json:"type"`
	ID                  string         `json:"id"`
	IdempotencyKey      string         `json:"idempotency_key"`
	Status              string         `json:"status"`
	Amount              int64          `json:"amount"`
	AuthorizedAmount    int64          `json:"authorized_amount"`
	CapturedAmount      int64          `json:"captured_amount"`
	RefundedAmount      int64          `json:"refunded_amount"`
	ResponseCode        string         `json:"response_code"`
	ResponseMessage     string         `json:"response_message"`
	DeclineCode         *string        `json:"decline_code"`
	AVSResult           *string        `json:"avs_result"`
	CVVResult           *string        `json:"cvv_result"`
	SchemeTransactionID *string        `json:"scheme_transaction_id"`
	Captures            []mockCardStep `json:"captures"`
	Refunds             []mockCardStep `json:"refunds"`
	VoidedAt            *string        `json:"voided_at"`
}

type mockCardStep struct {
	ID             string  `json:"id"`
	IdempotencyKey string  `json:"idempotency_key"`
	Amount         int64   `json:"amount"`
	Status         string  `json:"status"` // succeeded, pending, failed
	FailureCode    *string `json:"failure_code"`
}

// mock-card's statuses.
const (
	mcAuthorized = "authorized"
	mcCaptured   = "captured"
	mcVoided     = "voided"
	mcDeclined   = "declined"
	mcFailed     = "failed"
	mcPending    = "pending" // received; its result comes by notification
)

// Authorize sends POST /v1/authorizations.
func (m MockCard) Authorize(ctx context.Context, r CardAuthorization) (coreapi.ConnectorResult, error) {
	body, err := mockCardAuthorizationBody(r)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purposeAuthz, http.MethodPost, mockCardAuthzes, MockCardKey(r.Reference), body, r.SecurityCodeFor)
	if err != nil {
		return unknownOr(err, "authorization")
	}
	return parseMockCardAuthorization(resp)
}

// Capture sends POST /v1/authorizations/{id}/captures.
func (m MockCard) Capture(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error) {
	return m.step(ctx, r, "captures", purposeCapture, mockCardAmount{Amount: r.Amount})
}

// Void sends POST /v1/authorizations/{id}/voids.
func (m MockCard) Void(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error) {
	return m.step(ctx, r, "voids", purposeVoid, struct{}{})
}

// Refund sends POST /v1/authorizations/{id}/refunds.
func (m MockCard) Refund(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error) {
	return m.step(ctx, r, "refunds", purposeRefund, mockCardAmount{Amount: r.Amount})
}

// Lookup sends GET /v1/authorizations?idempotency_key=K, which needs no
// card placeholder.
func (m MockCard) Lookup(ctx context.Context, r CardLookup) (CardState, error) {
	path := mockCardAuthzes + "?" + url.Values{"idempotency_key": {MockCardKey(r.Reference)}}.Encode()
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purposeLookup, http.MethodGet, path, "", nil, "")
	if err != nil {
		return CardState{}, err
	}
	return parseMockCardState(resp)
}

func (m MockCard) step(ctx context.Context, r CardOperation, kind, purpose string, in any) (coreapi.ConnectorResult, error) {
	if r.AuthorizationID == "" {
		return coreapi.ConnectorResult{}, errors.New("mock-card: no authorization id")
	}
	body, err := json.Marshal(in)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	path := mockCardAuthzes + "/" + url.PathEscape(r.AuthorizationID) + "/" + kind
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purpose, http.MethodPost, path, MockCardKey(r.Reference), body, "")
	if err != nil {
		return unknownOr(err, kind)
	}
	return parseMockCardStep(resp, kind, r.Reference)
}

// call sends one request through vault-proxy, authenticated with cfg's
// API key; codeFor is CardAuthorization.SecurityCodeFor. An error is either vault-proxy's refusal (nothing was sent) or
// a call without an answer, which Authorize and the steps turn into
// ErrOutcomeUnknown.
func (m MockCard) call(ctx context.Context, cfg Config, merchant, pm, purpose, method, path, key string, body []byte, codeFor string) (*zone.DetokenizeResponse, error) {
	h := map[string]string{"content-type": "application/json", "authorization": "Bearer " + apiKey(cfg)}
	if key != "" {
		h["idempotency-key"] = key
	}
	return m.VaultProxy.Detokenize(ctx, merchant, mockCardActor, zone.DetokenizeRequest{
		Destination: MockCardName, Method: method, Path: path, Headers: h, Body: string(body),
		PaymentMethod: []string{pm}, Purpose: purpose, TimeoutMillis: m.TimeoutMillis, SecurityCodeFor: codeFor,
	})
}

// unknownOr sorts a failed call: vault-proxy's refusal (a 4xx: a bad
// token, a placeholder it cannot fill) sent nothing and is a plain error;
// anything else (504 forward_timeout, 502, a broken connection, a
// cancelled context) may have reached the processor.
func unknownOr(err error, what string) (coreapi.ConnectorResult, error) {
	if errors.Is(err, coreapi.ErrVaultProxyRefused) || errors.Is(err, coreapi.ErrVaultProxyNotFound) {
		return coreapi.ConnectorResult{}, fmt.Errorf("mock-card %s: %w", what, err)
	}
	return unknown(MockCardName, what, err)
}

// mockCardAuthorizationBody builds the authorization request with
// placeholders for the card; the security code's only when it is held.
func mockCardAuthorizationBody(r CardAuthorization) (_ []byte, err error) {
	if r.Intent != coreapi.IntentAuthorize && r.Intent != coreapi.IntentCapture && r.Intent != "" {
		return nil, fmt.Errorf("mock-card: unknown intent %q", r.Intent)
	}
	in := mockCardAuthorizationRequest{
		Amount: r.Amount, Currency: r.Currency, Capture: r.Intent == coreapi.IntentCapture,
		Card: mockCardCard{
			Number:      "{{ CARD_NUMBER_1 }}",
			ExpiryMonth: "{{ CARD_EXPIRATION_DATE_MM_1 }}",
			ExpiryYear:  "{{ CARD_EXPIRATION_DATE_YYYY_1 }}",
		},
		MerchantInitiated: r.MerchantInitiated, PaymentSource: r.PaymentSource,
	}
	if r.SecurityCodeHeld {
		in.Card.SecurityCode = "{{ CARD_SECURITY_CODE_1 }}"
	}
	if in.PaymentSource == "" {
		in.PaymentSource = coreapi.PaymentSourceECommerce
	}
	// The buyer's text, inert as the cart's; one longer than mock-card
	// takes is not sent (the address is then not checked) rather than
	// failing the payment.
	if pc := r.BillingPostalCode; pc != "" && len(pc) <= mockCardMaxPostalCode {
		if in.Billing, err = marshalInert(mockCardBilling{PostalCode: pc}); err != nil {
			return nil, err
		}
	}
	if r.PreviousSchemeTransactionID != "" {
		in.PreviousSchemeTransactionID = &r.PreviousSchemeTransactionID
	}
	if len(r.CartItems) > 0 {
		if in.CartItems, err = marshalInert(r.CartItems); err != nil {
			return nil, err
		}
	}
	in.ThreeDSecure = r.ThreeDSecure
	in.NotificationURL = r.NotificationURL
	in.MerchantDescriptor = r.Config.Settings.String("merchant_descriptor")
	in.SoftDescriptor = r.Options.String("soft_descriptor")
	return json.Marshal(in)
}

// decodeAuthorization reads an answer with status want that carries an
// authorization; a mock-card error envelope is a *ProcessorError.
func decodeAuthorization(resp *zone.DetokenizeResponse, want int) (*mockCardAuthorization, error) {
	if resp.Status != want {
		return nil, mockCardRefusal(resp)
	}
	var a mockCardAuthorization
	if err := json.Unmarshal(resp.Body, &a); err != nil || a.Type != "authorization" || a.ID == "" {
		return nil, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: "unreadable_answer"}
	}
	return &a, nil
}

// mockCardRefusal is an answer that is not the expected one: the
// processor's envelope code, never its message (which may quote input).
func mockCardRefusal(resp *zone.DetokenizeResponse) error {
	code := "unreadable_answer"
	if e, err := apierror.Parse(resp.Body); err == nil {
		code = e.Code
	}
	if resp.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrNotFound, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: code})
	}
	return &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: code}
}

// parseMockCardAuthorization maps POST /v1/authorizations's answer. The
// 500 processor_error records nothing at mock-card: the authorization
// failed, and the same reference may be sent again.
func parseMockCardAuthorization(resp *zone.DetokenizeResponse) (coreapi.ConnectorResult, error) {
	if resp.Status == http.StatusUnauthorized {
		return refusedCredentials(resp), nil
	}
	if resp.Status == http.StatusInternalServerError {
		if e, err := apierror.Parse(resp.Body); err == nil && e.Code == "processor_error" {
			return coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: e.Code}, nil
		}
	}
	if resp.Status >= 500 {
		return unknown(MockCardName, "authorization", fmt.Errorf("status %d", resp.Status))
	}
	a, err := decodeAuthorization(resp, http.StatusCreated)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	return a.result(), nil
}

// ErrorCodeInvalidCredentials is the error_code of an operation mock-card
// refused for the payment service's API key (401): a configuration to
// fix, not a decline by the issuer.
const ErrorCodeInvalidCredentials = "invalid_credentials"

// refusedCredentials is mock-card's 401: nothing was recorded there, so
// the authorization failed, with mock-card's own code as the raw code.
func refusedCredentials(resp *zone.DetokenizeResponse) coreapi.ConnectorResult {
	r := coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeInvalidCredentials,
		RawResponseDescription: "the processor refused the payment service's credentials"}
	if e, err := apierror.Parse(resp.Body); err == nil {
		r.RawResponseCode = e.Code
	}
	return r
}

// result is the authorization's own answer.
func (a *mockCardAuthorization) result() coreapi.ConnectorResult {
	r := coreapi.ConnectorResult{
		Reference: a.ID, RawResponseCode: a.ResponseCode, RawResponseDescription: a.ResponseMessage,
		ErrorCode: deref(a.DeclineCode), AVSResponseCode: deref(a.AVSResult), CVVResponseCode: deref(a.CVVResult),
		SchemeTransactionID: deref(a.SchemeTransactionID),
	}
	switch a.Status {
	case mcAuthorized, mcCaptured, mcVoided:
		r.Outcome = coreapi.OutcomeSucceeded
	case mcDeclined:
		r.Outcome = coreapi.OutcomeDeclined
	case mcPending:
		r.Outcome = coreapi.OutcomePending
	default: // failed, or a status this connector does not know
		r.Outcome = coreapi.OutcomeFailed
	}
	return r
}

// parseMockCardStep maps a capture's, void's or refund's answer: the
// authorization after it. A 422 is mock-card's refusal of the operation
// (nothing left to capture, not voidable): a decline with its code.
func parseMockCardStep(resp *zone.DetokenizeResponse, kind, reference string) (coreapi.ConnectorResult, error) {
	if resp.Status == http.StatusUnauthorized {
		r := refusedCredentials(resp)
		r.Outcome = coreapi.OutcomeDeclined // refused: nothing was done
		return r, nil
	}
	if resp.Status == http.StatusUnprocessableEntity {
		if e, err := apierror.Parse(resp.Body); err == nil {
			return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: e.Code, RawResponseDescription: e.Message}, nil
		}
	}
	if resp.Status >= 500 {
		return unknown(MockCardName, kind, fmt.Errorf("status %d", resp.Status))
	}
	a, err := decodeAuthorization(resp, http.StatusOK)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	r := coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: a.ID}
	var steps []mockCardStep
	switch kind {
	case "captures":
		steps = a.Captures
	case "refunds":
		steps = a.Refunds
	case "voids":
		if a.Status != mcVoided {
			return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: "not_voided"}
		}
		return r, nil
	}
	s, ok := Step(cardSteps(steps), reference)
	if !ok {
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: "operation_missing"}
	}
	r.Reference = s.ID
	if s.Outcome != "" {
		r.Outcome = s.Outcome
	}
	return r, nil
}

// parseMockCardState maps the lookup's answer.
func parseMockCardState(resp *zone.DetokenizeResponse) (CardState, error) {
	a, err := decodeAuthorization(resp, http.StatusOK)
	if err != nil {
		return CardState{}, err
	}
	return a.state(), nil
}

func (a *mockCardAuthorization) state() CardState {
	s := CardState{
		ConnectorResult: a.result(), Status: a.Status,
		AuthorizedAmount: a.AuthorizedAmount, CapturedAmount: a.CapturedAmount, RefundedAmount: a.RefundedAmount,
		Voided: a.Status == mcVoided,
	}
	s.Captures, s.Refunds = cardSteps(a.Captures), cardSteps(a.Refunds)
	return s
}

// mockCardStepOutcomes are the outcomes of the operation statuses
// other than succeeded (mock-card's default, and the zero Outcome).
var mockCardStepOutcomes = map[string]coreapi.Outcome{mcPending: coreapi.OutcomePending, mcFailed: coreapi.OutcomeFailed}

func cardSteps(in []mockCardStep) []CardStep {
	out := make([]CardStep, len(in))
	for i, s := range in {
		out[i] = CardStep{ID: s.ID, Reference: mockCardReference(s.IdempotencyKey), Amount: s.Amount, Outcome: mockCardStepOutcomes[s.Status]}
	}
	return out
}

// mockCardKeyPrefix marks a key that is a UUID reference in base32.
const mockCardKeyPrefix = "ref_"

// mockCardKeyEncoding writes a UUID's 16 bytes as 26 characters of a-z
// and 2-7.
var mockCardKeyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// MockCardKey is the Idempotency-Key a reference is sent to mock-card
// with. A UUID, which every reference core-api makes is, goes as "ref_"
// and its bytes in lower-case base32: the digits of a UUID's groups,
// joined by its dashes, may read as a card number (12 to 19 digits that
// pass the Luhn check), which mock-card refuses in a key and vault-proxy
// masks in the answers core-api gets, where the key comes back. Any other
// reference goes as it is.
func MockCardKey(reference string) string {
	id, err := uuid.Parse(reference)
	if err != nil || id.String() != reference {
		return reference
	}
	return mockCardKeyPrefix + strings.ToLower(mockCardKeyEncoding.EncodeToString(id[:]))
}

// mockCardReference is the reference a key mock-card lists was sent for
// (MockCardKey's inverse).
func mockCardReference(key string) string {
	enc, ok := strings.CutPrefix(key, mockCardKeyPrefix)
	if !ok {
		return key
	}
	b, err := mockCardKeyEncoding.DecodeString(strings.ToUpper(enc))
	if err != nil || len(b) != len(uuid.UUID{}) || strings.ToLower(enc) != enc {
		return key
	}
	return uuid.UUID(b).String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
