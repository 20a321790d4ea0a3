package connector

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
)

// MockDirectName is the registry name of the connector to mock-direct,
// the sandbox wallet of direct integrations.
const MockDirectName = "mock-direct"

// The built-in sandbox configuration's client (a zero Config): public, as
// a processor's published sandbox app is.
const (
	MockDirectSandboxClientID = "payorch_builtin_sandbox"
	mockDirectSandboxSecret   = "sandbox"
)

// MockDirect is the direct-integration connector to mock-direct
// (docs/sandbox/mock-direct.md), registered as "mock-direct" outside
// production when core-api is given the simulator's address. It is
// written as a real wallet's connector is: its own wire types from the
// simulator's documented contract, over HTTP.
type MockDirect struct {
	BaseURL string       // the simulator's, no trailing slash
	HTTP    *http.Client // nil: a client with a 30 s timeout
}

// Name is "mock-direct".
func (MockDirect) Name() string { return MockDirectName }

var mockDirectIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Schemas declares mock-direct's configuration: the client id and secret
// the wallet issued the merchant, and the merchant id the SDK names.
func (MockDirect) Schemas() Schemas {
	id := func(name string, required bool) Field {
		return Field{Name: name, Kind: KindString, Required: required, MinLength: 8, MaxLength: 128, Pattern: mockDirectIDRE, PatternText: "letters, digits, _ and - only"}
	}
	return Schemas{
		Methods:     []string{coreapi.MethodPayPal},
		Credentials: Schema{id("client_id", true), {Name: "client_secret", Kind: KindString, Required: true, MinLength: 1, MaxLength: 256}},
		Settings:    Schema{id("merchant_id", false)},
	}
}

// Client is the configuration's client id and merchant id.
func (MockDirect) Client(c Config) DirectClient {
	dc := DirectClient{ClientID: MockDirectSandboxClientID, FundingSource: "paypal"}
	if v, ok := c.Credentials["client_id"]; ok {
		dc.ClientID = v.Reveal()
	}
	if v, ok := c.Settings["merchant_id"].(string); ok {
		dc.MerchantID = v
	}
	return dc
}

// mockDirectOrder is the simulator's order.
type mockDirectOrder struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Intent   string `json:"intent"`
	Payments *struct {
		Captures       []mockDirectPayment `json:"captures"`
		Authorizations []mockDirectPayment `json:"authorizations"`
		Refunds        []mockDirectPayment `json:"refunds"`
	} `json:"payments"`
	Links []struct {
		Href string `json:"href"`
		Rel  string `json:"rel"`
	} `json:"links"`
}

// mockDirectPayment is a capture, authorization or refund of an order.
type mockDirectPayment struct {
	ID        string           `json:"id"`
	Status    string           `json:"status"`
	Amount    mockDirectAmount `json:"amount"`
	RequestID string           `json:"request_id"`
}

type mockDirectError struct {
	Name    string `json:"name"`
	Details []struct {
		Issue string `json:"issue"`
	} `json:"details"`
}

type mockDirectAmount struct {
	CurrencyCode string `json:"currency_code"`
	Value        int64  `json:"value"`
}

var mockDirectIntents = map[string]string{coreapi.IntentCapture: "CAPTURE", coreapi.IntentAuthorize: "AUTHORIZE"}

// CreateOrder opens the order.
func (m MockDirect) CreateOrder(ctx context.Context, r DirectOrder) (coreapi.ConnectorResult, error) {
	body, _ := json.Marshal(struct {
		Intent      string             `json:"intent"`
		ReferenceID string             `json:"reference_id"`
		Amount      mockDirectAmount   `json:"amount"`
		CartItems   []coreapi.CartItem `json:"cart_items,omitempty"`
	}{mockDirectIntents[r.Intent], r.Reference, mockDirectAmount{r.Currency, r.Amount}, r.CartItems})
	var o mockDirectOrder
	_, e, err := m.call(ctx, r.Config, http.MethodPost, "/v2/checkout/orders", r.Reference+":order", body, &o)
	if err != nil {
		return unknown(MockDirectName, "create order", err)
	}
	if e != nil {
		return coreapi.ConnectorResult{}, e
	}
	res := coreapi.ConnectorResult{Outcome: coreapi.OutcomeApprovalRequired, Reference: o.ID, RawResponseCode: o.Status}
	for _, l := range o.Links {
		if l.Rel == "approve" {
			res.ApprovalURL = l.Href
		}
	}
	return res, nil
}

// Complete captures or authorizes the approved order.
func (m MockDirect) Complete(ctx context.Context, r DirectCompletion) (coreapi.ConnectorResult, error) {
	action := "capture"
	if r.Intent == coreapi.IntentAuthorize {
		action = "authorize"
	}
	var o mockDirectOrder
	_, e, err := m.call(ctx, r.Config, http.MethodPost, "/v2/checkout/orders/"+url.PathEscape(r.OrderID)+"/"+action, r.Reference+":"+action, nil, &o)
	if err != nil {
		return unknown(MockDirectName, action, err)
	}
	if e == nil {
		return orderResult(o), nil
	}
	switch e.Code {
	case "ORDER_DECLINED_BY_PAYER":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, Reference: r.OrderID, ErrorCode: "buyer_declined", RawResponseCode: e.Code}, nil
	case "ORDER_NOT_APPROVED":
		return coreapi.ConnectorResult{}, ErrNotApproved
	}
	return coreapi.ConnectorResult{}, e
}

// LookupOrder reads the order.
func (m MockDirect) LookupOrder(ctx context.Context, r DirectCompletion) (coreapi.ConnectorResult, error) {
	var o mockDirectOrder
	status, e, err := m.call(ctx, r.Config, http.MethodGet, "/v2/checkout/orders/"+url.PathEscape(r.OrderID), "", nil, &o)
	switch {
	case err != nil:
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, fmt.Errorf("%w: %s lookup: %w", ErrOutcomeUnknown, MockDirectName, err)
	case status == http.StatusNotFound:
		return coreapi.ConnectorResult{}, ErrNotFound
	case e != nil:
		return coreapi.ConnectorResult{}, e
	}
	switch o.Status {
	case "COMPLETED":
		return orderResult(o), nil
	case "DECLINED":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, Reference: o.ID, ErrorCode: "buyer_declined", RawResponseCode: o.Status}, nil
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeApprovalRequired, Reference: o.ID, RawResponseCode: o.Status}, nil
}

// LookupOperations reads the order: its captures and refunds by request
// id, and its authorization's status.
func (m MockDirect) LookupOperations(ctx context.Context, r DirectCompletion) (DirectState, error) {
	var o mockDirectOrder
	status, e, err := m.call(ctx, r.Config, http.MethodGet, "/v2/checkout/orders/"+url.PathEscape(r.OrderID), "", nil, &o)
	switch {
	case err != nil:
		return DirectState{}, fmt.Errorf("%w: %s lookup: %w", ErrOutcomeUnknown, MockDirectName, err)
	case status == http.StatusNotFound:
		return DirectState{}, ErrNotFound
	case e != nil:
		return DirectState{}, e
	}
	var st DirectState
	if p := o.Payments; p != nil {
		steps := func(ps []mockDirectPayment) []CardStep {
			out := make([]CardStep, 0, len(ps))
			for _, x := range ps {
				if x.RequestID != "" {
					out = append(out, CardStep{ID: x.ID, Reference: x.RequestID, Amount: x.Amount.Value})
				}
			}
			return out
		}
		st.Captures, st.Refunds = steps(p.Captures), steps(p.Refunds)
		st.Voided = len(p.Authorizations) > 0 && p.Authorizations[0].Status == "VOIDED"
	}
	return st, nil
}

// Capture sends POST /v2/checkout/orders/{id}/captures.
func (m MockDirect) Capture(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error) {
	return m.operation(ctx, r, "captures", true)
}

// Void sends POST /v2/checkout/orders/{id}/void.
func (m MockDirect) Void(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error) {
	return m.operation(ctx, r, "void", false)
}

// Refund sends POST /v2/checkout/orders/{id}/refunds.
func (m MockDirect) Refund(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error) {
	return m.operation(ctx, r, "refunds", true)
}

// operation sends one operation on the order, with its reference as the
// request id: the wallet's refusal of it (422) is a decline with the
// wallet's issue, in lower case, as the error code.
func (m MockDirect) operation(ctx context.Context, r DirectOperation, kind string, withAmount bool) (coreapi.ConnectorResult, error) {
	var body []byte
	if withAmount {
		body, _ = json.Marshal(struct {
			Amount mockDirectAmount `json:"amount"`
		}{mockDirectAmount{r.Currency, r.Amount}})
	}
	var out struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	_, e, err := m.call(ctx, r.Config, http.MethodPost, "/v2/checkout/orders/"+url.PathEscape(r.OrderID)+"/"+kind, r.Reference, body, &out)
	switch {
	case err != nil:
		return unknown(MockDirectName, kind, err)
	case e != nil && e.Status == http.StatusUnprocessableEntity:
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, Reference: r.OrderID, ErrorCode: strings.ToLower(e.Code), RawResponseCode: e.Code}, nil
	case e != nil:
		return coreapi.ConnectorResult{}, e
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: out.ID, RawResponseCode: out.Status}, nil
}

// orderResult is a completed order's success; the reference stays the
// order's id, which later lookups name.
func orderResult(o mockDirectOrder) coreapi.ConnectorResult {
	res := coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: o.ID, RawResponseCode: o.Status}
	if p := o.Payments; p != nil {
		for _, c := range append(p.Captures, p.Authorizations...) {
			res.RawResponseDescription = "payment " + c.ID
		}
	}
	return res
}

// call sends one request and decodes a 2xx answer into out; another
// answer is status and a *ProcessorError; err is a call without an answer.
func (m MockDirect) call(ctx context.Context, cfg Config, method, path, requestID string, body []byte, out any) (int, *ProcessorError, error) {
	id, secret := MockDirectSandboxClientID, mockDirectSandboxSecret
	if v, ok := cfg.Credentials["client_id"]; ok {
		id = v.Reveal()
	}
	if v, ok := cfg.Credentials["client_secret"]; ok {
		secret = v.Reveal()
	}
	var extra http.Header
	if requestID != "" {
		extra = http.Header{"Paypal-Request-Id": {requestID}}
	}
	c := simulatorClient{name: MockDirectName, baseURL: m.BaseURL, authorization: "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret)), http: m.HTTP, timeout: 30 * time.Second, maxAnswer: 1 << 20}
	status, raw, err := c.do(ctx, method, path, body, extra)
	if err != nil {
		return 0, nil, err
	}
	if status >= 500 {
		return 0, nil, fmt.Errorf("processor answered %d", status)
	}
	if status >= 300 {
		var e mockDirectError
		_ = json.Unmarshal(raw, &e)
		pe := &ProcessorError{Connector: MockDirectName, Status: status, Code: e.Name}
		if len(e.Details) > 0 {
			pe.Code = e.Details[0].Issue
		}
		return status, pe, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return 0, nil, errors.New("undecodable answer")
	}
	return status, nil, nil
}
