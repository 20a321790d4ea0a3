package card_test

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payorch/tokenizer/card"
)

// Run a fuzzer with, for example:
//
//	go test ./card -run '^$' -fuzz '^FuzzParseNumber$' -fuzztime 30s
//
// Seeds are the f.Add calls below plus testdata/fuzz/<FuzzName>/.

// numberGrammar is ParseNumber's accepted form, written independently of
// its hand-written scanner: optional spaces, digit groups joined by one
// space or dash, optional spaces.
var numberGrammar = regexp.MustCompile(`^ *[0-9]+(?:[ -][0-9]+)* *$`)

// referenceNumberCode is what ParseNumber must answer for s, derived from
// the documented rules by the simplest code that states them: "" for
// accepted, else the FieldError code.
func referenceNumberCode(s string) string {
	trimmed := strings.Trim(s, " ")
	switch {
	case trimmed == "":
		return card.CodeRequired
	case strings.ContainsFunc(trimmed, func(r rune) bool { return !strings.ContainsRune("0123456789 -", r) }):
		return card.CodeInvalidCharacters
	case !numberGrammar.MatchString(s):
		return card.CodeInvalidFormat
	}
	digits := strings.NewReplacer(" ", "", "-", "").Replace(trimmed)
	if len(digits) < 12 || len(digits) > 19 {
		return card.CodeInvalidLength
	}
	if !referenceLuhn(digits) {
		return card.CodeLuhnCheckFailed
	}
	return ""
}

// referenceLuhn is the textbook algorithm, on a string.
func referenceLuhn(s string) bool {
	sum := 0
	for i := 0; i < len(s); i++ {
		d := int(s[len(s)-1-i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

func FuzzParseNumber(f *testing.F) {
	for _, tc := range testPANs {
		f.Add(tc.pan)
	}
	for _, s := range []string{
		"", " ", "-", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111--1111",
		" 4111111111111111 ", "4111111111111112", "41111111111", "\u0664111111111111111",
		"4111\u00a01111\u00a01111\u00a01111", "50180000000000000009", "4111 1111-1111 1111 ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := card.ParseNumber(s)
		nb, errb := card.ParseNumberBytes([]byte(s))
		if (err == nil) != (errb == nil) || (err != nil && err.Error() != errb.Error()) {
			t.Fatalf("ParseNumber and ParseNumberBytes disagree: %v / %v", err, errb)
		}
		if err == nil && !bytes.Equal(n.Reveal(), nb.Reveal()) {
			t.Fatal("ParseNumber and ParseNumberBytes give different digits")
		}
		want := referenceNumberCode(s)

		if err != nil {
			var fe card.FieldError
			if !errors.As(err, &fe) || fe.Field != card.FieldNumber {
				t.Fatalf("error %v is not a number FieldError", err)
			}
			if fe.Code != want {
				t.Fatalf("code %s, reference says %q", fe.Code, want)
			}
			if !n.IsZero() {
				t.Fatal("non-empty Number with an error")
			}
			// The error text never carries input digits: it has no run
			// of 4+ digits at all, so none of the input's.
			msg := err.Error()
			if hasDigitRun(msg, 4) {
				t.Fatalf("error text %q has a 4+ digit run", msg)
			}
			for _, run := range digitRuns(s, 4) {
				if strings.Contains(msg, run) {
					t.Fatalf("error text %q repeats input digits", msg)
				}
			}
			return
		}

		if want != "" {
			t.Fatalf("accepted, reference says %s", want)
		}
		d := n.Reveal()
		if len(d) < card.MinNumberLen || len(d) > card.MaxNumberLen || n.Len() != len(d) {
			t.Fatalf("accepted %d digits", len(d))
		}
		for _, c := range d {
			if c < '0' || c > '9' {
				t.Fatalf("accepted a non-digit %q", c)
			}
		}
		if !card.Luhn(d) || !referenceLuhn(string(d)) {
			t.Fatal("accepted a Luhn failure")
		}
		if got := strings.NewReplacer(" ", "", "-", "").Replace(s); got != string(d) {
			t.Fatal("digits are not the input without separators")
		}
		// Round trip: the digits parse to the same digits.
		again, err := card.ParseNumberBytes(d)
		if err != nil {
			t.Fatalf("re-parsing Reveal: %v", err)
		}
		if !bytes.Equal(again.Reveal(), d) || again.Scheme() != n.Scheme() {
			t.Fatal("re-parsing Reveal changed the number")
		}
		if n.Scheme() != card.DetectScheme(d) {
			t.Fatal("Scheme differs from DetectScheme")
		}
		if n.Last4() != string(d[len(d)-4:]) {
			t.Fatal("Last4 wrong")
		}
		out := n.String()
		if strings.Contains(out, string(d)) || hasDigitRun(out, 5) {
			t.Fatalf("String shows digits: %q", maskDigits(out))
		}
		n.Zero()
		if !n.IsZero() || len(again.Reveal()) != len(d) {
			t.Fatal("Zero did not empty the Number, or emptied an independent one")
		}
	})
}

func FuzzParseExpiry(f *testing.F) {
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	nowSeconds := fixedNow.Unix() - base.Unix()
	for _, s := range []string{
		"03/26", "02/26", "12/99", "00/27", "13/27", "1/27", "12/2", "12/2027",
		"", "/", " 12/27", "12-27", "ab/cd", "\uff11\uff12/\uff12\uff17",
	} {
		f.Add(s, nowSeconds)
	}
	f.Add("01/26", time.Date(2026, 2, 1, 11, 59, 59, 0, time.UTC).Unix()-base.Unix())
	f.Add("01/26", time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC).Unix()-base.Unix())
	f.Fuzz(func(t *testing.T, s string, seconds int64) {
		// now anywhere in 2000-2109, so every YY is both past and future
		// for some inputs.
		const span = 110 * 366 * 24 * 3600
		seconds %= span
		if seconds < 0 {
			seconds += span
		}
		now := base.Add(time.Duration(seconds) * time.Second)

		e, err := card.ParseExpiry(s, now)
		var stored card.Expiry
		shapeErr := stored.UnmarshalText([]byte(s))

		if err != nil {
			var fe card.FieldError
			if !errors.As(err, &fe) || fe.Field != card.FieldExpirationDate {
				t.Fatalf("error %v is not an expiration_date FieldError", err)
			}
			if e != (card.Expiry{}) {
				t.Fatal("non-zero Expiry with an error")
			}
			msg := err.Error()
			if hasDigitRun(msg, 3) {
				t.Fatalf("error text %q has a digit run", msg)
			}
			for _, run := range digitRuns(s, 3) {
				if strings.Contains(msg, run) {
					t.Fatalf("error text %q repeats input digits", msg)
				}
			}
			switch fe.Code {
			case card.CodeExpired:
				// The form was right; only the date is past.
				if shapeErr != nil || !stored.Expired(now) {
					t.Fatalf("expired, but UnmarshalText says %v and Expired %v", shapeErr, stored.Expired(now))
				}
			case card.CodeRequired, card.CodeInvalidFormat, card.CodeInvalidMonth:
				if shapeErr == nil || shapeErr.Error() != err.Error() {
					t.Fatalf("ParseExpiry %v but UnmarshalText %v", err, shapeErr)
				}
			default:
				t.Fatalf("unexpected code %s", fe.Code)
			}
			return
		}

		if shapeErr != nil || stored != e {
			t.Fatalf("accepted, but UnmarshalText gives %+v, %v", stored, shapeErr)
		}
		if len(s) != 5 || s[2] != '/' || !e.IsValid() {
			t.Fatalf("accepted %q as %+v", s, e)
		}
		if e.Expired(now) {
			t.Fatal("accepted an expired date")
		}
		if e.Expired(now.Add(-24 * time.Hour)) {
			t.Fatal("valid now but expired a day earlier")
		}
		// Round trips through every format.
		if e.String() != s {
			t.Fatalf("String %q, input %q", e.String(), s)
		}
		got := map[card.ExpiryFormat]string{}
		for _, fm := range []card.ExpiryFormat{card.ExpiryMMYY, card.ExpiryM, card.ExpiryMM, card.ExpiryYY, card.ExpiryYYYY} {
			v, err := e.FormatAs(fm)
			if err != nil {
				t.Fatalf("FormatAs(%s): %v", fm, err)
			}
			got[fm] = v
		}
		if got[card.ExpiryMMYY] != s || got[card.ExpiryMM]+"/"+got[card.ExpiryYY] != s ||
			"20"+got[card.ExpiryYY] != got[card.ExpiryYYYY] ||
			strings.TrimPrefix(got[card.ExpiryMM], "0") != got[card.ExpiryM] {
			t.Fatalf("formats disagree: %v", got)
		}
	})
}
