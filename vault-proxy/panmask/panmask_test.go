package panmask_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/vault-proxy/panmask"
)

const r = panscan.Replacement

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"none", "Card Refused", "Card Refused", 0},
		{"one", "Card 4111111111111111 Refused", "Card " + r + " Refused", 1},
		{"grouped", "4111 1111 1111 1111", r, 1},
		{"two", "a=4111111111111111;b=5555-5555-5555-4444", "a=" + r + ";b=" + r, 2},
		{"not luhn", "order 1234567890123", "order 1234567890123", 0},
		{"uuid", "0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", "0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := panmask.String(tc.in)
			if got != tc.want || n != tc.n {
				t.Fatalf("String(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.want, tc.n)
			}
		})
	}
}

func TestText(t *testing.T) {
	in := []byte("declined: 4111 1111 1111 1111\r\n\x00 {\"n\":5555555555554444")
	got, n := panmask.Text(in)
	if want := "declined: " + r + "\r\n\x00 {\"n\":" + r; string(got) != want || n != 2 {
		t.Fatalf("Text = %q, %d; want %q, 2", got, n, want)
	}
	if string(in) != "declined: 4111 1111 1111 1111\r\n\x00 {\"n\":5555555555554444" {
		t.Fatal("Text changed its input")
	}
	clean := []byte("nothing here 2025-11-27T10:00:00Z")
	if got, n := panmask.Text(clean); n != 0 || &got[0] != &clean[0] {
		t.Fatal("Text copied an input without a card number")
	}
}

// A JSON answer stays JSON: a card number in a string is replaced inside
// the string, a number that is a card number becomes the string
// Replacement, whatever its sign, fraction or exponent, and an escape the
// number starts inside is masked with it.
func TestJSON(t *testing.T) {
	q := `"` + r + `"`
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"none", `{"id":"auth_1","amount":1299,"order":"1234567890123"}`, `{"id":"auth_1","amount":1299,"order":"1234567890123"}`, 0},
		{"in a string", `{"n":"4111111111111111"}`, `{"n":` + q + `}`, 1},
		{"in text", `{"m":"card 4111 1111 1111 1111 declined"}`, `{"m":"card ` + r + ` declined"}`, 1},
		{"in a key", `{"4111111111111111":true}`, `{` + q + `:true}`, 1},
		{"a number", `{"n":4111111111111111}`, `{"n":` + q + `}`, 1},
		{"a negative number", `[-4111111111111111]`, `[` + q + `]`, 1},
		{"a fraction", `{"n":4111111111111111.25}`, `{"n":` + q + `}`, 1},
		{"after a fraction point", `{"n":0.4111111111111111}`, `{"n":` + q + `}`, 1},
		{"an exponent", `{"n":4111111111111111E+0,"m":1}`, `{"n":` + q + `,"m":1}`, 1},
		{"a bare number", `4111111111111111`, q, 1},
		{"spaced", ` [ 4111111111111111 , "x" ] `, ` [ ` + q + ` , "x" ] `, 1},
		{"after escapes", `{"m":"\"\\\"4111111111111111\n"}`, `{"m":"\"\\\"` + r + `\n"}`, 1},
		{"quote in a string before a number", `{"m":"a\"b","n":4111111111111111}`, `{"m":"a\"b","n":` + q + `}`, 1},
		{"starting inside a \\u escape", `{"m":"\u003411111111111110x"}`, `{"m":"` + r + `x"}`, 1},
		{"two in one number", `[4111111111111111.5555555555554444]`, `[` + q + `]`, 2},
		{"string and number", `{"a":"5555555555554444","b":378282246310005}`, `{"a":` + q + `,"b":` + q + `}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.in)) {
				t.Fatalf("the case's input is not JSON: %s", tc.in)
			}
			got, n := panmask.JSON([]byte(tc.in))
			if string(got) != tc.want || n != tc.n {
				t.Fatalf("JSON(%s) = %s, %d; want %s, %d", tc.in, got, n, tc.want, tc.n)
			}
			if !json.Valid(got) {
				t.Fatalf("masked %s is not JSON", got)
			}
			if panscan.Contains(string(got)) {
				t.Fatalf("masked %s still holds a card number", got)
			}
		})
	}
}

func TestCounter(t *testing.T) {
	var c panmask.Counter
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Add(panmask.Found{StatusLine: 1, Headers: 2, Body: 3})
			c.Add(panmask.Found{}) // nothing masked: not an answer to count
		}()
	}
	wg.Wait()
	if got := c.Load(); got != (panmask.Totals{Answers: 8, Numbers: 48}) {
		t.Fatalf("counter %+v", got)
	}
}

func BenchmarkJSONWithoutCardNumbers(b *testing.B) {
	body := []byte(`{"id":"auth_0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e","status":"approved","amount":1299,"currency":"EUR","created":"2025-11-27T10:00:00Z","network_transaction_id":"123456789012345","` +
		strings.Repeat(`x`, 2048) + `":1}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, n := panmask.JSON(body); n != 0 {
			b.Fatal("masked")
		}
	}
}
