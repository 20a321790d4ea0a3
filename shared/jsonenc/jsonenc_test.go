package jsonenc

import (
	"encoding/json"
	"testing"
)

func FuzzAppendStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", `quote " backslash \ slash /`, "<a&b>", "\x00\x1f\n\r\t\b\f", "\u2028\u2029", "\xff\xfe", "é日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json = %s", s, got, want)
		}
	})
}
