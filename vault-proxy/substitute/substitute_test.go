package substitute

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/vault-proxy/substitute/substitutetest"
)

func TestParseNames(t *testing.T) {
	cases := []struct {
		name    string
		field   Field
		format  card.ExpiryFormat
		orEmpty bool
		index   int
	}{
		{"CARD_NUMBER_1", CardNumber, "", false, 1},
		{"CARD_NUMBER_100", CardNumber, "", false, 100},
		{"CARD_NUMBER_01", CardNumber, "", false, 1},
		{"CARD_NUMBER_0", CardNumber, "", false, 0},
		{"CARD_EXPIRATION_DATE_2", CardExpiry, "", false, 2},
		{"CARD_EXPIRATION_DATE_M_1", CardExpiry, card.ExpiryM, false, 1},
		{"CARD_EXPIRATION_DATE_MM_1", CardExpiry, card.ExpiryMM, false, 1},
		{"CARD_EXPIRATION_DATE_YY_1", CardExpiry, card.ExpiryYY, false, 1},
		{"CARD_EXPIRATION_DATE_YYYY_2", CardExpiry, card.ExpiryYYYY, false, 2},
		{"CARD_NETWORK_TOKEN_1", NetworkToken, "", false, 1},
		{"CARD_NETWORK_TOKEN_OR_EMPTY_STRING_1", NetworkToken, "", true, 1},
		{"CARD_NETWORK_TOKEN_EXPIRATION_DATE_1", NetworkTokenExpiry, "", false, 1},
		{"CARD_NETWORK_TOKEN_EXPIRATION_DATE_MM_OR_EMPTY_STRING_1", NetworkTokenExpiry, card.ExpiryMM, true, 1},
		{"CARD_NETWORK_TOKEN_EXPIRATION_DATE_YYYY_3", NetworkTokenExpiry, card.ExpiryYYYY, false, 3},
		{"CARD_CRYPTOGRAM_1", Cryptogram, "", false, 1},
		{"CARD_CRYPTOGRAM_OR_EMPTY_STRING_1", Cryptogram, "", true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, body := range []string{"{{" + tc.name + "}}", "{{ " + tc.name + " }}", "{{   " + tc.name + "\t}}"} {
				tpl, err := Parse([]byte(body), Options{})
				if err != nil {
					t.Fatalf("Parse(%q): %v", body, err)
				}
				ph := tpl.Placeholders()
				if len(ph) != 1 {
					t.Fatalf("Parse(%q) found %d placeholders", body, len(ph))
				}
				p := ph[0]
				if p.Name != tc.name || p.Field != tc.field || p.Format != tc.format || p.OrEmpty != tc.orEmpty || p.Index != tc.index {
					t.Fatalf("Parse(%q) = %+v", body, p)
				}
			}
		})
	}
}

// The body is a request buffer its server reuses; the names a template
// hands out (to audit records, to errors) must not change with it.
func TestNamesOutliveTheBody(t *testing.T) {
	body := []byte(`{"a":"{{ CARD_NUMBER_1 }}","b":"{{CARD_EXPIRATION_DATE_MM_2}}","c":"{{ CARD_CRYPTOGRAM_OR_EMPTY_STRING_12 }}","d":"{{ CARD_NUMBER_02 }}"}`)
	tpl, err := Parse(body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'X'
	}
	var got []string
	for _, p := range tpl.Placeholders() {
		got = append(got, p.Name)
	}
	want := []string{"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_2", "CARD_CRYPTOGRAM_OR_EMPTY_STRING_12", "CARD_NUMBER_02"}
	if !slices.Equal(got, want) {
		t.Fatalf("names after the body changed: %q, want %q", got, want)
	}

	body = []byte(`{"a":"{{ CARD_NUMBER_1 }}","b":"{{ CARD_PIN_1 }}"}`)
	_, err = Parse(body, Options{})
	for i := range body {
		body[i] = 'X'
	}
	var e *Error
	if !errors.As(err, &e) || e.Placeholder != "CARD_PIN_1" || e.Message != "unknown placeholder CARD_PIN_1" {
		t.Fatalf("error after the body changed: %#v", err)
	}
}

// The table of known names is the grammar: a base name, a variant word
// that card.ParseExpiryFormat knows (but for the default MM/YY) for the
// expiry fields, OR_EMPTY_STRING for the network token fields.
func TestKindsAreTheGrammar(t *testing.T) {
	words := []string{"", "M", "MM", "YY", "YYYY", "MMYY", "DD", "X"}
	known := 0
	for _, b := range bases {
		for _, word := range words {
			for _, orEmpty := range []bool{false, true} {
				name := b.name
				if word != "" {
					name += "_" + word
				}
				if orEmpty {
					name += "_OR_EMPTY_STRING"
				}
				f, fok := card.ParseExpiryFormat(word)
				want := (word == "" || b.expiry && fok && f != card.ExpiryMMYY) && (!orEmpty || b.field.NeedsNetworkToken())
				p, ok := parseKnownName(name + "_7")
				if ok != want {
					t.Fatalf("%s_7 known: %v, want %v", name, ok, want)
				}
				if !ok {
					continue
				}
				known++
				if word == "" {
					f = ""
				}
				if p.Name != name+"_7" || p.Field != b.field || p.Format != f || p.OrEmpty != orEmpty || p.Index != 7 || p.borrowed {
					t.Fatalf("%s_7 = %+v", name, p)
				}
			}
		}
	}
	all := 0
	for _, ks := range kinds {
		all += len(ks)
	}
	if known != all {
		t.Fatalf("%d names known of the %d kinds", known, all)
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct{ body, code string }{
		{"{{ CARD_NUMBER }}", "unknown_placeholder"},
		{"{{ CARD_NUMBERS_1 }}", "unknown_placeholder"},
		{"{{ card_number_1 }}", "unknown_placeholder"},
		{"{{ CARD_NUMBER_OR_EMPTY_STRING_1 }}", "unknown_placeholder"},
		{"{{ CARD_EXPIRATION_DATE_OR_EMPTY_STRING_1 }}", "unknown_placeholder"},
		{"{{ CARD_EXPIRATION_DATE_DD_1 }}", "unknown_placeholder"},
		{"{{ CARD_EXPIRATION_DATE_MMYY_1 }}", "unknown_placeholder"},
		{"{{ CARD_CVV_1 }}", "unknown_placeholder"},
		{"{{ CARD_NUMBER_x }}", "unknown_placeholder"},
		{"{{ CARD_SECURITY_CODE_1 }}", "placeholder_not_allowed"},
		{"{{ GIFT_CARD_PIN_1 }}", "placeholder_not_allowed"},
		{"{{ GIFT_CARD_PIN }}", "unknown_placeholder"},
		{"{{ _1 }}", "unknown_placeholder"},
		// Extra braces around a misspelt name do not hide it.
		{"{{{CARD_NUMBR_1}}}", "unknown_placeholder"},
		{"{{{{ CARD_NUMBR_1 }}", "unknown_placeholder"},
		// A card number where a name belongs is not repeated.
		{"{{ 4111111111111111_1 }}", "unknown_placeholder"},
		{"{{ 4111_1111_1111_1111 }}", "unknown_placeholder"},
		{"{{ a4111111111111111a_1 }}", "unknown_placeholder"},
		{"{{ CARD_SECURITY_CODE_4111111111111111 }}", "placeholder_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			_, err := Parse([]byte(`{"a":"`+tc.body+`"}`), Options{})
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code {
				t.Fatalf("Parse = %v, want code %s", err, tc.code)
			}
			if !strings.Contains(e.Message, e.Placeholder) || e.Placeholder == "" {
				t.Fatalf("error %q does not name the placeholder", e.Message)
			}
			if strings.Contains(strings.NewReplacer("_", "", "a", "").Replace(e.Message+e.Placeholder), "4111111111111111") {
				t.Fatalf("error %q repeats a card number", e.Message)
			}
		})
	}
}

// An index out of range is named in the error, unless it is a card number
// (a known name whose index is one parses, and only CheckIndexes refuses
// it).
func TestIndexOutOfRangeNeverRepeatsACardNumber(t *testing.T) {
	cases := []struct{ body, placeholder, message string }{
		{"{{ CARD_NUMBER_3 }}", "CARD_NUMBER_3", "placeholder CARD_NUMBER_3: index 3 is outside 1..2"},
		{"{{ CARD_NUMBER_0 }}", "CARD_NUMBER_0", "placeholder CARD_NUMBER_0: index 0 is outside 1..2"},
		{"{{ CARD_NUMBER_4111111111111111 }}", panscan.Replacement,
			"placeholder " + panscan.Replacement + ": index " + panscan.Replacement + " is outside 1..2"},
		{"{{ CARD_EXPIRATION_DATE_MM_04111111111111111 }}", panscan.Replacement,
			"placeholder " + panscan.Replacement + ": index " + panscan.Replacement + " is outside 1..2"},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			tpl, err := Parse([]byte(`{"a":"`+tc.body+`"}`), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var e *Error
			if err := tpl.CheckIndexes(2); !errors.As(err, &e) || e.Code != "index_out_of_range" {
				t.Fatalf("CheckIndexes = %v, want index_out_of_range", err)
			}
			if e.Placeholder != tc.placeholder || e.Message != tc.message {
				t.Fatalf("error %q naming %q, want %q naming %q", e.Message, e.Placeholder, tc.message, tc.placeholder)
			}
		})
	}
}

func TestNonPlaceholderBracesStayText(t *testing.T) {
	body := `{"greeting":"{{ user.name }}","x":"{{}}","y":"{{ a b }}","open":"{{ CARD_NUMBER_1"}`
	tpl, err := Parse([]byte(body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tpl.Placeholders()); n != 0 {
		t.Fatalf("found %d placeholders in text that has none", n)
	}
	out, _ := tpl.Render(nil, JSON, func(Placeholder) ([]byte, error) { t.Fatal("resolver called"); return nil, nil })
	if string(out) != body {
		t.Fatalf("body changed: %s", out)
	}
}

// A placeholder inside further braces is still found: the braces around
// it stay text.
func TestPlaceholderInsideBraces(t *testing.T) {
	cases := []struct{ body, want string }{
		{"{{{CARD_NUMBER_1}}}", "{4111}"},
		{"{{{ CARD_NUMBER_1 }}", "{4111"},
		{"{{{{CARD_NUMBER_1}}}}", "{{4111}}"},
		{"{ {{CARD_NUMBER_1}} }", "{ 4111 }"},
		{"{{ {{ CARD_NUMBER_1 }} }}", "{{ 4111 }}"},
		{"{{x.y}} {{CARD_NUMBER_1}}", "{{x.y}} 4111"},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			tpl, err := Parse([]byte(tc.body), Options{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := tpl.Render(nil, Plain, func(Placeholder) ([]byte, error) { return []byte("4111"), nil })
			if err != nil || string(out) != tc.want {
				t.Fatalf("rendered %q, %v; want %q", out, err, tc.want)
			}
		})
	}
}

// Parsing is linear in the body: a 1 MiB body of unclosed "{{ " once took
// seconds, searching to its end for "}}" from every one.
func TestParseIsLinear(t *testing.T) {
	for _, body := range [][]byte{
		append(bytes.Repeat([]byte("{{ "), 1<<20/3), "}}"...),
		append(bytes.Repeat([]byte("{{ a."), 1<<20/5), "}}"...),
		append(bytes.Repeat([]byte("{"), 1<<20), "}}"...),
	} {
		start := processCPU(t)
		tpl, err := Parse(body, Options{})
		if err != nil || len(tpl.Placeholders()) != 0 {
			t.Fatalf("Parse: %v", err)
		}
		// Linear takes a few milliseconds, even under the race detector;
		// the quadratic parser took seconds of CPU without it. CPU time,
		// not wall time: a loaded machine (CI runs the packages side by
		// side) once stretched 0.12 s of parsing to 4.4 s.
		if d := processCPU(t) - start; d > time.Second {
			t.Fatalf("parsing %d bytes took %v of CPU", len(body), d)
		}
	}
}

// processCPU is the CPU time this test process has used so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Beyond the inline storage, up to MaxPlaceholders placeholders are kept in
// order with their names, and one more is refused.
func TestManyPlaceholders(t *testing.T) {
	var body, want strings.Builder
	var names []string
	for i := 1; i <= MaxPlaceholders; i++ {
		name := "CARD_NUMBER_" + strconv.Itoa(i)
		names = append(names, name)
		fmt.Fprintf(&body, "{{ %s }},{{ a.b }}", name)
		fmt.Fprintf(&want, "%d,{{ a.b }}", i)
	}
	tpl, err := Parse([]byte(body.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range tpl.Placeholders() {
		got = append(got, p.Name)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("names %q..., want %q...", got[:min(len(got), 12)], names[:12])
	}
	out, err := tpl.Render(nil, Plain, func(p Placeholder) ([]byte, error) { return strconv.AppendInt(nil, int64(p.Index), 10), nil })
	if err != nil || string(out) != want.String() {
		t.Fatalf("rendered %.80q..., %v", out, err)
	}

	_, err = Parse([]byte(body.String()+"{{CARD_NUMBER_1}}"), Options{})
	var e *Error
	if !errors.As(err, &e) || e.Code != "too_many_placeholders" || e.Message != "more than 1000 placeholders" {
		t.Fatalf("Parse of %d placeholders = %v", MaxPlaceholders+1, err)
	}
}

func TestIndexOpen(t *testing.T) {
	for _, b := range []string{"", "{", "}", "{{", "x{", "x{{", "{x{", "{x{{", "a{b{c{{d", "{ {{", "{{{", "}}{{", `{"a":{"b":"{{ X_1 }}"}}`} {
		if got, want := indexOpen([]byte(b)), bytes.Index([]byte(b), open); got != want {
			t.Errorf("indexOpen(%q) = %d, want %d", b, got, want)
		}
	}
}

func TestIndexes(t *testing.T) {
	tpl, err := Parse([]byte("{{ CARD_NUMBER_1 }} {{ CARD_NUMBER_3 }} {{ CARD_NUMBER_0 }}"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := tpl.CheckIndexes(3); !errors.As(err, &e) || e.Placeholder != "CARD_NUMBER_0" {
		t.Fatalf("index 0 accepted: %v", err)
	}
	tpl, _ = Parse([]byte("{{ CARD_NUMBER_1 }} {{ CARD_NUMBER_3 }}"), Options{})
	if err := tpl.CheckIndexes(2); !errors.As(err, &e) || e.Code != "index_out_of_range" {
		t.Fatalf("index 3 of 2 accepted: %v", err)
	}
	if err := tpl.CheckIndexes(3); err != nil {
		t.Fatal(err)
	}
}

// A hostile value (quotes, angle brackets, ampersands, newlines) must not
// break out of its place in any encoding.
func TestRenderEscapesForTheEncoding(t *testing.T) {
	hostile := []byte("a\"b</x>&c=d\n'e\\f")
	resolve := func(Placeholder) ([]byte, error) { return hostile, nil }

	t.Run("json", func(t *testing.T) {
		tpl, _ := Parse([]byte(`{"n":"{{ CARD_NUMBER_1 }}","ok":true}`), Options{})
		out, err := tpl.Render(nil, JSON, resolve)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			N  string `json:"n"`
			OK bool   `json:"ok"`
		}
		if err := json.Unmarshal(out, &v); err != nil || v.N != string(hostile) || !v.OK {
			t.Fatalf("json broke: %s (%v)", out, err)
		}
	})
	t.Run("xml", func(t *testing.T) {
		tpl, _ := Parse([]byte(`<p><n a="{{ CARD_NUMBER_1 }}">{{ CARD_NUMBER_1 }}</n></p>`), Options{})
		out, err := tpl.Render(nil, XML, resolve)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			N struct {
				A    string `xml:"a,attr"`
				Text string `xml:",chardata"`
			} `xml:"n"`
		}
		if err := xml.Unmarshal(out, &v); err != nil || v.N.Text != string(hostile) {
			t.Fatalf("xml broke: %s (%v)", out, err)
		}
		// XML normalises newlines in attributes to spaces; the text is exact.
		if !strings.HasPrefix(v.N.A, `a"b</x>&c=d`) {
			t.Fatalf("attribute broke: %q", v.N.A)
		}
	})
	t.Run("form", func(t *testing.T) {
		tpl, _ := Parse([]byte(`number={{ CARD_NUMBER_1 }}&amount=10`), Options{})
		out, err := tpl.Render(nil, Form, resolve)
		if err != nil {
			t.Fatal(err)
		}
		q, err := url.ParseQuery(string(out))
		if err != nil || q.Get("number") != string(hostile) || q.Get("amount") != "10" {
			t.Fatalf("form broke: %s (%v)", out, err)
		}
	})
	t.Run("plain", func(t *testing.T) {
		tpl, _ := Parse([]byte(`n={{ CARD_NUMBER_1 }};`), Options{})
		out, _ := tpl.Render(nil, Plain, resolve)
		if string(out) != "n="+string(hostile)+";" {
			t.Fatalf("plain changed the value: %q", out)
		}
	})
}

// JSON escaping copies the safe runs as they are and escapes the rest one
// byte or rune at a time, as it always has.
func TestJSONEscaping(t *testing.T) {
	for v, want := range map[string]string{
		"":                              "",
		"4111111111111111":              "4111111111111111",
		`a"b\c`:                         `a\"b\\c`,
		"<a>&":                          `\u003ca\u003e\u0026`,
		"\n\r\t\x00\x1f\x7f~ ":          `\n\r\t\u0000\u001f` + "\x7f~ ",
		"\u00e9t\u00e9\u2028\U0001F600": "\u00e9t\u00e9\u2028\U0001F600",
		"\xff1\xc2":                     `\ufffd1\ufffd`,
		"x\xe2\x80":                     `x\ufffd\ufffd`,
		"12\xed\xa0\x80":                `12\ufffd\ufffd\ufffd`, // a surrogate is not UTF-8
	} {
		if got := string(appendJSON([]byte("p"), []byte(v))); got != "p"+want {
			t.Errorf("appendJSON(%q) = %q, want %q", v, got[1:], want)
		}
	}
}

// The form escaper is url.QueryEscape, byte for byte, over every byte.
func TestFormEscapingIsQueryEscape(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, v := range [][]byte{all, []byte("4111 1111+1111/1111=="), nil} {
		if got, want := string(appendForm(nil, v)), url.QueryEscape(string(v)); got != want {
			t.Fatalf("appendForm(%q) = %q, want %q", v, got, want)
		}
	}
}

// Rendering into a buffer too small for the result moves it, and clears
// every array it leaves: none keeps a rendered card number.
func TestRenderClearsTheArraysItOutgrows(t *testing.T) {
	body := []byte(strings.Repeat("x", 40) + `{{ CARD_NUMBER_1 }}` + strings.Repeat("y", 40) + `{{ CARD_NUMBER_2 }}` + strings.Repeat("z", 200))
	tpl, err := Parse(body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Room for the first text and card, not the second: the first card
	// number is rendered into dst, and then dst is outgrown.
	dst := make([]byte, 0, 40+maxEscapedLen*16)
	first := dst[:cap(dst)]
	out, err := tpl.Render(dst, JSON, func(p Placeholder) ([]byte, error) {
		return []byte("4111111111111111"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("4111111111111111")) {
		t.Fatal("not rendered")
	}
	if &first[0] == &out[:1][0] {
		t.Fatal("the first array was kept though too small")
	}
	if bytes.ContainsAny(first, "4xy") {
		t.Fatalf("the outgrown array still holds rendered bytes: %q", first)
	}
	// And the property behind it: growClearing clears what it leaves.
	old := append(make([]byte, 0, 4), "4111"...)
	grown := growClearing(old, 100)
	if string(grown) != "4111" || cap(grown) < 104 || string(old) != "\x00\x00\x00\x00" {
		t.Fatalf("grown %q (cap %d), old %q", grown, cap(grown), old)
	}
}

func TestRenderStopsAtTheFirstUnavailableValue(t *testing.T) {
	tpl, _ := Parse([]byte(`{{ CARD_NUMBER_1 }}{{ CARD_CRYPTOGRAM_1 }}`), Options{})
	want := &Error{Placeholder: "CARD_CRYPTOGRAM_1", Code: "value_unavailable", Message: "x"}
	_, err := tpl.Render(nil, Plain, func(p Placeholder) ([]byte, error) {
		if p.Field == Cryptogram {
			return nil, want
		}
		return []byte("1"), nil
	})
	if !errors.Is(err, want) {
		t.Fatalf("Render = %v", err)
	}
}

func TestEncodingFor(t *testing.T) {
	for ct, want := range map[string]Encoding{
		"application/json":                  JSON,
		"application/json; charset=utf-8":   JSON,
		"application/vnd.api+json":          JSON,
		"APPLICATION/JSON":                  JSON,
		"application/xml":                   XML,
		"text/xml; charset=utf-8":           XML,
		"application/soap+xml":              XML,
		"application/x-www-form-urlencoded": Form,
		"text/plain":                        Plain,
		"":                                  Plain,
		"garbage;;;":                        Plain,
		"application/json; charset":         JSON, // a bad parameter does not demote JSON to raw text
		" Application/Problem+JSON ":        JSON,
		"text/XML;":                         XML,
		"application/x-www-form-urlencoded;charset=utf-8": Form,
		"application/jsonp": Plain,
	} {
		if got := EncodingFor(ct); got != want {
			t.Errorf("EncodingFor(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestSecurityCodeOnlyWhenAllowed(t *testing.T) {
	if _, err := Parse([]byte("{{ CARD_SECURITY_CODE_1 }}"), Options{AllowSecurityCode: true}); err != nil {
		t.Fatal(err)
	}
}

// The gift card PIN has its own permission: the security code's does not
// open it, nor the PIN's the security code.
func TestGiftCardPINOnlyWhenAllowed(t *testing.T) {
	for _, tc := range []struct {
		body string
		opts Options
		ok   bool
	}{
		{"{{ GIFT_CARD_PIN_1 }}", Options{AllowGiftCards: true}, true},
		{"{{ GIFT_CARD_PIN_1 }}", Options{AllowSecurityCode: true}, false},
		{"{{ CARD_SECURITY_CODE_1 }}", Options{AllowGiftCards: true}, false},
	} {
		tpl, err := Parse([]byte(tc.body), tc.opts)
		if (err == nil) != tc.ok {
			t.Fatalf("Parse(%s, %+v) = %v, want ok %v", tc.body, tc.opts, err, tc.ok)
		}
		if tc.ok && tpl.Placeholders()[0].Field != GiftCardPIN {
			t.Fatalf("field = %v, want the gift card PIN", tpl.Placeholders()[0].Field)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"n":"{{ CARD_NUMBER_1 }}"}`, "{{CARD_EXPIRATION_DATE_YYYY_2}}", "{{ {{ CARD_NUMBER_1 }} }}",
		"{{", "}}{{", "{{ CARD_NETWORK_TOKEN_EXPIRATION_DATE_MM_OR_EMPTY_STRING_1 }}", "{{ a }}", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tpl, err := Parse(body, Options{})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Rendering every placeholder as "" must remove exactly the
		// placeholders and keep every other byte in order.
		out, err := tpl.Render(nil, Plain, func(Placeholder) ([]byte, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		removed := 0
		for _, p := range tpl.Placeholders() {
			if p.Index < 0 || p.start >= p.end || p.end > len(body) {
				t.Fatalf("bad offsets %+v", p)
			}
			if inner := bytes.TrimSpace(body[p.start+2 : p.end-2]); string(inner) != p.Name {
				t.Fatalf("name %q, the body says %q", p.Name, inner)
			}
			removed += p.end - p.start
		}
		if len(out) != len(body)-removed {
			t.Fatalf("render kept %d bytes, want %d", len(out), len(body)-removed)
		}
		// Every "{{ NAME }}" in the body (the first "}}" after its "{{",
		// the name trimmed) is a placeholder, however it is surrounded.
		found := map[int]bool{}
		for _, p := range tpl.Placeholders() {
			found[p.start] = true
		}
		for s := 0; s+2 <= len(body); s++ {
			if !bytes.HasPrefix(body[s:], open) {
				continue
			}
			k := bytes.Index(body[s+2:], close)
			if k < 0 {
				break
			}
			if identifier(bytes.TrimSpace(body[s+2:s+2+k])) && !found[s] && !insideFound(tpl, s) {
				t.Fatalf("%q at %d was not taken as a placeholder", body[s:s+2+k+2], s)
			}
		}
		// Rendering with the placeholder's own text is the identity.
		same, _ := tpl.Render(nil, Plain, func(p Placeholder) ([]byte, error) { return body[p.start:p.end], nil })
		if string(same) != string(body) {
			t.Fatal("identity render changed the body")
		}
	})
}

// A forward's usual body is parsed and rendered without an allocation: the
// Template stays on the caller's stack (Parse is inlined, and nothing keeps
// the Template), the names are the shared ones of kinds, and the buffer is
// the caller's. (Built without inlining, -gcflags=-l, it allocates.)
func TestParseRenderDoesNotAllocate(t *testing.T) {
	body := substitutetest.ForwardBody()
	val := []byte("4111111111111111")
	resolve := func(Placeholder) ([]byte, error) { return val, nil }
	buf := make([]byte, 0, 2*len(body))
	allocs := testing.AllocsPerRun(100, func() {
		tpl, err := Parse(body, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if buf, err = tpl.Render(buf[:0], JSON, resolve); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Parse and Render", allocs)
	}
	if n := bytes.Count(buf, val); n != 4 {
		t.Fatalf("rendered %d values, want 4: %s", n, buf)
	}
}

// BenchmarkParseRender parses and renders a ~1 KB JSON body the way a
// forward does. "forward" is substitutetest.ForwardBody, the end-to-end benchmark's body: 4 placeholders over 2
// cards, spaces inside the braces, as in the end-to-end profile.
func BenchmarkParseRender(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"forward", substitutetest.ForwardBody()},
		{"card", []byte(`{"source":{"card":{"number":"{{ CARD_NUMBER_1 }}","exp_month":"{{ CARD_EXPIRATION_DATE_MM_1 }}","exp_year":"{{ CARD_EXPIRATION_DATE_YYYY_1 }}"},"backup":{"number":"{{ CARD_NUMBER_2 }}"}},"amount":1299,"currency":"EUR","description":"` + strings.Repeat("x", 800) + `"}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			val := []byte("4111111111111111")
			buf := make([]byte, 0, 2048)
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				tpl, err := Parse(bc.body, Options{})
				if err != nil {
					b.Fatal(err)
				}
				buf, _ = tpl.Render(buf[:0], JSON, func(Placeholder) ([]byte, error) { return val, nil })
			}
		})
	}
}

// insideFound says whether offset s lies within a found placeholder.
func insideFound(tpl *Template, s int) bool {
	for _, p := range tpl.Placeholders() {
		if p.start <= s && s < p.end {
			return true
		}
	}
	return false
}

// The spaces around a name are those bytes.TrimSpace trims, Unicode ones
// included; anything else between the braces makes them text.
func TestSpacesAroundTheName(t *testing.T) {
	cases := []struct {
		body  string
		found int    // placeholders
		code  string // or the error
	}{
		{"{{CARD_NUMBER_1}}", 1, ""},
		{"{{ \t\n\v\f\rCARD_NUMBER_1 \t\n\v\f\r}}", 1, ""},
		{"{{\u00a0CARD_NUMBER_1\u0085}}", 1, ""},
		{"{{\u2003CARD_NUMBER_1\u3000\u2029}}", 1, ""},
		{"{{\xa0CARD_NUMBER_1}}", 0, ""},                                            // a broken rune is not a space
		{"{{CARD_NUMBER_1\xc2}}", 0, ""},                                            // nor a truncated one
		{"{{\u200bCARD_NUMBER_1}}", 0, ""},                                          // a zero-width space is not a space
		{"{{CARD_NUMBER_1\u00e9}}", 0, ""},                                          // nor a letter outside [A-Za-z0-9_]
		{"{{ CARD_NUMBER_1 }", 0, ""},                                               // one brace does not close
		{"{{ CARD_NUMBER_1 } }", 0, ""},                                             // nor two apart
		{"{{ CARD_NUMBER_1", 0, ""},                                                 // nor the end of the body
		{"{{ CARD_NUMBER_1 {{ }}", 0, ""},                                           // nor another opening
		{"{{ " + strings.Repeat("A", 127) + "_1 }}", 0, ""},                         // 129 bytes: too long for a name
		{"{{ CARD_" + strings.Repeat("A", 118) + "_1 }}", 0, "unknown_placeholder"}, // 128 bytes: a name, unknown
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			tpl, err := Parse([]byte(tc.body), Options{})
			var e *Error
			switch {
			case tc.code != "":
				if !errors.As(err, &e) || e.Code != tc.code {
					t.Fatalf("Parse = %v, want %s", err, tc.code)
				}
			case err != nil:
				t.Fatal(err)
			case len(tpl.Placeholders()) != tc.found:
				t.Fatalf("found %d placeholders, want %d", len(tpl.Placeholders()), tc.found)
			}
		})
	}
}

// identifier is the grammar's test of what lies between the braces,
// trimmed: FuzzParse holds the one-pass placeholderAt to it.
func identifier(b []byte) bool {
	if len(b) == 0 || len(b) > maxNameLen {
		return false
	}
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
