package cardscheme_test

import (
	"testing"

	"github.com/payorch/shared/cardscheme"
)

// Published test numbers of each scheme, and the edges of the ranges and
// lengths: a number one digit short or long, or just outside a range, is
// not a card number of that scheme. Every number here but "luhn fails"
// passes the Luhn check, so each false is the range's or the length's.
func TestIsCardNumber(t *testing.T) {
	for _, tc := range []struct {
		name, digits string
		want         bool
	}{
		{"visa 16", "4111111111111111", true},
		{"visa 13", "4222222222222", true},
		{"visa 19", "4000000000000000006", true},
		{"visa 15", "412345678901233", false},
		{"visa 14", "41234567890120", false},
		{"mastercard 51", "5105105105105100", true},
		{"mastercard 2-series", "2223003122003222", true},
		{"mastercard 2-series first", "2221000000000009", true},
		{"mastercard 2-series last", "2720999999999996", true},
		{"below the 2-series is no scheme", "2220999999999991", false},
		{"mastercard 15", "555555555555442", false},
		{"amex 34", "340000000000009", true},
		{"amex 37", "378282246310005", true},
		{"amex 16", "3782822463100052", false},
		{"discover 6011", "6011111111111117", true},
		{"discover 644", "6445644564456445", true},
		{"discover 65 19 digits", "6500000000000000003", true},
		{"discover 15", "601111111111116", false},
		{"jcb", "3530111333300000", true},
		{"jcb first", "3528000000000007", true},
		{"below jcb is no scheme", "3527999999999999", false},
		{"diners 14", "36227206271667", true},
		{"diners 300", "30569309025904", true},
		{"diners 38", "38520000023237", true},
		{"diners 3095", "30950000000000", true},
		{"diners 13", "3622720627163", false},
		{"unionpay", "6200000000000005", true},
		{"unionpay co-branded", "6221260000000000", true},
		{"maestro 12", "501800000009", true},
		{"maestro 6759", "6759649826438453", true},
		{"maestro 50 at 16", "5000000000000611", true},
		{"maestro 67 at 19", "6799990100000000019", true},
		{"maestro 50 at 15 is only its named ranges", "500000000000005", false},
		{"mir", "2200000000000004", true},
		{"rupay 81", "8100000000000002", true},
		{"troy", "9792000000000003", true},
		{"grouped", "4111 1111 1111 1111", true},
		{"dashed", "3782-822463-10005", true},
		{"luhn fails", "4111111111111112", false},
		{"no scheme starts with 1", "1000000000000008", false},
		{"no scheme starts with 7", "7000000000000005", false},
		{"11 digits", "41111111112", false},
		{"20 digits", "41111111111111111115", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cardscheme.IsCardNumber(tc.digits); got != tc.want {
				t.Fatalf("IsCardNumber = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		digits string
		want   cardscheme.Scheme
	}{
		{"4", cardscheme.Visa},
		{"3", ""},
		{"340000", cardscheme.Amex},
		{"222100", cardscheme.Mastercard},
		{"220400", cardscheme.Mir},
		{"220500", cardscheme.Borica},
		{"622126", cardscheme.UnionPay},
		{"601100", cardscheme.Discover},
		{"601200", cardscheme.Maestro},
		{"501800", cardscheme.Maestro},
		{"309500", cardscheme.Diners},
		{"309600", ""},
		{"820000", cardscheme.RuPay},
		{"860000", cardscheme.UzCard},
		{"986000", cardscheme.Humo},
		{"970400", cardscheme.Napas},
		{"700000", ""},
		{"", ""},
	} {
		if got := cardscheme.Detect(tc.digits); got != tc.want {
			t.Errorf("Detect(%q) = %q, want %q", tc.digits, got, tc.want)
		}
	}
}

func TestLuhn(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"79927398713", true},
		{"79927398710", false},
		{"7992 7398-713", true},
		{"0", true},
		{"", false},
		{"--", false},
	} {
		if got := cardscheme.Luhn(tc.s); got != tc.want {
			t.Errorf("Luhn(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
