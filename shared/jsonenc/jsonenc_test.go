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

// BenchmarkAppendString writes the strings of a forward's audit record:
// ids, names and a host, none needing an escape.
func BenchmarkAppendString(b *testing.B) {
	strs := []string{"0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", "default", "forward", "vault-forward", "success",
		"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_1", "127.0.0.1:8443", "POST", "placeholders"}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for _, s := range strs {
			buf = AppendString(buf, s)
		}
	}
}
