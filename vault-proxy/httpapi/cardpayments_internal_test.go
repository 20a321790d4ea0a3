package httpapi

import (
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
)

// The payment goes on with its payment_method replaced by the token and
// every other byte as sent (whitespace, order, escapes), so that a retry
// of the same bytes is the same payment to core-api's Idempotency-Key.
func TestWithPaymentMethodKeepsEveryOtherByte(t *testing.T) {
	token := uuid.MustParse("0b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e")
	for _, tc := range []struct{ name, body, want string }{
		{"first", `{"payment_method":{"method":"card","number":"4111111111111111"},"amount":1}`,
			`{"payment_method":{"method":"id","id":"0b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e"},"amount":1}`},
		{"last, spaced", "{ \"amount\" : 1 ,\n \"payment_method\" :\t{ \"method\": \"card\" } }",
			"{ \"amount\" : 1 ,\n \"payment_method\" :\t{\"method\":\"id\",\"id\":\"0b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e\"} }"},
		{"escaped text beside it", `{"metadata":{"k":"\u00e9\"}"},"payment_method":{"method":"card"}}`,
			`{"metadata":{"k":"\u00e9\"}"},"payment_method":{"method":"id","id":"0b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			pm, start, err := rawPaymentMethod(body)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(withPaymentMethod(body, start, len(pm), token)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A payment_method given twice (core-api would read the last, which
// nothing here would have searched), or not as an object, is refused.
func TestRawCardIsOneObject(t *testing.T) {
	for name, body := range map[string]string{
		"twice":      `{"payment_method":{"method":"card"},"payment_method":{"method":"id","id":"x"}}`,
		"not object": `{"payment_method":"card"}`,
		"absent":     `{"amount":1}`,
		"not JSON":   `{"payment_method":{"method":"card"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := rawPaymentMethod([]byte(body))
			if e := apierror.As(err); e == nil || e.Status != 400 {
				t.Fatalf("rawPaymentMethod = %v, want a 400", err)
			}
		})
	}
}

// A check of the card speaks of the whole body: its pointers move under
// /payment_method; a header's do not.
func TestAtPrefixesBodyPointers(t *testing.T) {
	err := at(apierror.BadRequest("bad",
		apierror.Detail{Location: apierror.LocationBody, Pointer: "/number"},
		apierror.Detail{Location: apierror.LocationHeader, Pointer: "Idempotency-Key"}), "/payment_method")
	e := apierror.As(err)
	if e.Details[0].Pointer != "/payment_method/number" || e.Details[1].Pointer != "Idempotency-Key" {
		t.Fatalf("details: %+v", e.Details)
	}
}
