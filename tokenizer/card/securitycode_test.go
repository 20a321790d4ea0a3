package card_test

import (
	"bytes"
	"testing"

	"github.com/payorch/tokenizer/card"
)

func TestParseSecurityCode(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		scheme card.Scheme
		code   string // "" when accepted
	}{
		{"visa 3", "123", card.SchemeVisa, ""},
		{"visa zeros", "000", card.SchemeVisa, ""},
		{"mastercard 3", "987", card.SchemeMastercard, ""},
		{"amex 4", "1234", card.SchemeAmex, ""},
		{"unknown 3", "123", card.SchemeUnknown, ""},
		{"unknown 4", "1234", card.SchemeUnknown, ""},
		{"unlisted scheme is unknown", "1234", "elo", ""},

		{"empty", "", card.SchemeVisa, card.CodeRequired},
		{"visa 4", "1234", card.SchemeVisa, card.CodeInvalidSecurityCode},
		{"visa 2", "12", card.SchemeVisa, card.CodeInvalidSecurityCode},
		{"amex 3", "123", card.SchemeAmex, card.CodeInvalidSecurityCode},
		{"amex 5", "12345", card.SchemeAmex, card.CodeInvalidSecurityCode},
		{"unknown 2", "12", card.SchemeUnknown, card.CodeInvalidSecurityCode},
		{"unknown 5", "12345", card.SchemeUnknown, card.CodeInvalidSecurityCode},
		{"letter", "12a", card.SchemeVisa, card.CodeInvalidSecurityCode},
		{"leading space", " 123", card.SchemeVisa, card.CodeInvalidSecurityCode},
		{"trailing space", "123 ", card.SchemeUnknown, card.CodeInvalidSecurityCode},
		{"dash", "1-3", card.SchemeVisa, card.CodeInvalidSecurityCode},
		{"arabic-indic digits", "\u0661\u0662\u0663", card.SchemeVisa, card.CodeInvalidSecurityCode},
		{"NUL", "12\x00", card.SchemeVisa, card.CodeInvalidSecurityCode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, parse := range []struct {
				name string
				fn   func(string, card.Scheme) (card.SecurityCode, error)
			}{
				{"string", card.ParseSecurityCode},
				{"bytes", func(s string, sc card.Scheme) (card.SecurityCode, error) {
					return card.ParseSecurityCodeBytes([]byte(s), sc)
				}},
			} {
				c, err := parse.fn(tc.in, tc.scheme)
				if tc.code == "" {
					if err != nil {
						t.Fatalf("%s: %v", parse.name, err)
					}
					if string(c.Reveal()) != tc.in || c.Len() != len(tc.in) || c.IsZero() {
						t.Errorf("%s: Reveal/Len/IsZero wrong", parse.name)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%s: accepted, want %s", parse.name, tc.code)
				}
				if !c.IsZero() {
					t.Errorf("%s: non-empty SecurityCode returned with an error", parse.name)
				}
				fe := fieldError(t, err)
				if fe.Field != card.FieldSecurityCode || fe.Code != tc.code {
					t.Errorf("%s: error %s/%s, want %s/%s", parse.name, fe.Field, fe.Code, card.FieldSecurityCode, tc.code)
				}
				if len(tc.in) >= 3 && bytes.Contains([]byte(err.Error()), []byte(tc.in)) {
					t.Errorf("%s: error text %q repeats the input", parse.name, err)
				}
			}
		})
	}
}

func TestSecurityCodeZero(t *testing.T) {
	c, err := card.ParseSecurityCode("1234", card.SchemeAmex)
	if err != nil {
		t.Fatal(err)
	}
	cp := c
	r := c.Reveal()
	cp.Zero()
	if !c.IsZero() || c.Len() != 0 || c.Reveal() != nil {
		t.Error("not empty after Zero on a copy")
	}
	if !bytes.Equal(r, make([]byte, 4)) {
		t.Error("buffer not cleared")
	}
	var empty card.SecurityCode
	empty.Zero()
	if !empty.IsZero() || empty.Reveal() != nil {
		t.Error("zero SecurityCode is not empty")
	}
}
