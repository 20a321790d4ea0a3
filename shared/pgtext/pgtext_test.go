package pgtext

import "testing"

func TestStorable(t *testing.T) {
	for _, tc := range []struct {
		in, out  string
		storable bool
	}{
		{"", "", true},
		{"Ada é \u2028 <&>", "Ada é \u2028 <&>", true},
		{"a\x00b", "a\uFFFDb", false},
		{"a\xffb", "a\uFFFDb", false},
		{"\xe2\x82", "\uFFFD\uFFFD", false}, // a cut-off rune: one U+FFFD per byte
		{"\x00", "\uFFFD", false},
	} {
		if got := Storable(tc.in); got != tc.storable {
			t.Errorf("Storable(%q) = %t", tc.in, got)
		}
		if got := string(AppendStorable([]byte("x"), tc.in)); got != "x"+tc.out {
			t.Errorf("AppendStorable(%q) = %q, want %q", tc.in, got, "x"+tc.out)
		}
	}
}
