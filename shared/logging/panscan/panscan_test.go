package panscan

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/payorch/shared/cardscheme"
)

func TestFind(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // the matched text
	}{
		{"visa", "4111111111111111", []string{"4111111111111111"}},
		{"mastercard", "5555555555554444", []string{"5555555555554444"}},
		{"amex 15", "378282246310005", []string{"378282246310005"}},
		{"visa 4242", "4242424242424242", []string{"4242424242424242"}},
		{"discover", "6011111111111117", []string{"6011111111111117"}},
		{"jcb", "3530111333300000", []string{"3530111333300000"}},
		{"spaces", "4111 1111 1111 1111", []string{"4111 1111 1111 1111"}},
		{"dashes", "4111-1111-1111-1111", []string{"4111-1111-1111-1111"}},
		{"amex grouping", "3782 822463 10005", []string{"3782 822463 10005"}},
		{"embedded in text", "card=4111111111111111;", []string{"4111111111111111"}},
		{"glued to letters", "abc4111111111111111xyz", []string{"4111111111111111"}},
		{"followed by expiry group", "4111 1111 1111 1111 1225", []string{"4111 1111 1111 1111"}},
		{"two cards", "a 4111111111111111 b 5555-5555-5555-4444 c", []string{"4111111111111111", "5555-5555-5555-4444"}},
		{"12-digit maestro", "pan=501800000009.", []string{"501800000009"}},
		{"11 digits", "pan=50180000009.", nil},
		{"non-luhn 16", "1234567890123456", nil},
		{"non-luhn visa-like", "4111111111111112", nil},
		{"ms timestamp", "ts=1732258500123", nil},
		{"ns timestamp", "1732258500123456789", nil},
		{"short", "411111111111", nil},
		{"twenty digits", "41111111111111111111", nil},
		{"double space breaks run", "4111  1111 1111 1111", nil},
		{"dot is not a separator", "4111.1111.1111.1111", nil},
		{"rfc3339", "2024-11-22T06:55:12.123456789Z", nil},
		{"uuid", "id=fb324c2c-6232-4731-9586-149f4ade5129", nil},
		{"decimal uuid", "12345678-1234-4123-8123-123456789012", nil},
		{"upper-case uuid in text", "pm_FB324C2C-6232-4731-9586-149F4ADE5129.", nil},
		{"digits joined to uuid", "4111-1111-1111-1111-fb324c2c-6232-4731-9586-149f4ade5129", []string{"4111-1111-1111-1111"}},
		{"pan before uuid", "4111111111111111 12345678-1234-4123-8123-123456789012", []string{"4111111111111111"}},
		{"not a uuid: last part too long", "abcdef12-abcd-4bcd-abcd-4111111111111111", []string{"4111111111111111"}},
		{"inside hex string", "sha=ab4111111111111111cd", nil},
		{"hex letter one side", "4111111111111111D25121010000000000F", []string{"4111111111111111"}},
		{"non-hex letters both sides", "x4111111111111111y", []string{"4111111111111111"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range Find(tt.in) {
				got = append(got, tt.in[m.Start:m.End])
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Find(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if Contains(tt.in) != (len(tt.want) > 0) {
				t.Errorf("Contains(%q) = %v", tt.in, !(len(tt.want) > 0))
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "pan 4111111111111111 ok", "pan [REDACTED-PAN] ok"},
		{"separated", "4111-1111-1111-1111/12", "[REDACTED-PAN]/12"},
		{"nothing", "order 1234567890123456", "order 1234567890123456"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactDoesNotAllocateWhenClean(t *testing.T) {
	s := strings.Repeat("order 12345 at 2024-11-22 ", 20)
	if n := testing.AllocsPerRun(100, func() { _ = Redact(s) }); n != 0 {
		t.Errorf("Redact allocated %v times on clean input", n)
	}
}

// TestFindMatchesOracle compares Find with a direct transcription of the
// definition on random strings over an alphabet dense in digits and
// separators, where the two could disagree.
func TestFindMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789012345678901234567890123456789  --xaF"
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.IntN(60))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(b)
		if got, want := Find(s), oracle(s, cardscheme.Luhn); !reflect.DeepEqual(got, want) {
			t.Fatalf("Find(%q) = %v, oracle %v", s, got, want)
		}
		if got, want := ContainsSchemePAN(s), oracle(s, cardscheme.IsCardNumber) != nil; got != want {
			t.Fatalf("ContainsSchemePAN(%q) = %v, oracle %v", s, got, want)
		}
		if Contains(Redact(s)) {
			t.Fatalf("Redact(%q) = %q still contains a PAN", s, Redact(s))
		}
	}
}

// oracle: a byte range is a candidate if it starts at the start of a digit
// group, ends at the end of one, contains only digits and single
// separators between digits, holds 12-19 digits and passes isPAN. Matches
// are the union of candidates, merged across a separator between two
// covered groups.
//
// The two exceptions are applied the plain way: digits inside a UUID are
// overwritten with 'x' first, and candidates between two hex letters are
// skipped.
func oracle(orig string, isPAN func(string) bool) []Match {
	s := hideUUIDs(orig)
	hexLetter := func(c byte) bool { return strings.IndexByte("abcdefABCDEF", c) >= 0 }
	covered := make([]bool, len(s))
	groupStart := func(i int) bool { return isDigit(s[i]) && (i == 0 || !isDigit(s[i-1])) }
	groupEnd := func(j int) bool { return isDigit(s[j-1]) && (j == len(s) || !isDigit(s[j])) }
	for i := range s {
		if !groupStart(i) {
			continue
		}
		for j := i + 1; j <= len(s); j++ {
			c := s[j-1]
			if !isDigit(c) && !(c == ' ' || c == '-') {
				break
			}
			if !isDigit(c) && (j == len(s) || !isDigit(s[j]) || !isDigit(s[j-2])) {
				break
			}
			if !groupEnd(j) {
				continue
			}
			n := 0
			for k := i; k < j; k++ {
				if isDigit(s[k]) {
					n++
				}
			}
			if n > maxDigits {
				break
			}
			if i > 0 && j < len(s) && hexLetter(s[i-1]) && hexLetter(s[j]) {
				continue
			}
			if n >= minDigits && isPAN(s[i:j]) {
				for k := i; k < j; k++ {
					covered[k] = true
				}
			}
		}
	}
	for i := 1; i+1 < len(s); i++ {
		if covered[i-1] && covered[i+1] && (s[i] == ' ' || s[i] == '-') {
			covered[i] = true
		}
	}
	var out []Match
	for i := 0; i < len(s); i++ {
		if !covered[i] {
			continue
		}
		m := Match{Start: i}
		for i < len(s) && covered[i] {
			i++
		}
		m.End = i
		out = append(out, m)
	}
	return out
}

var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func hideUUIDs(s string) string {
	b := []byte(s)
	isHex := func(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }
	for k := 0; k+36 <= len(s); k++ {
		if uuidShape.MatchString(s[k:k+36]) && (k == 0 || !isHex(s[k-1])) && (k+36 == len(s) || !isHex(s[k+36])) {
			for j := k; j < k+36; j++ {
				b[j] = 'x'
			}
			k += 35
		}
	}
	return string(b)
}

func BenchmarkRedactClean(b *testing.B) {
	s := `{"msg":"payment authorized","amount":1299,"currency":"EUR","id":"7c0c4b8e"}`
	for b.Loop() {
		_ = Redact(s)
	}
}

func BenchmarkRedactDigits(b *testing.B) {
	s := "order 1732258500123 created at 2024-11-22 06:55:12 for 1234567890123456"
	for b.Loop() {
		_ = Redact(s)
	}
}

// FuzzFind checks Find against the oracle and that Redact leaves nothing
// Find would report.
func FuzzFind(f *testing.F) {
	for _, s := range []string{"4111111111111111", "4111 1111 1111 1111 1225", "1 2 3 4 5 6 7 8 9 0 1 2 3 4", "x-4242-4242-4242-4242-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Find(s), oracle(s, cardscheme.Luhn); !reflect.DeepEqual(got, want) {
			t.Fatalf("Find(%q) = %v, oracle %v", s, got, want)
		}
		if got, want := ContainsSchemePAN(s), oracle(s, cardscheme.IsCardNumber) != nil; got != want {
			t.Fatalf("ContainsSchemePAN(%q) = %v, oracle %v", s, got, want)
		}
		if out := Redact(s); Contains(out) {
			t.Fatalf("Redact(%q) = %q still contains a PAN", s, out)
		}
	})
}

// TestIdentifiersAreNotPANs guards against the false positives that made
// the exceptions necessary: ids and hashes are in every log line, and a
// test scanning logs must not fail because of them.
func TestIdentifiersAreNotPANs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[r.IntN(16)]
		}
		return string(b)
	}
	for i := 0; i < 100000; i++ {
		uuid := hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12)
		if line := `{"id":"` + uuid + `","request_id":"` + strings.ToUpper(uuid) + `"}`; Contains(line) {
			t.Fatalf("UUID flagged: %s", line)
		}
	}
	hits := 0
	for i := 0; i < 100000; i++ {
		if Contains("sha256=" + hex(64) + ";") {
			hits++
		}
	}
	// Only a digit run at either end of the hash can be flagged.
	if hits > 100 {
		t.Errorf("%d of 100000 hex hashes flagged", hits)
	}
	t.Logf("%d of 100000 hex hashes flagged", hits)
}

// TestInIdentifierMatchesDefinition compares InIdentifier, which skips the
// scan when no run is long enough, with its definition applied directly:
// letters rewritten to a non-hex letter, '.', '_' and '-' to a space, then
// Contains.
func TestInIdentifierMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const alphabet = "01234567890123456789012345678901234567890123456789.._--aFx"
	rewrite := strings.NewReplacer(".", " ", "_", " ", "-", " ", "a", "x", "F", "x")
	hits := 0
	for i := 0; i < 50000; i++ {
		b := make([]byte, r.IntN(40))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		id := string(b)
		want := Contains(rewrite.Replace(id))
		if got := InIdentifier(id); got != want {
			t.Fatalf("InIdentifier(%q) = %v, want %v", id, got, want)
		}
		if want {
			hits++
		}
	}
	if hits < 1000 {
		t.Fatalf("only %d identifiers held a PAN: the test does not exercise the scan", hits)
	}
}

// ContainsSchemePAN reads candidates as Contains does and keeps only those
// that are card numbers of a known scheme.
func TestContainsSchemePAN(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{"visa", "4111111111111111", true},
		{"a window of a grouped run", "+1 4111 1111 1111 1111", true},
		{"in text", "txn 3782-822463-10005 ok", true},
		{"luhn-valid, of no scheme's length", "412345678901233", false},
		{"luhn-valid, of no scheme's range", "+600000000007", false},
		{"not luhn-valid", "4111111111111112", false},
		{"inside a uuid", "12345678-1234-4123-8123-123456789012", false},
		{"inside a hex string", "ab4111111111111111cd", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainsSchemePAN(tc.in); got != tc.want {
				t.Fatalf("ContainsSchemePAN(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if tc.want && !Contains(tc.in) {
				t.Fatalf("Contains(%q) = false: ContainsSchemePAN must be the narrower", tc.in)
			}
		})
	}
}
