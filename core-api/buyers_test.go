package coreapi

import (
	"errors"
	"strings"
	"testing"
)

func s(v string) *string { return &v }

func TestBuyerFieldsValidate(t *testing.T) {
	addr := func(a Address) BuyerFields { return BuyerFields{BillingDetails: Some(BillingDetails{Address: &a})} }
	tests := []struct {
		name     string
		f        BuyerFields
		pointers []string
	}{
		{"empty", BuyerFields{}, nil},
		{"nulls", BuyerFields{DisplayName: Optional[string]{Set: true, Null: true}}, nil},
		{"200 runes", BuyerFields{DisplayName: Some(strings.Repeat("é", 200))}, nil},
		{"201 runes", BuyerFields{DisplayName: Some(strings.Repeat("é", 201))}, []string{"/display_name"}},
		{"empty strings", BuyerFields{ExternalIdentifier: Some(""), AccountNumber: Some("")}, []string{"/external_identifier", "/account_number"}},
		{"good billing", BuyerFields{BillingDetails: Some(BillingDetails{
			EmailAddress: s("a.b+c@example.co.uk"), PhoneNumber: s("+14155550100"),
			Address: &Address{Country: s("US"), StateCode: s("US-CA")}, TaxID: &TaxID{Value: s("1")},
		})}, nil},
		{"email display name", BuyerFields{BillingDetails: Some(BillingDetails{EmailAddress: s("A <a@example.com>")})}, []string{"/billing_details/email_address"}},
		{"email comment", BuyerFields{BillingDetails: Some(BillingDetails{EmailAddress: s("a@example.com (A)")})}, []string{"/billing_details/email_address"}},
		{"phone", BuyerFields{BillingDetails: Some(BillingDetails{PhoneNumber: s("+1 415 555 0100")})}, []string{"/billing_details/phone_number"}},
		{"state code alone", addr(Address{StateCode: s("GB-LND")}), nil},
		{"state code digits", addr(Address{StateCode: s("FR-75")}), nil},
		{"state code mismatch", addr(Address{Country: s("FR"), StateCode: s("GB-LND")}), []string{"/billing_details/address/state_code"}},
		{"bad country and state", addr(Address{Country: s("XX"), StateCode: s("XX-1")}), []string{"/billing_details/address/country", "/billing_details/address/state_code"}},
		{"tax id", BuyerFields{BillingDetails: Some(BillingDetails{TaxID: &TaxID{}})}, []string{"/billing_details/tax_id/value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			var ve *ValidationError
			if tt.pointers == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &ve) || len(ve.Problems) != len(tt.pointers) {
				t.Fatalf("err = %v %+v", err, ve)
			}
			for i, p := range tt.pointers {
				if ve.Problems[i].Pointer != p {
					t.Fatalf("problem %d = %+v, want %s", i, ve.Problems[i], p)
				}
			}
		})
	}
}
