package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

// FuzzRedact checks the two properties the redactor exists for: no input
// makes it panic, and no Luhn-valid 12-19 digit run survives it, neither in
// Redact's result nor in what the production logger writes for the input
// used as message, attribute value and attribute key.
func FuzzRedact(f *testing.F) {
	for _, s := range testPANs {
		f.Add(s)
	}
	for _, s := range []string{
		"", "pan=4111111111111111;exp=12/25",
		"4111 1111 1111 1111 1225", "5555-5555-5555-4444-5555-5555-5555-4444",
		"1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6", "1234567890123456", "\x004111111111111111\u2028",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if out := Redact(s); ContainsPAN(out) {
			t.Fatalf("Redact(%q) = %q keeps a card number", s, out)
		}
		var buf bytes.Buffer
		New(&buf, slog.LevelDebug).Info(s, "v", s, s, 1)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("logger wrote invalid JSON %q: %v", buf.String(), err)
		}
		// The decoded line, not the raw JSON: an escape such as \u0001
		// next to digits would add digits that are not in the data.
		for k, v := range line {
			if ContainsPAN(k) {
				t.Fatalf("key %q keeps a card number", k)
			}
			if str, ok := v.(string); ok && ContainsPAN(str) {
				t.Fatalf("%s=%q keeps a card number", k, str)
			}
		}
	})
}
