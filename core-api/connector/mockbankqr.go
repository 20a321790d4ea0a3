package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"

	coreapi "github.com/payorch/core-api"
)

// MockBankSandboxAPIKey and MockBankSandboxWebhookSecret are the built-in
// sandbox configuration's (a pix payment outside production that names no
// payment service and whose merchant account has no default for pix):
// public, as a processor's published sandbox test credentials are.
// mock-bank signs with the secret it is started with, by default this one.
const (
	MockBankSandboxAPIKey        = "mb_test_payorch_builtin_sandbox"
	MockBankSandboxWebhookSecret = "whsec_mock_bank_sandbox_public"
)

var mockBankKeyRE = regexp.MustCompile(`^mb_test_[A-Za-z0-9_-]{8,120}$`)

// Schemas declares mock-bank's configuration for pix payments: the API
// key mock-bank issued the merchant and the secret it signs its
// notifications with.
func (MockBank) Schemas() Schemas {
	return Schemas{
		Methods: []string{coreapi.MethodPix, coreapi.MethodBank},
		Credentials: Schema{
			{Name: "api_key", Kind: KindString, Required: true, MinLength: 16, MaxLength: 128, Pattern: mockBankKeyRE, PatternText: "mb_test_ and letters, digits, _ or -"},
			{Name: "webhook_secret", Kind: KindString, Required: true, MinLength: 16, MaxLength: 128},
		},
	}
}

// mockBankCharge is mock-bank's charge.
type mockBankCharge struct {
	ID        string    `json:"id"`
	Reference string    `json:"reference"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	Status    string    `json:"status"`
	QRCode    string    `json:"qr_code"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CreateQR sends POST /v1/qr-charges.
func (m MockBank) CreateQR(ctx context.Context, r QRCharge) (coreapi.ConnectorResult, error) {
	in := map[string]any{"reference": r.Reference, "amount": r.Amount, "currency": r.Currency,
		"notification_url": r.NotificationURL, "expires_in_seconds": int64(r.ExpiresIn / time.Second)}
	if len(r.CartItems) > 0 {
		in["cart_items"] = r.CartItems
	}
	body, err := json.Marshal(in)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	var c mockBankCharge
	status, code, err := m.call(ctx, r.Config, http.MethodPost, "/v1/qr-charges", body, &c)
	switch {
	case err != nil:
		return unknown(MockBankName, "qr charge", err)
	case status == http.StatusBadRequest && code == "unsupported_currency":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: code, RawResponseCode: code}, nil
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockBankName, Status: status, Code: code}
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeCapturePending, Reference: c.ID, QRCode: c.QRCode, ExpiresAt: c.ExpiresAt,
		RawResponseCode: c.Status}, nil
}

// CancelQR sends POST /v1/qr-charges/{id}/cancel.
func (m MockBank) CancelQR(ctx context.Context, chargeID string, cfg Config) (coreapi.ConnectorResult, error) {
	var c mockBankCharge
	status, code, err := m.call(ctx, cfg, http.MethodPost, "/v1/qr-charges/"+url.PathEscape(chargeID)+"/cancel", nil, &c)
	switch {
	case err != nil:
		return unknown(MockBankName, "qr cancel", err)
	case status == http.StatusNotFound:
		return coreapi.ConnectorResult{}, fmt.Errorf("%w: %s", ErrNotFound, code)
	case status/100 != 2:
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockBankName, Status: status, Code: code}
	}
	return chargeResult(c), nil
}

// chargeResult is what a charge's status says of its capture.
func chargeResult(c mockBankCharge) coreapi.ConnectorResult {
	switch c.Status {
	case "paid":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: c.ID, RawResponseCode: c.Status}
	case "expired":
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, Reference: c.ID, ErrorCode: "expired", RawResponseCode: c.Status}
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending, Reference: c.ID, RawResponseCode: c.Status}
}

// call sends a request to mock-bank and decodes a 2xx answer into out;
// any other answer's error code is returned with its status.
func (m MockBank) call(ctx context.Context, cfg Config, method, path string, body []byte, out any) (int, string, error) {
	c := simulatorClient{name: MockBankName, baseURL: m.BaseURL, authorization: bearer(credential(cfg, "api_key", MockBankSandboxAPIKey)), http: m.HTTP, timeout: 30 * time.Second, maxAnswer: 1 << 16}
	return c.callCoded(ctx, method, path, body, out)
}
