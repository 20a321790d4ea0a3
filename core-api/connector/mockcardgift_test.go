package connector_test

import (
	"context"
	"errors"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/zone"
)

const giftPM = "5b1e8c2a-0f3d-4e7a-9b6c-2d4f8a1e3c57"

// Gift card calls carry the number and PIN as placeholders only, with
// the purposes vault-proxy opens a gift card for, and the answers map to
// outcomes: approved, declined with the processor's code, a refund by
// its reference, a balance, a refused PIN.
func TestMockCardGiftCards(t *testing.T) {
	ctx := context.Background()
	redeem := func(m connector.MockCard) (coreapi.ConnectorResult, error) {
		return m.Redeem(ctx, connector.GiftCardRedemption{MerchantAccountID: "m-1", PaymentMethodID: giftPM, Reference: "txn-1", Amount: 600, Currency: "USD"})
	}
	t.Run("redemption approved", func(t *testing.T) {
		rec := &recorder{answer: &zone.DetokenizeResponse{Status: 201, Body: []byte(`{"type":"gift-card-redemption","id":"red_a","status":"approved","redeemed_amount":600,"decline_code":null,"response_message":"Approved","remaining_balance":400}`)}}
		res, err := redeem(connector.MockCard{VaultProxy: rec})
		if err != nil || res.Outcome != coreapi.OutcomeSucceeded || res.Reference != "red_a" {
			t.Fatalf("redeem = %+v, %v", res, err)
		}
		g := rec.got
		want := `{"number":"{{ CARD_NUMBER_1 }}","pin":"{{ GIFT_CARD_PIN_1 }}","amount":600,"currency":"USD"}`
		if g.Body != want || g.Purpose != "redemption" || g.Path != "/v1/gift-cards/redemptions" || g.Headers["idempotency-key"] != "txn-1" ||
			len(g.PaymentMethod) != 1 || g.PaymentMethod[0] != giftPM {
			t.Fatalf("request = %+v", g)
		}
	})
	for _, code := range []string{"insufficient_balance", "invalid_pin"} {
		t.Run("redemption declined "+code, func(t *testing.T) {
			rec := &recorder{answer: &zone.DetokenizeResponse{Status: 201, Body: []byte(`{"type":"gift-card-redemption","id":"red_d","status":"declined","redeemed_amount":0,"decline_code":"` + code + `","response_message":"no"}`)}}
			res, err := redeem(connector.MockCard{VaultProxy: rec})
			if err != nil || res.Outcome != coreapi.OutcomeDeclined || res.ErrorCode != code {
				t.Fatalf("redeem = %+v, %v", res, err)
			}
		})
	}
	t.Run("redemption without an answer", func(t *testing.T) {
		res, err := redeem(connector.MockCard{VaultProxy: &recorder{answer: &zone.DetokenizeResponse{Status: 503, Body: []byte(`{}`)}}})
		if !errors.Is(err, connector.ErrOutcomeUnknown) || res.Outcome != coreapi.OutcomePending {
			t.Fatalf("redeem = %+v, %v; want pending", res, err)
		}
	})
	t.Run("refund", func(t *testing.T) {
		rec := &recorder{answer: &zone.DetokenizeResponse{Status: 200, Body: []byte(`{"type":"gift-card-redemption","id":"red_a","status":"approved","redeemed_amount":600,"refunded_amount":100,"refunds":[{"id":"ref_1","idempotency_key":"rf-1","amount":100}]}`)}}
		res, err := connector.MockCard{VaultProxy: rec}.RefundRedemption(ctx, connector.CardOperation{MerchantAccountID: "m-1", PaymentMethodID: giftPM, AuthorizationID: "red_a", Amount: 100, Reference: "rf-1"})
		if err != nil || res.Outcome != coreapi.OutcomeSucceeded || res.Reference != "ref_1" {
			t.Fatalf("refund = %+v, %v", res, err)
		}
		if rec.got.Path != "/v1/gift-cards/redemptions/red_a/refunds" || rec.got.Body != `{"amount":100}` {
			t.Fatalf("request = %+v", rec.got)
		}
	})
	t.Run("lookup", func(t *testing.T) {
		rec := &recorder{answer: &zone.DetokenizeResponse{Status: 200, Body: []byte(`{"type":"gift-card-redemption","id":"red_a","status":"approved","redeemed_amount":600,"refunds":[]}`)}}
		st, err := connector.MockCard{VaultProxy: rec}.LookupRedemption(ctx, connector.CardLookup{MerchantAccountID: "m-1", PaymentMethodID: giftPM, Reference: "txn-1"})
		if err != nil || st.Outcome != coreapi.OutcomeSucceeded || st.CapturedAmount != 600 || rec.got.Path != "/v1/gift-cards/redemptions?idempotency_key=txn-1" || rec.got.Body != "" {
			t.Fatalf("lookup = %+v, %v (request %+v)", st, err, rec.got)
		}
	})
	t.Run("balance", func(t *testing.T) {
		rec := &recorder{answer: &zone.DetokenizeResponse{Status: 200, Body: []byte(`{"type":"gift-card-balance","balance":400}`)}}
		b, err := connector.MockCard{VaultProxy: rec}.Balance(ctx, connector.GiftCardBalanceQuery{MerchantAccountID: "m-1", PaymentMethodID: giftPM})
		if err != nil || b != 400 || rec.got.Purpose != "balance" || rec.got.Body != `{"number":"{{ CARD_NUMBER_1 }}","pin":"{{ GIFT_CARD_PIN_1 }}"}` {
			t.Fatalf("balance = %d, %v (request %+v)", b, err, rec.got)
		}
	})
	t.Run("balance refused", func(t *testing.T) {
		rec := &recorder{answer: &zone.DetokenizeResponse{Status: 422, Body: []byte(`{"type":"error","code":"invalid_pin","status":422,"message":"the PIN does not match the gift card"}`)}}
		_, err := connector.MockCard{VaultProxy: rec}.Balance(ctx, connector.GiftCardBalanceQuery{MerchantAccountID: "m-1", PaymentMethodID: giftPM})
		var pe *connector.ProcessorError
		if !errors.As(err, &pe) || pe.Code != "invalid_pin" {
			t.Fatalf("balance = %v, want the processor's invalid_pin", err)
		}
	})
	if _, err := connector.NewRegistry(connector.MockCard{}).GiftCards(connector.MockCardName); err != nil {
		t.Fatalf("mock-card is not registered as a gift card connector: %v", err)
	}
	if _, err := connector.NewRegistry(connector.MockBank{}).GiftCards("mock-bank"); !errors.Is(err, connector.ErrUnknown) {
		t.Fatalf("mock-bank redeems gift cards: %v", err)
	}
}
