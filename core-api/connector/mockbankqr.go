package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
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

func mockBankCredential(c Config, name, builtIn string) string {
	if k, ok := c.Credentials[name]; ok {
		return k.Reveal()
	}
	return builtIn
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

type mockBankError struct {
	Error string `json:"error"`
}

// CreateQR sends POST /v1/qr-charges.
func (m MockBank) CreateQR(ctx context.Context, r QRCharge) (coreapi.ConnectorResult, error) {
	body, err := json.Marshal(map[string]any{"reference": r.Reference, "amount": r.Amount, "currency": r.Currency,
		"notification_url": r.NotificationURL, "expires_in_seconds": int64(r.ExpiresIn / time.Second)})
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
	if m.BaseURL == "" {
		return 0, "", fmt.Errorf("mock-bank: no simulator URL configured")
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(m.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+mockBankCredential(cfg, "api_key", MockBankSandboxAPIKey))
	req.Header.Set("Content-Type", "application/json")
	client := m.HTTP
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode/100 != 2 {
		var e mockBankError
		_ = json.Unmarshal(b, &e)
		return resp.StatusCode, e.Error, nil
	}
	return resp.StatusCode, "", json.Unmarshal(b, out)
}
