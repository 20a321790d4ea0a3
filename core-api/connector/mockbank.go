package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	coreapi "github.com/payorch/core-api"
)

// MockBankName is the registry name of the bank sandbox simulator.
const MockBankName = "mock-bank"

// MockBank is the connector of mock-bank, the sandbox bank, registered
// as "mock-bank" in the sandbox and development environments only. Every
// call goes over HTTP to the mock-bank simulator at BaseURL
// (docs/sandbox/mock-bank.md): instant bank transfers by QR code
// (QRConnector, mockbankqr.go), bank debit mandates and debits (ACH,
// SEPA, Bacs; BankDebitConnector, here), and the signed notifications
// about all of them (mockbanknotify.go).
//
// A mandate is created pending and activates when mock-bank notifies it
// (a tester plays the bank: POST /sandbox/mandates/{id}/activate); a
// debit is accepted pending and its result is notified a moment later.
type MockBank struct {
	BaseURL string       // the simulator's; "" refuses every call
	HTTP    *http.Client // nil: a client with a 30 s timeout
}

// DeclinedHolderName makes mock-bank fail a mandate.
const DeclinedHolderName = "Mandate Declined"

// Name is "mock-bank".
func (MockBank) Name() string { return MockBankName }

// mockBankMandate is mock-bank's mandate.
type mockBankMandate struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// CreateMandate sends POST /v1/mandates with the payment method's token as
// the reference (the same token answers the same mandate), under the
// configuration's API key (the built-in sandbox key without one).
func (m MockBank) CreateMandate(ctx context.Context, r MandateRequest) (MandateResult, error) {
	body, err := json.Marshal(map[string]any{"reference": r.PaymentMethodID, "scheme": r.Scheme, "currency": r.Currency,
		"account_holder_name": r.AccountHolderName, "notification_url": r.NotificationURL})
	if err != nil {
		return MandateResult{}, err
	}
	var mb mockBankMandate
	status, code, err := m.call(ctx, r.Config, http.MethodPost, "/v1/mandates", body, &mb)
	switch {
	case err != nil:
		return MandateResult{}, fmt.Errorf("mock-bank: mandate: %w", err)
	case status/100 != 2:
		return MandateResult{}, &ProcessorError{Connector: MockBankName, Status: status, Code: code}
	}
	return MandateResult(mb), nil
}

// RevokeMandate sends POST /v1/mandates/{id}/revoke; a revoked mandate
// answers revoked again.
func (m MockBank) RevokeMandate(ctx context.Context, _, mandateID string, cfg Config) (MandateResult, error) {
	var mb mockBankMandate
	status, code, err := m.call(ctx, cfg, http.MethodPost, "/v1/mandates/"+url.PathEscape(mandateID)+"/revoke", nil, &mb)
	switch {
	case err != nil:
		return MandateResult{}, fmt.Errorf("mock-bank: mandate revocation: %w", err)
	case status == http.StatusNotFound:
		return MandateResult{}, fmt.Errorf("%w: %s", ErrNotFound, code)
	case status/100 != 2:
		return MandateResult{}, &ProcessorError{Connector: MockBankName, Status: status, Code: code}
	}
	return MandateResult(mb), nil
}

// mockBankDebit is mock-bank's debit.
type mockBankDebit struct {
	ID          string `json:"id"`
	Reference   string `json:"reference"`
	Status      string `json:"status"`
	FailureCode string `json:"failure_code"`
}

// Debit sends POST /v1/debits. mock-bank's refusals of the debit itself
// (a currency its scheme does not settle in, a mandate not active) are
// declines; its result arrives as a notification.
func (m MockBank) Debit(ctx context.Context, r BankDebit) (coreapi.ConnectorResult, error) {
	in := map[string]any{"reference": r.Reference, "account": r.PaymentMethodID, "scheme": r.Scheme, "amount": r.Amount,
		"currency": r.Currency, "notification_url": r.NotificationURL}
	if r.MandateID != "" {
		in["mandate_id"] = r.MandateID
	}
	if len(r.CartItems) > 0 {
		in["cart_items"] = r.CartItems
	}
	body, err := json.Marshal(in)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	var d mockBankDebit
	status, code, err := m.call(ctx, r.Config, http.MethodPost, "/v1/debits", body, &d)
	switch {
	case err != nil:
		return unknown(MockBankName, "bank debit", err)
	case status == http.StatusUnprocessableEntity || status == http.StatusBadRequest && code == "unsupported_currency":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: code, RawResponseCode: code}, nil
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockBankName, Status: status, Code: code}
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeCapturePending, Reference: d.ID, RawResponseCode: d.Status}, nil
}

// LookupDebit sends GET /v1/debits?reference=: the debit sent with the
// reference, a pending one as capture pending (the bank took it).
func (m MockBank) LookupDebit(ctx context.Context, r DebitLookup) (coreapi.ConnectorResult, error) {
	var list struct {
		Items []mockBankObject `json:"items"`
	}
	status, code, err := m.call(ctx, r.Config, http.MethodGet, "/v1/debits?reference="+url.QueryEscape(r.Reference), nil, &list)
	switch {
	case err != nil:
		return coreapi.ConnectorResult{}, err
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockBankName, Status: status, Code: code}
	case len(list.Items) == 0:
		return coreapi.ConnectorResult{}, ErrNotFound
	}
	res := debitResult(list.Items[0])
	if res.Outcome == coreapi.OutcomePending {
		res.Outcome = coreapi.OutcomeCapturePending
	}
	return res, nil
}

// debitResult is what a debit's status says of its capture.
func debitResult(d mockBankObject) coreapi.ConnectorResult {
	switch d.Status {
	case "succeeded":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: d.ID, RawResponseCode: d.Status}
	case "failed":
		code := strings.TrimSpace(d.FailureCode)
		if code == "" {
			code = "debit_failed"
		}
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, Reference: d.ID, ErrorCode: code, RawResponseCode: code}
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending, Reference: d.ID, RawResponseCode: d.Status}
}
