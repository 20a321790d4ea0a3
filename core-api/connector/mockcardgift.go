package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
)

// mock-card's gift card routes (docs/sandbox/mock-card.md, "Gift cards")
// and the purposes vault-proxy opens a gift card's number and PIN for.
const (
	mockCardRedemptions = "/v1/gift-cards/redemptions"
	mockCardGiftBalance = "/v1/gift-cards/balance"
	purposeRedemption   = "redemption"
	purposeBalance      = "balance"
)

// mockCardGiftCard is a gift card in a request: placeholders only.
type mockCardGiftCard struct {
	Number string `json:"number"`
	PIN    string `json:"pin"`
}

var giftCardPlaceholders = mockCardGiftCard{Number: "{{ CARD_NUMBER_1 }}", PIN: "{{ GIFT_CARD_PIN_1 }}"}

type mockCardRedemptionRequest struct {
	mockCardGiftCard
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	CartItems inertJSON `json:"cart_items,omitempty"`
}

// mockCardRedemption is mock-card's redemption answer.
type mockCardRedemption struct {
	Type            string         `json:"type"`
	ID              string         `json:"id"`
	Status          string         `json:"status"` // approved, declined
	RedeemedAmount  int64          `json:"redeemed_amount"`
	RefundedAmount  int64          `json:"refunded_amount"`
	DeclineCode     *string        `json:"decline_code"`
	ResponseMessage string         `json:"response_message"`
	Refunds         []mockCardStep `json:"refunds"`
}

// Redeem sends POST /v1/gift-cards/redemptions.
func (m MockCard) Redeem(ctx context.Context, r GiftCardRedemption) (coreapi.ConnectorResult, error) {
	in := mockCardRedemptionRequest{mockCardGiftCard: giftCardPlaceholders, Amount: r.Amount, Currency: r.Currency}
	if len(r.CartItems) > 0 {
		// The merchant's text beside the placeholders: inert, so that
		// vault-proxy fills only the connector's own.
		var err error
		if in.CartItems, err = marshalInert(r.CartItems); err != nil {
			return coreapi.ConnectorResult{}, err
		}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purposeRedemption, http.MethodPost, mockCardRedemptions, MockCardKey(r.Reference), body, "")
	if err != nil {
		return unknownOr(err, "redemption")
	}
	switch {
	case resp.Status == http.StatusUnauthorized:
		return refusedCredentials(resp), nil
	case resp.Status >= 500:
		return unknown(MockCardName, "redemption", fmt.Errorf("status %d", resp.Status))
	}
	red, err := decodeRedemption(resp, http.StatusCreated)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	return red.result(), nil
}

// RefundRedemption sends POST /v1/gift-cards/redemptions/{id}/refunds.
func (m MockCard) RefundRedemption(ctx context.Context, r CardOperation) (coreapi.ConnectorResult, error) {
	if r.AuthorizationID == "" {
		return coreapi.ConnectorResult{}, fmt.Errorf("mock-card: no redemption id")
	}
	body, err := json.Marshal(mockCardAmount{Amount: r.Amount})
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	path := mockCardRedemptions + "/" + url.PathEscape(r.AuthorizationID) + "/refunds"
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purposeRefund, http.MethodPost, path, MockCardKey(r.Reference), body, "")
	if err != nil {
		return unknownOr(err, "refunds")
	}
	switch {
	case resp.Status == http.StatusUnauthorized:
		res := refusedCredentials(resp)
		res.Outcome = coreapi.OutcomeDeclined
		return res, nil
	case resp.Status == http.StatusUnprocessableEntity:
		if e, err := apierror.Parse(resp.Body); err == nil {
			return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: e.Code, RawResponseDescription: e.Message}, nil
		}
	case resp.Status >= 500:
		return unknown(MockCardName, "refunds", fmt.Errorf("status %d", resp.Status))
	}
	red, err := decodeRedemption(resp, http.StatusOK)
	if err != nil {
		return coreapi.ConnectorResult{}, err
	}
	s, ok := Step(cardSteps(red.Refunds), r.Reference)
	if !ok {
		return coreapi.ConnectorResult{}, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: "operation_missing"}
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: s.ID}, nil
}

// LookupRedemption sends GET /v1/gift-cards/redemptions?idempotency_key=K,
// which needs no placeholder.
func (m MockCard) LookupRedemption(ctx context.Context, r CardLookup) (CardState, error) {
	path := mockCardRedemptions + "?" + url.Values{"idempotency_key": {MockCardKey(r.Reference)}}.Encode()
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purposeLookup, http.MethodGet, path, "", nil, "")
	if err != nil {
		return CardState{}, err
	}
	red, err := decodeRedemption(resp, http.StatusOK)
	if err != nil {
		return CardState{}, err
	}
	// A redemption is a sale: what it took is authorized and captured.
	return CardState{ConnectorResult: red.result(), Status: red.Status,
		AuthorizedAmount: red.RedeemedAmount, CapturedAmount: red.RedeemedAmount, RefundedAmount: red.RefundedAmount,
		Refunds: cardSteps(red.Refunds)}, nil
}

// Balance sends POST /v1/gift-cards/balance: the number and PIN go in
// the body, never in a URL.
func (m MockCard) Balance(ctx context.Context, r GiftCardBalanceQuery) (int64, error) {
	body, err := json.Marshal(giftCardPlaceholders)
	if err != nil {
		return 0, err
	}
	resp, err := m.call(ctx, r.Config, r.MerchantAccountID, r.PaymentMethodID, purposeBalance, http.MethodPost, mockCardGiftBalance, "", body, "")
	if err != nil {
		return 0, err
	}
	if resp.Status != http.StatusOK {
		return 0, mockCardRefusal(resp)
	}
	var b struct {
		Type    string `json:"type"`
		Balance *int64 `json:"balance"`
	}
	if err := json.Unmarshal(resp.Body, &b); err != nil || b.Type != "gift-card-balance" || b.Balance == nil {
		return 0, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: "unreadable_answer"}
	}
	return *b.Balance, nil
}

func decodeRedemption(resp *zone.DetokenizeResponse, want int) (*mockCardRedemption, error) {
	if resp.Status != want {
		return nil, mockCardRefusal(resp)
	}
	var r mockCardRedemption
	if err := json.Unmarshal(resp.Body, &r); err != nil || r.Type != "gift-card-redemption" || r.ID == "" {
		return nil, &ProcessorError{Connector: MockCardName, Status: resp.Status, Code: "unreadable_answer"}
	}
	return &r, nil
}

// result is the redemption's own answer.
func (r *mockCardRedemption) result() coreapi.ConnectorResult {
	res := coreapi.ConnectorResult{Reference: r.ID, ErrorCode: deref(r.DeclineCode), RawResponseDescription: r.ResponseMessage,
		Outcome: coreapi.OutcomeFailed}
	switch r.Status {
	case "approved":
		res.Outcome = coreapi.OutcomeSucceeded
	case "declined":
		res.Outcome = coreapi.OutcomeDeclined
	}
	return res
}
