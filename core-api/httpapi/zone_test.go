package httpapi_test

import (
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/zone/zonetest"
)

// The payment methods vault-proxy creates for what it vaulted
// (zone.VaultedPaymentMethod, POST zone.PaymentMethodsPath) are bodies
// core-api takes as they are: its strict decoding and its rules accept
// the zone's fixtures. vault-proxy's tests hold its side to them.
func TestVaultedPaymentMethodFixtures(t *testing.T) {
	for _, file := range []string{"vaulted_payment_method_card.json", "vaulted_payment_method_bank.json"} {
		t.Run(file, func(t *testing.T) {
			var in coreapi.NewPaymentMethod
			if err := httpapi.DecodeStrictBytes(zonetest.Read(t, file), &in); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := in.Validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
		})
	}
}
