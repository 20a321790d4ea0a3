package card_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/payorch/tokenizer/card"
)

// fixedNow is the clock of every test that does not say otherwise.
var fixedNow = time.Date(2026, time.March, 15, 12, 0, 0, 0, time.UTC)

func mustNumber(t testing.TB, s string) card.Number {
	t.Helper()
	n, err := card.ParseNumber(s)
	if err != nil {
		t.Fatalf("ParseNumber(test card %s): %v", mask(s), err)
	}
	return n
}

// fieldError unwraps err into a FieldError or fails the test.
func fieldError(t testing.TB, err error) card.FieldError {
	t.Helper()
	var fe card.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a card.FieldError", err, err)
	}
	return fe
}

// mask hides the middle of a test PAN in failure messages, so that a
// failing test does not print a full card number into CI logs either.
func mask(s string) string {
	if len(s) <= 10 {
		return s
	}
	return s[:6] + strings.Repeat("*", len(s)-10) + s[len(s)-4:]
}

// longestDigitRun is the number of digits in the longest run of ASCII
// digits in s, where digit groups joined by one space or one dash count as
// one run (as in "4111 1111 1111 1111"), the way shared/logging/panscan
// groups them.
func longestDigitRun(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			run++
			longest = max(longest, run)
		case (c == ' ' || c == '-') && run > 0 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			// a single separator inside a run
		default:
			run = 0
		}
	}
	return longest
}

// assertNoCardData fails t when out contains any of secrets, in plain
// form, with separators, or encoded the ways fmt encodes bytes (decimal
// byte values "52 49 49 49", hex "34313131"), or any run of 13 or more
// digits (the shortest PAN scanners look for).
func assertNoCardData(t *testing.T, out string, secrets ...string) {
	t.Helper()
	if n := longestDigitRun(out); n >= 13 {
		t.Errorf("output has a %d-digit run: %q", n, maskDigits(out))
	}
	joined := strings.NewReplacer(" ", "", "-", "").Replace(out)
	for _, s := range secrets {
		if strings.Contains(out, s) || strings.Contains(joined, s) {
			t.Errorf("output contains a secret of %d digits: %q", len(s), maskDigits(out))
		}
	}
	assertNoSecrets(t, out, secrets...)
}

// assertNoSecrets is assertNoCardData without the digit-run rule, for
// output that legitimately holds long numbers: pointer addresses in
// decimal, or the hex encoding of redacted text. A secret shorter than a
// PAN (a security code) could occur in an address by chance, so for those
// only the encoded forms are looked for.
func assertNoSecrets(t *testing.T, out string, secrets ...string) {
	t.Helper()
	joined := strings.NewReplacer(" ", "", "-", "").Replace(out)
	lower := strings.ToLower(joined)
	for _, s := range secrets {
		plain := len(s) >= 13 && (strings.Contains(out, s) || strings.Contains(joined, s))
		bytesDec := strings.Trim(fmt.Sprint([]byte(s)), "[]") // "52 49 49 ..."
		encoded := strings.Contains(out, bytesDec) || strings.Contains(lower, hex.EncodeToString([]byte(s)))
		if plain || encoded {
			t.Errorf("output contains a secret of %d digits: %q", len(s), maskDigits(out))
		}
	}
}

func maskDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, s)
}

// hasDigitRun reports whether s contains n or more consecutive ASCII digits.
func hasDigitRun(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			run++
			if run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// digitRuns returns every maximal run of at least n ASCII digits in s.
func digitRuns(s string, n int) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= n {
			out = append(out, s[start:i])
		}
		start = -1
	}
	return out
}
