package bank_test

import (
	"strings"
	"testing"

	"github.com/payorch/tokenizer/bank"
)

// FuzzValidate: Validate never panics, returns either an Account or errors
// (never both), never echoes a sensitive input of 4+ characters in an error
// message, and an accepted IBAN normalizes to IBANValid form.
func FuzzValidate(f *testing.F) {
	f.Add("sepa", "", "", "de89 3704 0044 0532 0130 00", "COBADEFF", "", "Jane", "", "")
	f.Add("ach", "000123456789", "011000015", "", "", "", "Jane", "US", "USD")
	f.Add("bacs", "31926819", "", "", "", "60-16-13", "John", "", "GBP")
	f.Add("sepa", "", "", "MT84MALT011000012345MTLCAST001S", "", "", "x", "MT", "EUR")
	f.Add("ach", "1234\x00", "0110000a5", "", "", "", "\n", "us", "")
	f.Fuzz(func(t *testing.T, scheme, acct, routing, iban, bic, sort, holder, country, currency string) {
		a, errs := bank.Validate(bank.Input{Scheme: scheme, AccountNumber: []byte(acct), RoutingNumber: routing, IBAN: []byte(iban),
			BIC: bic, SortCode: sort, AccountHolderName: holder, Country: country, Currency: currency})
		if errs != nil {
			if !a.Number.IsZero() || a.Scheme != "" {
				t.Fatal("errors and an account")
			}
			for _, e := range errs {
				for _, secret := range []string{acct, iban} {
					// Messages hold no run of 4+ digits, so any such run of
					// the input in a message is an echo.
					if run := longestDigitRun(secret); len(run) >= 4 && strings.Contains(e.Message, run) {
						t.Fatalf("message %q echoes the input", e.Message)
					}
				}
			}
			return
		}
		if a.Number.IsZero() || len(a.Last4()) != 4 {
			t.Fatalf("accepted without a number: %+v", a)
		}
		if scheme == bank.SchemeSEPA && !bank.IBANValid(string(a.Number.Reveal())) {
			t.Fatalf("accepted IBAN does not re-validate")
		}
	})
}

func longestDigitRun(s string) string {
	best, start := "", -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start > len(best) {
			best = s[start:i]
		}
		start = -1
	}
	return best
}
