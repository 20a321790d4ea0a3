// Package cardscheme says whether digits are a card number of a known card
// scheme: leading digits in one of the scheme's issuer identification
// number (IIN) ranges, a length the scheme issues, and a Luhn check digit.
//
// It exists for values that are digits by nature, such as phone numbers
// and card networks' transaction ids: one in ten of those passes the Luhn
// check alone, so "12-19 digits passing Luhn" (logging/panscan) would
// refuse them at random, while the IIN range and the length cut that to
// under one in a hundred (zone.DigitFields has the measured rates).
//
// It holds ranges, never a card number, and imports nothing from the PCI
// zone: core-api uses it. tokenizer/card.DetectScheme names the schemes the
// vault labels cards with; a test there holds the two tables to the same
// answer wherever the tokenizer names a scheme.
package cardscheme

// Scheme names a card scheme; the names the tokenizer also uses are
// spelled as its card.Scheme values.
type Scheme string

// The schemes of the table. "" is no scheme.
const (
	Visa       Scheme = "visa"
	Mastercard Scheme = "mastercard"
	Amex       Scheme = "amex"
	Discover   Scheme = "discover"
	Diners     Scheme = "diners"
	JCB        Scheme = "jcb"
	UnionPay   Scheme = "unionpay"
	Maestro    Scheme = "maestro"
	Mir        Scheme = "mir"
	RuPay      Scheme = "rupay"
	Borica     Scheme = "borica"
	UzCard     Scheme = "uzcard"
	Humo       Scheme = "humo"
	Napas      Scheme = "napas"
	Troy       Scheme = "troy"
)

// Card numbers have 12 to 19 digits (ISO/IEC 7812).
const (
	MinLength = 12
	MaxLength = 19
)

// iinDigits is the most leading digits a range of the table names.
const iinDigits = 4

// lengths is a set of card number lengths: bit n stands for n digits.
type lengths uint32

func only(ns ...int) lengths {
	var l lengths
	for _, n := range ns {
		l |= 1 << n
	}
	return l
}

func between(lo, hi int) lengths {
	var l lengths
	for n := lo; n <= hi; n++ {
		l |= 1 << n
	}
	return l
}

// iinRange is one row of the table: the numbers whose first digits digits,
// read as a number, lie in [lo, hi], and the lengths they are issued in.
type iinRange struct {
	scheme  Scheme
	digits  int
	lo, hi  int
	lengths lengths
}

// table is read by Detect top down, so rows that overlap keep the
// tokenizer's answer (unionpay for 622126-622925, which Discover also
// accepts: the same lengths either way). Its first rows are exactly the
// ranges tokenizer/card.DetectScheme knows; the rows after it cover what
// the tokenizer leaves unnamed. Lengths are the schemes' published ones
// (ISO/IEC 7812 registrations as listed by the schemes and Wikipedia's
// "Payment card number"), with two choices:
//
//   - Maestro is 12-19 digits only in the ranges the tokenizer names;
//     the rest of its historical 50 and 56-69 space counts at 16-19
//     digits. At 15 digits that space alone would refuse 1.5% of Visa's
//     transaction ids, more than all the other schemes together.
//   - Visa keeps its legacy 13 digits: the vault takes a 13-digit Visa
//     number as a card. The price is one 13-digit phone number in ten
//     whose country code starts with 4 (German and Austrian numbers
//     have 13 digits).
//
// Not here: UATP (airline cards, 1 and 15 digits: one Visa transaction id
// in a hundred) and ranges that lie inside a row at the same lengths
// (RuPay's 60, 65, 353, 356 and 508, Elo, Verve, Hipercard, Dankort,
// InterPayment and InstaPayment are inside Maestro's, Discover's, JCB's or
// Diners' rows).
var table = []iinRange{
	{Amex, 2, 34, 34, only(15)},
	{Amex, 2, 37, 37, only(15)},
	{Visa, 1, 4, 4, only(13, 16, 19)},
	{Mastercard, 2, 51, 55, only(16)},
	{Mastercard, 4, 2221, 2720, only(16)},
	{Maestro, 4, 5018, 5018, between(12, 19)},
	{Maestro, 4, 5020, 5020, between(12, 19)},
	{Maestro, 4, 5038, 5038, between(12, 19)},
	{Maestro, 4, 5893, 5893, between(12, 19)},
	{Maestro, 4, 6304, 6304, between(12, 19)},
	{Maestro, 4, 6759, 6759, between(12, 19)},
	{Maestro, 4, 6761, 6763, between(12, 19)},
	{Discover, 4, 6011, 6011, between(16, 19)},
	{Discover, 3, 644, 649, between(16, 19)},
	{Discover, 2, 65, 65, between(16, 19)},
	{UnionPay, 2, 62, 62, between(16, 19)},
	{JCB, 4, 3528, 3589, between(16, 19)},
	{Diners, 3, 300, 305, between(14, 19)},
	{Diners, 4, 3095, 3095, between(14, 19)},
	{Diners, 2, 36, 36, between(14, 19)},
	{Diners, 2, 38, 39, between(14, 19)},
	// Not named by the tokenizer.
	{Mir, 4, 2200, 2204, between(16, 19)},
	{Borica, 4, 2205, 2205, only(16)},
	{Maestro, 2, 50, 50, between(16, 19)},
	{Maestro, 2, 56, 69, between(16, 19)},
	{RuPay, 2, 81, 82, only(16)},
	{UzCard, 4, 8600, 8600, only(16)},
	{Napas, 4, 9704, 9704, only(16)},
	{Troy, 4, 9792, 9792, only(16)},
	{Humo, 4, 9860, 9860, only(16)},
}

// leading reads up to iinDigits leading digits of s, skipping any other
// byte, and counts all of its digits.
func leading(s string) (lead, leadDigits, digits int) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; '0' <= c && c <= '9' {
			if digits < iinDigits {
				lead = lead*10 + int(c-'0')
				leadDigits++
			}
			digits++
		}
	}
	return lead, leadDigits, digits
}

// holds reports whether leading digits lead (n of them) fall in r's range.
func (r iinRange) holds(lead, n int) bool {
	if n < r.digits {
		return false
	}
	for ; n > r.digits; n-- {
		lead /= 10
	}
	return r.lo <= lead && lead <= r.hi
}

// IsCardNumber reports whether the digits of s, any other byte skipped,
// are a card number of a scheme of the table: 12 to 19 of them, leading
// digits in one of the scheme's ranges, a length it issues for that range,
// and a valid Luhn check digit. Callers pass a run of digit groups
// ("4111 1111 1111 1111"); what separates the digits is theirs to judge.
func IsCardNumber(s string) bool {
	lead, n, digits := leading(s)
	if digits < MinLength || digits > MaxLength {
		return false
	}
	for _, r := range table {
		if r.lengths&(1<<digits) != 0 && r.holds(lead, n) {
			return Luhn(s)
		}
	}
	return false
}

// Detect names the scheme whose range holds the leading digits of s (any
// other byte skipped), whatever its length: the first row that does, as
// tokenizer/card.DetectScheme reads its own. It is "" when none does, or
// when s has fewer digits than a range needs.
func Detect(s string) Scheme {
	lead, n, _ := leading(s)
	for _, r := range table {
		if r.holds(lead, n) {
			return r.scheme
		}
	}
	return ""
}

// Luhn reports whether the digits of s, any other byte skipped, pass the
// Luhn (mod 10) check. It is false when s has no digit.
func Luhn(s string) bool {
	sum, double, seen := 0, false, false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double, seen = !double, true
	}
	return seen && sum%10 == 0
}
