package accountid_test

import (
	"regexp"
	"testing"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/accountid/accountidtest"
)

// pattern is Pattern as the regexp engine reads it: the reference Valid is
// held to.
var pattern = regexp.MustCompile(accountid.Pattern)

func TestValidIsThePattern(t *testing.T) {
	for _, m := range append(accountidtest.Cases, "") {
		agreesWithPattern(t, m)
	}
}

// agreesWithPattern checks both forms Valid takes: header bytes and path
// or body strings.
func agreesWithPattern(t *testing.T, m string) {
	t.Helper()
	want := pattern.MatchString(m)
	if got := accountid.Valid([]byte(m)); got != want {
		t.Errorf("%q as bytes: %v, the regexp says %v", m, got, want)
	}
	if got := accountid.Valid(m); got != want {
		t.Errorf("%q as a string: %v, the regexp says %v", m, got, want)
	}
}

func FuzzValid(f *testing.F) {
	for _, m := range accountidtest.Cases {
		f.Add(m)
	}
	f.Fuzz(agreesWithPattern)
}

func TestMaxLen(t *testing.T) {
	long := make([]byte, accountid.MaxLen)
	for i := range long {
		long[i] = 'a'
	}
	if !pattern.Match(long) || pattern.Match(append(long, 'a')) {
		t.Fatalf("MaxLen %d is not the longest id the pattern matches", accountid.MaxLen)
	}
}

func TestFromHeader(t *testing.T) {
	for _, m := range append(accountidtest.Cases, "") {
		got, ok := accountid.FromHeader([]byte(m))
		switch {
		case m == "":
			if got != accountid.Default || !ok {
				t.Errorf("no header: %q, %v", got, ok)
			}
		case pattern.MatchString(m):
			if got != m || !ok {
				t.Errorf("%q: %q, %v", m, got, ok)
			}
		default:
			if got != "" || ok {
				t.Errorf("%q: %q, %v", m, got, ok)
			}
		}
	}
}
