package coreapi_test

import (
	"errors"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
)

func TestCheckExpiry(t *testing.T) {
	// 2030-03-31 23:00 UTC is still March 2030 everywhere west of UTC+1,
	// and already April east of it: 03/30 must still be accepted.
	now := time.Date(2030, 3, 31, 23, 0, 0, 0, time.UTC)
	for s, want := range map[string]error{
		"03/30": nil, "12/30": nil, "01/31": nil,
		"02/30": coreapi.ErrExpired, "12/29": coreapi.ErrExpired,
		"3/30": coreapi.ErrExpiryFormat, "13/30": coreapi.ErrExpiryFormat, "00/30": coreapi.ErrExpiryFormat,
		"03-30": coreapi.ErrExpiryFormat, "03/2030": coreapi.ErrExpiryFormat, "+3/30": coreapi.ErrExpiryFormat, "03/+3": coreapi.ErrExpiryFormat, "": coreapi.ErrExpiryFormat,
	} {
		if got := coreapi.CheckExpiry(s, now); got != want {
			t.Errorf("CheckExpiry(%q) = %v, want %v", s, got, want)
		}
	}
	// In April anywhere on earth, March is over.
	if err := coreapi.CheckExpiry("03/30", time.Date(2030, 4, 1, 12, 0, 0, 0, time.UTC)); err != coreapi.ErrExpired {
		t.Errorf("03/30 on 1 April 12:00 UTC: %v", err)
	}
}

func ptr(s string) *string { return &s }

func pointers(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *coreapi.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("not a ValidationError: %v", err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.Pointer)
	}
	return out
}

func TestNewPaymentMethodValidate(t *testing.T) {
	id := "0b4e7c1e-6a4f-4a53-9a53-0f0d3c1c2b11"
	ach := func(mod func(*coreapi.NewPaymentMethod)) coreapi.NewPaymentMethod {
		n := coreapi.NewPaymentMethod{Method: ptr("bank"), ID: ptr(id), Scheme: ptr("ach"), Country: ptr("US"), Currency: ptr("USD"),
			AccountHolderName: ptr("Jane"), RoutingNumber: ptr("011000015"), AccountType: ptr("checking")}
		if mod != nil {
			mod(&n)
		}
		return n
	}
	tests := []struct {
		name string
		in   coreapi.NewPaymentMethod
		want []string
	}{
		{"card", coreapi.NewPaymentMethod{Method: ptr("card"), ID: ptr(id)}, nil},
		{"gift card with buyer", coreapi.NewPaymentMethod{Method: ptr("gift-card"), ID: ptr(id), BuyerExternalIdentifier: ptr("b"), ExternalIdentifier: ptr("x")}, nil},
		{"nothing", coreapi.NewPaymentMethod{}, []string{"/method", "/id"}},
		{"upper-case id", coreapi.NewPaymentMethod{Method: ptr("card"), ID: ptr("0B4E7C1E-6A4F-4A53-9A53-0F0D3C1C2B11")}, []string{"/id"}},
		{"card with bank fields", coreapi.NewPaymentMethod{Method: ptr("card"), ID: ptr(id), Scheme: ptr("visa"), Mandate: &coreapi.MandateOptions{}}, []string{"/scheme", "/mandate"}},
		{"bad buyer id", coreapi.NewPaymentMethod{Method: ptr("card"), ID: ptr(id), BuyerID: ptr("1")}, []string{"/buyer_id"}},
		{"ach", ach(nil), nil},
		{"ach no account type", ach(func(n *coreapi.NewPaymentMethod) { n.AccountType = nil }), nil},
		{"ach bad account type", ach(func(n *coreapi.NewPaymentMethod) { n.AccountType = ptr("business") }), []string{"/account_type"}},
		{"ach no routing", ach(func(n *coreapi.NewPaymentMethod) { n.RoutingNumber = nil }), []string{"/routing_number"}},
		{"ach with bic", ach(func(n *coreapi.NewPaymentMethod) { n.BIC = ptr("DEUTDEFF") }), []string{"/bic"}},
		{"bacs", ach(func(n *coreapi.NewPaymentMethod) {
			n.Scheme, n.RoutingNumber, n.AccountType, n.SortCode, n.Country, n.Currency = ptr("bacs"), nil, nil, ptr("601613"), ptr("GB"), ptr("GBP")
		}), nil},
		{"bacs sort code with dashes", ach(func(n *coreapi.NewPaymentMethod) {
			n.Scheme, n.RoutingNumber, n.AccountType, n.SortCode = ptr("bacs"), nil, nil, ptr("60-16-13")
		}), []string{"/sort_code"}},
		{"sepa", ach(func(n *coreapi.NewPaymentMethod) {
			n.Scheme, n.RoutingNumber, n.AccountType, n.BIC, n.Country, n.Currency = ptr("sepa"), nil, nil, ptr("COBADEFFXXX"), ptr("DE"), ptr("EUR")
		}), nil},
		{"bank missing everything", coreapi.NewPaymentMethod{Method: ptr("bank"), ID: ptr(id)}, []string{"/scheme", "/country", "/currency", "/account_holder_name"}},
		{"bank bad values", ach(func(n *coreapi.NewPaymentMethod) {
			n.Country, n.Currency, n.AccountHolderName = ptr("XX"), ptr("usd"), ptr("")
		}),
			[]string{"/country", "/currency", "/account_holder_name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pointers(t, tc.in.Validate())
			if len(got) != len(tc.want) {
				t.Fatalf("problems at %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("problems at %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestPaymentMethodUpdateValidate(t *testing.T) {
	now := time.Date(2030, 6, 15, 0, 0, 0, 0, time.UTC)
	null := coreapi.Optional[string]{Set: true, Null: true}
	tests := []struct {
		name string
		in   coreapi.PaymentMethodUpdate
		want []string
	}{
		{"empty", coreapi.PaymentMethodUpdate{}, nil},
		{"all set", coreapi.PaymentMethodUpdate{ExpirationDate: coreapi.Some("06/30"), SchemeTransactionID: coreapi.Some("abc"), SchemeTransactionIDScheme: coreapi.Some("mastercard")}, nil},
		{"clears", coreapi.PaymentMethodUpdate{SchemeTransactionID: null, SchemeTransactionIDScheme: null}, nil},
		{"expiry null", coreapi.PaymentMethodUpdate{ExpirationDate: null}, []string{"/expiration_date"}},
		{"expired", coreapi.PaymentMethodUpdate{ExpirationDate: coreapi.Some("05/30")}, []string{"/expiration_date"}},
		{"bad values", coreapi.PaymentMethodUpdate{ExpirationDate: coreapi.Some("2030-06"), SchemeTransactionID: coreapi.Some(""), SchemeTransactionIDScheme: coreapi.Some("VISA")},
			[]string{"/expiration_date", "/scheme_transaction_id", "/scheme_transaction_id_scheme"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pointers(t, tc.in.Validate(now))
			if len(got) != len(tc.want) {
				t.Fatalf("problems at %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("problems at %v, want %v", got, tc.want)
				}
			}
		})
	}
}
