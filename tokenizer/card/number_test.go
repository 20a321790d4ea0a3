package card_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/payorch/tokenizer/card"
)

// testPANs are the standard public test card numbers.
var testPANs = []struct {
	name   string
	pan    string
	scheme card.Scheme
}{
	{"visa 4111", "4111111111111111", card.SchemeVisa},
	{"visa 4242", "4242424242424242", card.SchemeVisa},
	{"visa 4012", "4012888888881881", card.SchemeVisa},
	{"mastercard 5555", "5555555555554444", card.SchemeMastercard},
	{"mastercard 5105", "5105105105105100", card.SchemeMastercard},
	{"mastercard 2-series", "2223003122003222", card.SchemeMastercard},
	{"amex 3782", "378282246310005", card.SchemeAmex},
	{"amex 3714", "371449635398431", card.SchemeAmex},
	{"discover 6011 1111", "6011111111111117", card.SchemeDiscover},
	{"discover 6011 0009", "6011000990139424", card.SchemeDiscover},
	{"diners 16 digits", "3056930009020004", card.SchemeDiners},
	{"diners 14 digits", "36227206271667", card.SchemeDiners},
	{"jcb", "3566002020360505", card.SchemeJCB},
	{"unionpay", "6200000000000005", card.SchemeUnionPay},
	{"unionpay 19 digits", "6205500000000000004", card.SchemeUnionPay},
	{"maestro", "6759649826438453", card.SchemeMaestro},
	{"maestro 12 digits", "501800000009", card.SchemeMaestro},
}

func TestParseNumberTestCards(t *testing.T) {
	for _, tc := range testPANs {
		t.Run(tc.name, func(t *testing.T) {
			for _, parse := range []struct {
				name string
				fn   func(string) (card.Number, error)
			}{
				{"string", card.ParseNumber},
				{"bytes", func(s string) (card.Number, error) { return card.ParseNumberBytes([]byte(s)) }},
			} {
				n, err := parse.fn(tc.pan)
				if err != nil {
					t.Fatalf("%s: %v", parse.name, err)
				}
				if got := string(n.Reveal()); got != tc.pan {
					t.Errorf("%s: Reveal = %s, want %s", parse.name, mask(got), mask(tc.pan))
				}
				if n.Len() != len(tc.pan) {
					t.Errorf("%s: Len = %d, want %d", parse.name, n.Len(), len(tc.pan))
				}
				if n.Scheme() != tc.scheme {
					t.Errorf("%s: Scheme = %q, want %q", parse.name, n.Scheme(), tc.scheme)
				}
				if got := card.DetectScheme([]byte(tc.pan)); got != tc.scheme {
					t.Errorf("DetectScheme = %q, want %q", got, tc.scheme)
				}
				if !card.Luhn([]byte(tc.pan)) {
					t.Error("Luhn = false")
				}
				if got, want := n.Last4(), tc.pan[len(tc.pan)-4:]; got != want {
					t.Errorf("Last4 = %q, want %q", got, want)
				}
				wantBIN := tc.pan[:6]
				if len(tc.pan) >= 16 {
					wantBIN = tc.pan[:8]
				}
				if got := n.BIN(); got != wantBIN {
					t.Errorf("BIN = %q, want %q", got, wantBIN)
				}
			}
		})
	}
}

func TestParseNumberSeparators(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"spaces in groups of four", "4111 1111 1111 1111", "4111111111111111"},
		{"dashes in groups of four", "4111-1111-1111-1111", "4111111111111111"},
		{"amex 4-6-5", "3782 822463 10005", "378282246310005"},
		{"single space and dash mixed", "4111 1111-1111 1111", "4111111111111111"},
		{"separator after every digit", "4-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1", "4111111111111111"},
		{"leading and trailing spaces trimmed", "  4111111111111111  ", "4111111111111111"},
		{"trimmed and grouped", " 4111 1111 1111 1111 ", "4111111111111111"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := card.ParseNumber(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(n.Reveal()); got != tc.want {
				t.Errorf("Reveal = %s, want %s", mask(got), mask(tc.want))
			}
		})
	}
}

func TestParseNumberRejects(t *testing.T) {
	tests := []struct {
		name, in, code string
	}{
		{"empty", "", card.CodeRequired},
		{"only spaces", "    ", card.CodeRequired},
		{"only dashes", "----", card.CodeInvalidFormat},
		{"only separators", "- - -", card.CodeInvalidFormat},
		{"letters", "4111abcd11111111", card.CodeInvalidCharacters},
		{"all letters", "abcdefghijklmnop", card.CodeInvalidCharacters},
		{"trailing letter", "4111111111111111x", card.CodeInvalidCharacters},
		{"tab", "4111\t1111\t1111\t1111", card.CodeInvalidCharacters},
		{"leading tab not trimmed", "\t4111111111111111", card.CodeInvalidCharacters},
		{"trailing newline not trimmed", "4111111111111111\n", card.CodeInvalidCharacters},
		{"dots", "4111.1111.1111.1111", card.CodeInvalidCharacters},
		{"plus sign", "+4111111111111111", card.CodeInvalidCharacters},
		{"non-breaking space", "4111\u00a01111\u00a01111\u00a01111", card.CodeInvalidCharacters},
		{"en dash", "4111\u20131111\u20131111\u20131111", card.CodeInvalidCharacters},
		{"arabic-indic digits", "\u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661", card.CodeInvalidCharacters},
		{"fullwidth digits", "\uff14\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11", card.CodeInvalidCharacters},
		{"invalid utf-8", "4111\xff111111111111", card.CodeInvalidCharacters},
		{"NUL byte", "4111111111111111\x00", card.CodeInvalidCharacters},
		{"double dash short", "4111--1111", card.CodeInvalidFormat},
		{"double dash", "4111--1111-1111-1111", card.CodeInvalidFormat},
		{"double space", "4111  1111 1111 1111", card.CodeInvalidFormat},
		{"space then dash", "4111 -1111 1111 1111", card.CodeInvalidFormat},
		{"leading dash", "-4111111111111111", card.CodeInvalidFormat},
		{"trailing dash", "4111111111111111-", card.CodeInvalidFormat},
		{"space before trailing dash", "4111111111111111 -", card.CodeInvalidFormat},
		{"eleven digits", "41111111111", card.CodeInvalidLength},
		{"one digit", "4", card.CodeInvalidLength},
		{"twenty digits Luhn-valid", "50180000000000000009", card.CodeInvalidLength},
		{"very long", strings.Repeat("4", 10000), card.CodeInvalidLength},
		{"Luhn fail", "4111111111111112", card.CodeLuhnCheckFailed},
		{"Luhn fail grouped", "4111 1111 1111 1112", card.CodeLuhnCheckFailed},
		{"Luhn fail amex", "378282246310006", card.CodeLuhnCheckFailed},
		{"transposed digits", "4111111111111161", card.CodeLuhnCheckFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, parse := range []struct {
				name string
				fn   func(string) (card.Number, error)
			}{
				{"string", card.ParseNumber},
				{"bytes", func(s string) (card.Number, error) { return card.ParseNumberBytes([]byte(s)) }},
			} {
				n, err := parse.fn(tc.in)
				if err == nil {
					t.Fatalf("%s: accepted, want %s", parse.name, tc.code)
				}
				if !n.IsZero() {
					t.Errorf("%s: non-empty Number returned with an error", parse.name)
				}
				fe := fieldError(t, err)
				if fe.Field != card.FieldNumber || fe.Code != tc.code {
					t.Errorf("%s: error %s/%s, want %s/%s", parse.name, fe.Field, fe.Code, card.FieldNumber, tc.code)
				}
				if fe.Message == "" {
					t.Errorf("%s: empty message", parse.name)
				}
				if hasDigitRun(err.Error(), 3) {
					t.Errorf("%s: error text %q has a digit run", parse.name, err)
				}
			}
		})
	}
}

func TestParseNumberBytesDoesNotKeepInput(t *testing.T) {
	in := []byte("4111 1111 1111 1111")
	orig := bytes.Clone(in)
	n, err := card.ParseNumberBytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, orig) {
		t.Error("ParseNumberBytes modified its input")
	}
	clear(in)
	if got := string(n.Reveal()); got != "4111111111111111" {
		t.Errorf("Number changed when the input was cleared: %s", mask(got))
	}
}

func TestLuhn(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"empty", "", false},
		{"zero", "0", true},
		{"double zero", "00", true},
		{"18", "18", true},
		{"19", "19", false},
		{"wikipedia example", "79927398713", true},
		{"wikipedia example, wrong check digit", "79927398710", false},
		{"visa", "4111111111111111", true},
		{"visa off by one", "4111111111111112", false},
		{"letter", "7992739871a", false},
		{"byte below '0'", "7992739871/", false},
		{"byte above '9'", "7992739871:", false},
		{"space", "4111 1111 1111 1111", false},
		{"non-ASCII", "\u0664111111111111111", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := card.Luhn([]byte(tc.in)); got != tc.want {
				t.Errorf("Luhn = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNumberZero(t *testing.T) {
	n := mustNumber(t, "4111111111111111")
	cp := n // a copy shares the buffer
	revealed := n.Reveal()
	cp.Zero()
	for name, x := range map[string]card.Number{"original": n, "copy": cp} {
		if !x.IsZero() || x.Len() != 0 || x.Reveal() != nil {
			t.Errorf("%s: not empty after Zero", name)
		}
		if x.Last4() != "" || x.BIN() != "" || x.Scheme() != card.SchemeUnknown {
			t.Errorf("%s: Last4 %q BIN %q Scheme %q after Zero", name, x.Last4(), x.BIN(), x.Scheme())
		}
		if x.String() != "card(empty)" {
			t.Errorf("%s: String = %q after Zero", name, x.String())
		}
	}
	if !bytes.Equal(revealed, make([]byte, 16)) {
		t.Errorf("the buffer Reveal returned was not cleared: %s", maskDigits(string(revealed)))
	}
	n.Zero() // twice is fine
	var empty card.Number
	empty.Zero()
}

func TestNumberZeroValue(t *testing.T) {
	var n card.Number
	if !n.IsZero() || n.Len() != 0 || n.Reveal() != nil || n.Last4() != "" || n.BIN() != "" ||
		n.Scheme() != card.SchemeUnknown || n.CardType() != card.CardTypeUnknown {
		t.Error("zero Number is not empty")
	}
	if got := n.Display(); got != (card.Display{Scheme: card.SchemeUnknown}) {
		t.Errorf("Display = %+v", got)
	}
	if n.String() != "card(empty)" {
		t.Errorf("String = %q", n.String())
	}
}

func TestRevealCapacity(t *testing.T) {
	n := mustNumber(t, "4111111111111111")
	r := n.Reveal()
	if cap(r) != len(r) {
		t.Fatalf("cap(Reveal) = %d, len %d: appending would write into the Number", cap(r), len(r))
	}
	_ = append(r, '9')
	if got := string(n.Reveal()); got != "4111111111111111" {
		t.Errorf("append to Reveal changed the Number: %s", mask(got))
	}
}

func TestDisplay(t *testing.T) {
	tests := []struct {
		name string
		pan  string
		want card.Display
	}{
		{"16 digits: 8-digit BIN, type from the test table", "4242424242424242",
			card.Display{Scheme: card.SchemeVisa, Label: "4242", BIN: "42424242", CardType: card.CardTypeCredit}},
		{"debit test card", "4000056655665556",
			card.Display{Scheme: card.SchemeVisa, Label: "5556", BIN: "40000566", CardType: card.CardTypeDebit}},
		{"mastercard debit test card", "5200828282828210",
			card.Display{Scheme: card.SchemeMastercard, Label: "8210", BIN: "52008282", CardType: card.CardTypeDebit}},
		{"prepaid test card", "5105105105105100",
			card.Display{Scheme: card.SchemeMastercard, Label: "5100", BIN: "51051051", CardType: card.CardTypePrepaid}},
		{"type unknown", "4111111111111111",
			card.Display{Scheme: card.SchemeVisa, Label: "1111", BIN: "41111111"}},
		{"15 digits: 6-digit BIN", "378282246310005",
			card.Display{Scheme: card.SchemeAmex, Label: "0005", BIN: "378282"}},
		{"14 digits: 6-digit BIN", "36227206271667",
			card.Display{Scheme: card.SchemeDiners, Label: "1667", BIN: "362272"}},
		{"12 digits: 6-digit BIN", "501800000009",
			card.Display{Scheme: card.SchemeMaestro, Label: "0009", BIN: "501800"}},
		{"19 digits: 8-digit BIN", "6205500000000000004",
			card.Display{Scheme: card.SchemeUnionPay, Label: "0004", BIN: "62055000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mustNumber(t, tc.pan)
			if got := n.Display(); got != tc.want {
				t.Errorf("Display = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAllocations(t *testing.T) {
	pan := []byte("4111 1111 1111 1111")
	digits := []byte("4111111111111111")
	n := mustNumber(t, "4111111111111111")
	tests := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"Luhn", 0, func() { card.Luhn(digits) }},
		{"DetectScheme", 0, func() { card.DetectScheme(digits) }},
		{"CardType", 0, func() { n.CardType() }},
		{"Reveal", 0, func() { n.Reveal() }},
		{"ParseNumberBytes", 1, func() {
			n, _ := card.ParseNumberBytes(pan)
			n.Zero()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, tc.fn); got > tc.max {
				t.Errorf("%v allocations, want at most %v", got, tc.max)
			}
		})
	}
}

func BenchmarkParseNumber(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"digits", "4111111111111111"},
		{"grouped", "4111 1111 1111 1111"},
		{"19 digits", "6205500000000000004"},
	} {
		b.Run(bc.name+"/string", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n, err := card.ParseNumber(bc.in)
				if err != nil {
					b.Fatal(err)
				}
				n.Zero()
			}
		})
		in := []byte(bc.in)
		b.Run(bc.name+"/bytes", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n, err := card.ParseNumberBytes(in)
				if err != nil {
					b.Fatal(err)
				}
				n.Zero()
			}
		})
	}
	b.Run("rejected/luhn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := card.ParseNumber("4111111111111112"); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}

func BenchmarkLuhn(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"16", "4111111111111111"},
		{"19", "6205500000000000004"},
	} {
		in := []byte(bc.in)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !card.Luhn(in) {
					b.Fatal("Luhn false")
				}
			}
		})
	}
}
