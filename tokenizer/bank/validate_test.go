package bank_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/payorch/tokenizer/bank"
)

type fe struct{ field, code string }

func ach(mod func(*bank.Input)) bank.Input {
	in := bank.Input{Scheme: "ach", AccountNumber: []byte("000123456789"), RoutingNumber: "011000015", AccountType: "checking", AccountHolderName: "Jane Doe"}
	if mod != nil {
		mod(&in)
	}
	return in
}

func sepa(mod func(*bank.Input)) bank.Input {
	in := bank.Input{Scheme: "sepa", IBAN: []byte("DE89370400440532013000"), BIC: "COBADEFFXXX", AccountHolderName: "Erika Mustermann"}
	if mod != nil {
		mod(&in)
	}
	return in
}

func bacs(mod func(*bank.Input)) bank.Input {
	in := bank.Input{Scheme: "bacs", AccountNumber: []byte("31926819"), SortCode: "60-16-13", AccountHolderName: "John Smith"}
	if mod != nil {
		mod(&in)
	}
	return in
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		in   bank.Input
		want []fe // nil: valid
	}{
		// ach
		{"ach valid", ach(nil), nil},
		{"ach routing 021000021", ach(func(i *bank.Input) { i.RoutingNumber = "021000021" }), nil},
		{"ach savings, 4-digit account", ach(func(i *bank.Input) { i.AccountType = "savings"; i.AccountNumber = []byte("1234") }), nil},
		{"ach 17-digit account", ach(func(i *bank.Input) { i.AccountNumber = []byte("12345678901234567") }), nil},
		{"ach no account type", ach(func(i *bank.Input) { i.AccountType = "" }), nil},
		{"ach explicit US/USD", ach(func(i *bank.Input) { i.Country, i.Currency = "US", "USD" }), nil},
		{"ach routing checksum", ach(func(i *bank.Input) { i.RoutingNumber = "011000016" }), []fe{{"routing_number", "checksum_failed"}}},
		{"ach routing 8 digits", ach(func(i *bank.Input) { i.RoutingNumber = "01100001" }), []fe{{"routing_number", "invalid_length"}}},
		{"ach routing letters", ach(func(i *bank.Input) { i.RoutingNumber = "01100001X" }), []fe{{"routing_number", "invalid_characters"}}},
		{"ach routing missing", ach(func(i *bank.Input) { i.RoutingNumber = "" }), []fe{{"routing_number", "required"}}},
		{"ach account 3 digits", ach(func(i *bank.Input) { i.AccountNumber = []byte("123") }), []fe{{"account_number", "invalid_length"}}},
		{"ach account 18 digits", ach(func(i *bank.Input) { i.AccountNumber = []byte("123456789012345678") }), []fe{{"account_number", "invalid_length"}}},
		{"ach account dashes", ach(func(i *bank.Input) { i.AccountNumber = []byte("1234-5678") }), []fe{{"account_number", "invalid_characters"}}},
		{"ach account missing", ach(func(i *bank.Input) { i.AccountNumber = nil }), []fe{{"account_number", "required"}}},
		{"ach account type", ach(func(i *bank.Input) { i.AccountType = "business" }), []fe{{"account_type", "invalid_value"}}},
		{"ach with iban", ach(func(i *bank.Input) { i.IBAN = []byte("DE89370400440532013000") }), []fe{{"iban", "not_allowed"}}},
		{"ach with sort code", ach(func(i *bank.Input) { i.SortCode = "601613" }), []fe{{"sort_code", "not_allowed"}}},
		{"ach country GB", ach(func(i *bank.Input) { i.Country = "GB" }), []fe{{"country", "unsupported_country"}}},
		{"ach country not a country", ach(func(i *bank.Input) { i.Country = "ZZ" }), []fe{{"country", "unsupported_country"}}},
		{"ach currency EUR", ach(func(i *bank.Input) { i.Currency = "EUR" }), []fe{{"currency", "currency_mismatch"}}},

		// sepa
		{"sepa DE", sepa(nil), nil},
		{"sepa GB", sepa(func(i *bank.Input) { i.IBAN = []byte("GB82WEST12345698765432"); i.BIC = "NWBKGB2L" }), nil},
		{"sepa spaced lower case", sepa(func(i *bank.Input) { i.IBAN = []byte("de89 3704 0044 0532 0130 00") }), nil},
		{"sepa FR with letter", sepa(func(i *bank.Input) { i.IBAN = []byte("FR1420041010050500013M02606"); i.BIC = "" }), nil},
		{"sepa NL", sepa(func(i *bank.Input) { i.IBAN = []byte("NL91ABNA0417164300"); i.BIC = "ABNANL2A" }), nil},
		{"sepa BE 16", sepa(func(i *bank.Input) { i.IBAN = []byte("BE68539007547034") }), nil},
		{"sepa country matches", sepa(func(i *bank.Input) { i.Country = "DE"; i.Currency = "EUR" }), nil},
		{"sepa checksum", sepa(func(i *bank.Input) { i.IBAN = []byte("DE89370400440532013001") }), []fe{{"iban", "checksum_failed"}}},
		{"sepa check digits swapped", sepa(func(i *bank.Input) { i.IBAN = []byte("DE98370400440532013000") }), []fe{{"iban", "checksum_failed"}}},
		{"sepa DE too short", sepa(func(i *bank.Input) { i.IBAN = []byte("DE8937040044053201300") }), []fe{{"iban", "invalid_length"}}},
		{"sepa unknown country", sepa(func(i *bank.Input) { i.IBAN = []byte("ZZ89370400440532013000") }), []fe{{"iban", "unsupported_country"}}},
		{"sepa non-sepa country (BR)", sepa(func(i *bank.Input) { i.IBAN = []byte("BR1800360305000010009795493C1") }), []fe{{"iban", "unsupported_country"}}},
		{"sepa bad start", sepa(func(i *bank.Input) { i.IBAN = []byte("1289370400440532013000") }), []fe{{"iban", "invalid_format"}}},
		{"sepa punctuation", sepa(func(i *bank.Input) { i.IBAN = []byte("DE89-3704-0044-0532-0130-00") }), []fe{{"iban", "invalid_characters"}}},
		{"sepa too long", sepa(func(i *bank.Input) { i.IBAN = bytes.Repeat([]byte("1"), 40) }), []fe{{"iban", "invalid_length"}}},
		{"sepa missing", sepa(func(i *bank.Input) { i.IBAN = nil }), []fe{{"iban", "required"}}},
		{"sepa only spaces", sepa(func(i *bank.Input) { i.IBAN = []byte("   ") }), []fe{{"iban", "required"}}},
		{"sepa bic 11", sepa(func(i *bank.Input) { i.BIC = "DEUTDEFF500" }), nil},
		{"sepa bic 9", sepa(func(i *bank.Input) { i.BIC = "DEUTDEFF5" }), []fe{{"bic", "invalid_length"}}},
		{"sepa bic lower", sepa(func(i *bank.Input) { i.BIC = "deutdeff" }), []fe{{"bic", "invalid_format"}}},
		{"sepa bic digit in bank", sepa(func(i *bank.Input) { i.BIC = "DEU1DEFF" }), []fe{{"bic", "invalid_format"}}},
		{"sepa bic country XX", sepa(func(i *bank.Input) { i.BIC = "DEUTXXFF" }), []fe{{"bic", "unsupported_country"}}},
		{"sepa country differs from iban", sepa(func(i *bank.Input) { i.Country = "FR" }), []fe{{"country", "unsupported_country"}}},
		{"sepa currency", sepa(func(i *bank.Input) { i.Currency = "GBP" }), []fe{{"currency", "currency_mismatch"}}},
		{"sepa with account number", sepa(func(i *bank.Input) { i.AccountNumber = []byte("12345678") }), []fe{{"account_number", "not_allowed"}}},
		{"sepa with routing", sepa(func(i *bank.Input) { i.RoutingNumber = "011000015" }), []fe{{"routing_number", "not_allowed"}}},

		// bacs
		{"bacs valid", bacs(nil), nil},
		{"bacs sort code plain", bacs(func(i *bank.Input) { i.SortCode = "601613" }), nil},
		{"bacs sort code spaces", bacs(func(i *bank.Input) { i.SortCode = "60 16 13" }), nil},
		{"bacs sort code 5", bacs(func(i *bank.Input) { i.SortCode = "60-16-1" }), []fe{{"sort_code", "invalid_length"}}},
		{"bacs sort code mixed separators", bacs(func(i *bank.Input) { i.SortCode = "60-16 13" }), []fe{{"sort_code", "invalid_format"}}},
		{"bacs sort code bad grouping", bacs(func(i *bank.Input) { i.SortCode = "6016-13" }), []fe{{"sort_code", "invalid_format"}}},
		{"bacs sort code letters", bacs(func(i *bank.Input) { i.SortCode = "60-16-1A" }), []fe{{"sort_code", "invalid_characters"}}},
		{"bacs sort code missing", bacs(func(i *bank.Input) { i.SortCode = "" }), []fe{{"sort_code", "required"}}},
		{"bacs account 7", bacs(func(i *bank.Input) { i.AccountNumber = []byte("3192681") }), []fe{{"account_number", "invalid_length"}}},
		{"bacs account 9", bacs(func(i *bank.Input) { i.AccountNumber = []byte("319268190") }), []fe{{"account_number", "invalid_length"}}},
		{"bacs with account type", bacs(func(i *bank.Input) { i.AccountType = "checking" }), []fe{{"account_type", "not_allowed"}}},
		{"bacs with bic", bacs(func(i *bank.Input) { i.BIC = "NWBKGB2L" }), []fe{{"bic", "not_allowed"}}},
		{"bacs currency", bacs(func(i *bank.Input) { i.Currency = "EUR" }), []fe{{"currency", "currency_mismatch"}}},

		// common
		{"scheme missing", bank.Input{AccountHolderName: "x"}, []fe{{"scheme", "required"}}},
		{"scheme unknown", bank.Input{Scheme: "swift"}, []fe{{"scheme", "unsupported_scheme"}}},
		{"scheme upper case", bank.Input{Scheme: "ACH"}, []fe{{"scheme", "unsupported_scheme"}}},
		{"holder missing", ach(func(i *bank.Input) { i.AccountHolderName = "" }), []fe{{"account_holder_name", "required"}}},
		{"holder too long", ach(func(i *bank.Input) { i.AccountHolderName = strings.Repeat("é", 201) }), []fe{{"account_holder_name", "invalid_length"}}},
		{"holder 200", ach(func(i *bank.Input) { i.AccountHolderName = strings.Repeat("é", 200) }), nil},
		{"holder control", ach(func(i *bank.Input) { i.AccountHolderName = "Jane\nDoe" }), []fe{{"account_holder_name", "invalid_characters"}}},
		{"everything wrong, in field order", bank.Input{Scheme: "ach", RoutingNumber: "123", AccountNumber: []byte("1"), IBAN: []byte("x"), Country: "DE", Currency: "EUR"},
			[]fe{{"account_holder_name", "required"}, {"routing_number", "invalid_length"}, {"account_number", "invalid_length"}, {"iban", "not_allowed"}, {"country", "unsupported_country"}, {"currency", "currency_mismatch"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			num, iban := bytes.Clone(tc.in.AccountNumber), bytes.Clone(tc.in.IBAN)
			a, errs := bank.Validate(tc.in)
			if !bytes.Equal(num, tc.in.AccountNumber) || !bytes.Equal(iban, tc.in.IBAN) {
				t.Error("Validate modified its input")
			}
			var got []fe
			for _, e := range errs {
				got = append(got, fe{e.Field, e.Code})
				for _, secret := range [][]byte{num, iban} {
					if len(secret) >= 4 && strings.Contains(e.Message+e.Error(), string(secret)) {
						t.Errorf("error message echoes the input: %q", e.Message)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("errors = %v, want %v", got, tc.want)
			}
			if tc.want != nil {
				if !a.Number.IsZero() || a.Scheme != "" {
					t.Fatalf("invalid input returned an account: %+v", a)
				}
				return
			}
			if a.Number.IsZero() || len(a.Last4()) != 4 || a.Country == "" || a.Currency == "" {
				t.Fatalf("account = %+v", a)
			}
		})
	}
}

func TestValidateNormalizesAndDerives(t *testing.T) {
	a, errs := bank.Validate(sepa(func(i *bank.Input) { i.IBAN = []byte("gb82 west 1234 5698 7654 32"); i.BIC = "" }))
	if errs != nil {
		t.Fatal(errs)
	}
	if string(a.Number.Reveal()) != "GB82WEST12345698765432" || a.Last4() != "5432" || a.Country != "GB" || a.Currency != "EUR" {
		t.Fatalf("sepa account = %s %s %s %s", a.Number.Reveal(), a.Last4(), a.Country, a.Currency)
	}
	b, errs := bank.Validate(bacs(nil))
	if errs != nil {
		t.Fatal(errs)
	}
	if b.SortCode != "601613" || b.Country != "GB" || b.Currency != "GBP" || b.Last4() != "6819" {
		t.Fatalf("bacs account = %+v", b)
	}
	c, errs := bank.Validate(ach(nil))
	if errs != nil {
		t.Fatal(errs)
	}
	if c.RoutingNumber != "011000015" || c.AccountType != "checking" || c.Country != "US" || c.Currency != "USD" || c.Last4() != "6789" {
		t.Fatalf("ach account = %+v", c)
	}
	// Zero clears every copy.
	cp := c
	c.Zero()
	if !cp.Number.IsZero() || cp.Last4() != "" {
		t.Fatal("Zero did not clear a copy")
	}
}

func TestChecksumHelpers(t *testing.T) {
	for _, s := range []string{"011000015", "021000021", "026009593", "121000358"} {
		if !bank.ABARoutingValid(s) {
			t.Errorf("ABARoutingValid(%s) = false", s)
		}
	}
	for _, s := range []string{"011000016", "123456789", "01100001", "0110000150", "01100001a"} {
		if bank.ABARoutingValid(s) {
			t.Errorf("ABARoutingValid(%s) = true", s)
		}
	}
	for _, s := range []string{"DE89370400440532013000", "GB82WEST12345698765432", "NO9386011117947", "BR1800360305000010009795493C1", "MT84MALT011000012345MTLCAST001S"} {
		if !bank.IBANValid(s) {
			t.Errorf("IBANValid(%s) = false", s)
		}
	}
	for _, s := range []string{"DE89370400440532013001", "GB82WEST1234569876543", "XX82WEST12345698765432", "DE", ""} {
		if bank.IBANValid(s) {
			t.Errorf("IBANValid(%s) = true", s)
		}
	}
	if bank.IBANLength("DE") != 22 || bank.IBANLength("US") != 0 || !bank.IsCountry("XK") || bank.IsCountry("XX") || !bank.IsSEPACountry("CH") || bank.IsSEPACountry("US") {
		t.Fatal("country tables")
	}
}

// Every way of printing an Account hides the number.
func TestAccountRedacts(t *testing.T) {
	const iban = "DE89370400440532013000"
	a, errs := bank.Validate(sepa(nil))
	if errs != nil {
		t.Fatal(errs)
	}
	js, _ := json.Marshal(a)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "account", a, "number", a.Number)
	outs := []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), fmt.Sprintf("%s %q %v %x %d", a.Number, a.Number, a.Number, a.Number, a.Number), string(js), logs.String()}
	for _, o := range outs {
		if strings.Contains(o, iban) || strings.Contains(o, "370400440532013") {
			t.Errorf("output shows the IBAN: %s", o)
		}
	}
	if a.Number.String() != "bank(****3000)" {
		t.Fatalf("String = %q", a.Number.String())
	}
}
