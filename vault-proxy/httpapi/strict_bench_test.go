package httpapi

import (
	"testing"

	"github.com/payorch/shared/zone"
	"github.com/valyala/fasthttp"
)

// BenchmarkCardBodyCheck measures the strict check of POST
// /payment-methods' body on the vaulting path (a card and a bank account
// with a mandate), parsed in place.
func BenchmarkCardBodyCheck(b *testing.B) {
	for _, bc := range []struct {
		name string
		body string
		run  func([]byte) error
	}{
		{"card", `{"method":"card","number":"4111111111111111","expiration_date":"12/30","security_code":"123","buyer_id":"9d7a2c41-5e8b-4f0a-8c3d-2b1e6f4a7c90","external_identifier":"order-1234"}`,
			func(body []byte) error { _, err := strictObjectInPlace(body, cardSchema); return err }},
		{"bank", `{"method":"bank","scheme":"ach","account_number":"000123456789","routing_number":"011000015","account_type":"checking","account_holder_name":"Jane Doe","mandate":{"recurring":true}}`,
			func(body []byte) error { _, err := strictObjectInPlace(body, bankSchema); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// detokBenchBody is a detokenized call as core-api's card connector sends
// it: a processor's JSON request with placeholders.
const detokBenchBody = `{"destination":"mock-card","method":"POST","path":"/v1/authorizations","headers":{"content-type":"application/json","idempotency-key":"9d7a2c41-5e8b-4f0a-8c3d-2b1e6f4a7c90"},"body":"{\"amount\":1299,\"currency\":\"USD\",\"capture\":true,\"card\":{\"number\":\"{{ CARD_NUMBER_1 }}\",\"expiry_month\":\"{{ CARD_EXPIRATION_MONTH_1 }}\",\"expiry_year\":\"{{ CARD_EXPIRATION_YEAR_1 }}\",\"security_code\":\"{{ CARD_SECURITY_CODE_1 }}\"},\"billing\":{\"postal_code\":\"94107\"},\"payment_source\":\"ecommerce\"}","payment_methods":["0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"],"purpose":"authorization","timeout_ms":30000}`

// BenchmarkDecodeInternal measures the strict reading of a detokenized
// call's body, on the internal listener's hot path.
func BenchmarkDecodeInternal(b *testing.B) {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetBodyString(detokBenchBody)
	b.ReportAllocs()
	for b.Loop() {
		var in zone.DetokenizeRequest
		if err := decodeInternal(&ctx, &in); err != nil {
			b.Fatal(err)
		}
	}
}
