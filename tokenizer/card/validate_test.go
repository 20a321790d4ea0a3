package card_test

import (
	"bytes"
	"testing"

	"github.com/payorch/tokenizer/card"
)

func TestValidate(t *testing.T) {
	type fe struct{ field, code string }
	tests := []struct {
		name string
		in   card.CardInput
		want []fe // nil when valid
	}{
		{"visa with code",
			card.CardInput{Number: []byte("4111 1111 1111 1111"), ExpirationDate: "12/30", SecurityCode: []byte("123")}, nil},
		{"visa without code",
			card.CardInput{Number: []byte("4111111111111111"), ExpirationDate: "12/30"}, nil},
		{"empty code is no code",
			card.CardInput{Number: []byte("4111111111111111"), ExpirationDate: "12/30", SecurityCode: []byte{}}, nil},
		{"amex with 4-digit code",
			card.CardInput{Number: []byte("378282246310005"), ExpirationDate: "03/26", SecurityCode: []byte("1234")}, nil},

		{"everything wrong",
			card.CardInput{Number: []byte("4111111111111112"), ExpirationDate: "13/30", SecurityCode: []byte("12")},
			[]fe{{card.FieldNumber, card.CodeLuhnCheckFailed}, {card.FieldExpirationDate, card.CodeInvalidMonth}, {card.FieldSecurityCode, card.CodeInvalidSecurityCode}}},
		{"everything missing",
			card.CardInput{},
			[]fe{{card.FieldNumber, card.CodeRequired}, {card.FieldExpirationDate, card.CodeRequired}}},
		{"expired only",
			card.CardInput{Number: []byte("5555555555554444"), ExpirationDate: "02/26", SecurityCode: []byte("123")},
			[]fe{{card.FieldExpirationDate, card.CodeExpired}}},
		{"amex with 3-digit code",
			card.CardInput{Number: []byte("378282246310005"), ExpirationDate: "12/30", SecurityCode: []byte("123")},
			[]fe{{card.FieldSecurityCode, card.CodeInvalidSecurityCode}}},
		{"visa with 4-digit code",
			card.CardInput{Number: []byte("4111111111111111"), ExpirationDate: "12/30", SecurityCode: []byte("1234")},
			[]fe{{card.FieldSecurityCode, card.CodeInvalidSecurityCode}}},
		{"bad number: code checked as unknown scheme (4 digits ok)",
			card.CardInput{Number: []byte("4111-"), ExpirationDate: "12/30", SecurityCode: []byte("1234")},
			[]fe{{card.FieldNumber, card.CodeInvalidFormat}}},
		{"letters in number, format of expiry",
			card.CardInput{Number: []byte("4111x"), ExpirationDate: "1/30", SecurityCode: []byte("123")},
			[]fe{{card.FieldNumber, card.CodeInvalidCharacters}, {card.FieldExpirationDate, card.CodeInvalidFormat}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			num := bytes.Clone(tc.in.Number)
			code := bytes.Clone(tc.in.SecurityCode)
			c, errs := card.Validate(tc.in, fixedNow)
			if !bytes.Equal(num, tc.in.Number) || !bytes.Equal(code, tc.in.SecurityCode) {
				t.Error("Validate modified its input")
			}
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("errors: %v", errs)
				}
				n := mustNumber(t, string(tc.in.Number))
				if !bytes.Equal(c.Number.Reveal(), n.Reveal()) {
					t.Error("Number differs from ParseNumber's")
				}
				if c.Expiry.String() != tc.in.ExpirationDate {
					t.Errorf("Expiry = %v", c.Expiry)
				}
				if !bytes.Equal(c.SecurityCode.Reveal(), tc.in.SecurityCode) && len(tc.in.SecurityCode) > 0 {
					t.Error("SecurityCode differs from the input")
				}
				if len(tc.in.SecurityCode) == 0 && !c.SecurityCode.IsZero() {
					t.Error("SecurityCode set without input")
				}
				c.Zero()
				if !c.Number.IsZero() || !c.SecurityCode.IsZero() {
					t.Error("Card.Zero left data")
				}
				return
			}
			if !c.Number.IsZero() || !c.SecurityCode.IsZero() || c.Expiry != (card.Expiry{}) {
				t.Error("partial Card returned with errors")
			}
			var got []fe
			for _, e := range errs {
				got = append(got, fe{e.Field, e.Code})
				if e.Message == "" {
					t.Errorf("%s: empty message", e.Field)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("error %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
