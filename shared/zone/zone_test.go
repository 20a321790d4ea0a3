package zone_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
	"github.com/payorch/shared/zone/zonetest"
)

// Each fixture must decode strictly into its type and encode back to the
// same JSON: a renamed or added field breaks this test on both sides.
func TestGoldenFixtures(t *testing.T) {
	for _, tc := range zonetest.Bodies {
		t.Run(tc.File, func(t *testing.T) {
			raw := zonetest.Read(t, tc.File)
			v := tc.New()
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Fatalf("decode: %v", err)
			}
			again, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !zonetest.SameJSON(t, raw, again) {
				t.Fatalf("round trip changed the fixture:\n%s\n%s", raw, again)
			}
			if logging.ContainsPAN(string(raw)) {
				t.Fatal("a zone fixture holds a card number")
			}
		})
	}
}

// Every fixture in testdata is a body of the zone: none is left untested.
func TestEveryFixtureIsListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, b := range zonetest.Bodies {
		listed[b.File] = true
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not in zonetest.Bodies", f)
		}
	}
	if len(files) != len(listed) {
		t.Errorf("%d fixtures, %d listed", len(files), len(listed))
	}
}

func TestMerchantAccountPath(t *testing.T) {
	for _, tc := range []struct{ path, id, want string }{
		{zone.MerchantAccountUsagePath, "acme", "/internal/merchant-accounts/acme/usage"},
		{zone.MerchantAccountClosePath, "acme-eu_1", "/internal/merchant-accounts/acme-eu_1/close"},
		{zone.MerchantAccountCancelClosePath, "acme", "/internal/merchant-accounts/acme/cancel-close"},
		{zone.MerchantAccountReopenPath, "acme", "/internal/merchant-accounts/acme/reopen"},
		{zone.MerchantAccountUsagePath, "a/b c", "/internal/merchant-accounts/a%2Fb%20c/usage"},
	} {
		if got := zone.MerchantAccountPath(tc.path, tc.id); got != tc.want {
			t.Errorf("MerchantAccountPath(%q, %q) = %q, want %q", tc.path, tc.id, got, tc.want)
		}
	}
}

// The values DigitFields exempt from the Luhn-only test are still refused
// when they are card numbers of a known scheme; every other key keeps the
// Luhn-only test.
func TestHoldsCardNumber(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
		want             bool
	}{
		{"visa as a transaction id", "scheme_transaction_id", "4111111111111111", true},
		{"amex as a phone number", "phone_number", "+378282246310005", true},
		{"grouped visa in a phone number", "phone_number", "+1 4111 1111 1111 1111", true},
		{"dashed mastercard in text", "scheme_transaction_id", "ref 5555-5555-5555-4444 ok", true},
		{"13-digit visa as a phone number", "phone_number", "+4222222222222", true},
		{"15 digits starting with 4", "scheme_transaction_id", "412345678901233", false},
		{"luhn-valid phone number", "phone_number", "+819012345677", false},
		{"12-digit luhn-valid phone number", "phone_number", "+600000000007", false},
		{"not luhn-valid", "scheme_transaction_id", "4111111111111112", false},
		{"15 digits starting with 4 elsewhere", "reference", "412345678901233", true},
		{"luhn-valid phone number elsewhere", "", "+600000000007", true},
		{"case matters, as for any key", "Phone_Number", "+600000000007", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := zone.HoldsCardNumber(tc.key, tc.value); got != tc.want {
				t.Fatalf("HoldsCardNumber(%q, ...) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// DigitFields' false-positive rates, measured on seeded random values: the
// share of legitimate values HoldsCardNumber would refuse. The figures are
// quoted in DigitFields' comment and docs/card-data.md.
//
//   - Transaction ids: 15 uniformly random digits, as Visa's are.
//   - Phone numbers: "+", a country code of 1-3 digits and subscriber
//     digits, 7 to 15 digits in all (the E.164 lengths core-api takes),
//     the length uniform, the first digit 1-9 and the others uniform.
//     How the digits split into country code and subscriber number does
//     not change the string, so only the total is drawn.
//
// A value is refused when its digits are a card number of a known scheme,
// so the rate is the share of the leading digits a scheme of that length
// holds, times one in ten for the Luhn check: at 15 digits 5.7% of the
// leading digits (Amex, Diners, Maestro) give 0.57%.
func TestDigitFieldsFalsePositiveRate(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 50_000 // still within 0.1% of the rates, a tenth of the margin
	}
	r := rand.New(rand.NewPCG(7812, 164))
	var buf, restBuf [16]byte
	// value is prefix, a first digit from first (a set of digits), then
	// n-1 uniform digits.
	value := func(prefix, first string, n int) string {
		b := append(append(buf[:0], prefix...), first[r.IntN(len(first))])
		rest := strconv.AppendUint(restBuf[:0], r.Uint64N(pow10[n-1]), 10)
		for range n - 1 - len(rest) {
			b = append(b, '0')
		}
		return string(append(b, rest...))
	}

	refused := 0
	for range n {
		if zone.HoldsCardNumber("scheme_transaction_id", value("", "0123456789", 15)) {
			refused++
		}
	}
	idRate := float64(refused) / float64(n)

	refused = 0
	var byLen, refusedByLen [16]int
	for range n {
		l := 7 + r.IntN(9)
		byLen[l]++
		if zone.HoldsCardNumber("phone_number", value("+", "123456789", l)) {
			refusedByLen[l]++
			refused++
		}
	}
	phoneRate := float64(refused) / float64(n)

	t.Logf("15-digit transaction ids: %.3f%% refused of %d", 100*idRate, n)
	t.Logf("E.164 phone numbers: %.3f%% refused of %d", 100*phoneRate, n)
	for l := 12; l <= 15; l++ {
		t.Logf("  %d digits: %.3f%% of %d", l, 100*float64(refusedByLen[l])/float64(byLen[l]), byLen[l])
	}
	if idRate >= 0.01 || phoneRate >= 0.01 {
		t.Fatalf("false-positive rates %.3f%% (transaction ids) and %.3f%% (phone numbers), want under 1%%", 100*idRate, 100*phoneRate)
	}
}

var pow10 = func() (p [16]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()
