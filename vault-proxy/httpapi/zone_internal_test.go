package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/shared/zone"
	"github.com/payorch/shared/zone/zonetest"
	"github.com/payorch/tokenizer/bank"
	"github.com/valyala/fasthttp"
)

// vault-proxy's side of the zone's request fixtures: its internal routes
// read each as the zone type core-api's client sent it from (core-api's
// vaultclient tests hold that side).
func TestInternalRoutesReadTheZoneFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		read func(*fasthttp.RequestCtx) (any, error)
	}{
		{"detokenize_request.json", readInternal[zone.DetokenizeRequest]},
		{"expiry_update.json", readInternal[zone.ExpiryUpdate]},
		{"merchant_account_closure_attempt.json", readInternal[zone.MerchantAccountClosureAttempt]},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetBody(zonetest.Read(t, tc.file))
			got, err := tc.read(&ctx)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(got)
			if !zonetest.SameJSON(t, raw, zonetest.Read(t, tc.file)) {
				t.Fatalf("read %s", raw)
			}
		})
	}
}

func readInternal[T any](ctx *fasthttp.RequestCtx) (any, error) {
	var v T
	err := decodeInternal(ctx, &v)
	return v, err
}

// The payment methods vault-proxy creates in core-api for what it vaulted
// are the zone's fixtures, built from the merchant's body and the vault's
// record (core-api's httpapi tests take the same fixtures).
func TestVaultedPaymentMethodsAreTheZoneFixtures(t *testing.T) {
	card := zonetest.Decode[zone.VaultedPaymentMethod](t, "vaulted_payment_method_card.json")
	doc, err := strictObject([]byte(`{"method":"card","number":"4111111111111111","expiration_date":"12/30","buyer_id":"`+*card.BuyerID+
		`","external_identifier":"`+*card.ExternalIdentifier+`","buyer_external_identifier":null}`), cardSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := vaultedPaymentMethod("card", uuid.MustParse(card.ID), doc); !reflect.DeepEqual(got, card) {
		t.Fatalf("card: %+v, want %+v", got, card)
	}

	want := zonetest.Decode[zone.VaultedPaymentMethod](t, "vaulted_payment_method_bank.json")
	doc, err = strictObject([]byte(`{"method":"bank","scheme":"ach","account_number":"000123456789","routing_number":"021000021",
		"account_type":"checking","account_holder_name":"Jane Doe","buyer_external_identifier":"customer-42","mandate":{"recurring":true}}`), bankSchema)
	if err != nil {
		t.Fatal(err)
	}
	acct := bank.Account{Scheme: "ach", RoutingNumber: "021000021", AccountType: "checking", AccountHolderName: "Jane Doe", Country: "US", Currency: "USD"}
	if got := vaultedBankAccount(uuid.MustParse(want.ID), doc, acct); !reflect.DeepEqual(got, want) {
		raw, _ := json.Marshal(got)
		t.Fatalf("bank account: %s", raw)
	}
}
