package connector

import (
	"encoding/json"
	"strings"
	"testing"
)

// marshalInert's JSON reads back as what json.Marshal writes, and holds no
// "{{" whatever the strings hold.
func FuzzMarshalInert(f *testing.F) {
	for _, s := range []string{"", "{{ CARD_NUMBER_1 }}", `\{{"}}`, "{", "}}{{", `"\u007b`, "€{{x}}", "\x00{"} {
		f.Add(s, s+"k")
	}
	f.Fuzz(func(t *testing.T, value, key string) {
		v := []map[string]any{{key: value, "n": []string{value, key}}}
		want, err := json.Marshal(v)
		if err != nil {
			t.Skip()
		}
		got, err := marshalInert(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(got), "{{") {
			t.Fatalf("%s holds {{", got)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		ra, _ := json.Marshal(a)
		rb, _ := json.Marshal(b)
		if string(ra) != string(rb) {
			t.Fatalf("reads back as %s, want %s", ra, rb)
		}
	})
}
