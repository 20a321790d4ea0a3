package postgres

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
)

// FuzzAppendCopyRows: whatever a batch holds, appendCopyRows does not
// panic, and what it accepts is a well-formed binary COPY stream of one
// tuple of copyRowFields fields per record it counted, which
// linkCopyRows chains.
func FuzzAppendCopyRows(f *testing.F) {
	good, err := auditspool.EncodeBatch(0,
		vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a\tb", MerchantAccountID: "m", Action: "forward",
			Tokens: []uuid.UUID{uuid.New(), uuid.New()}, Purpose: "p", Outcome: "success", RequestID: "r",
			Detail: map[string]any{"host": "h", "status": 200}},
		vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.Records)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"at":"2026-11-24T01:02:03Z","tokens":[]}]`))
	f.Add([]byte(`[{"at":"2026-11-24T01:02:03.999999999+14:00","tokens":null,"detail":[1,{"a":"\u00e9"}]}]`))
	f.Add([]byte(`[{"at":"x"},{"tokens":{}}]`))
	f.Fuzz(func(t *testing.T, records []byte) {
		out, n, err := appendCopyRows(nil, records)
		if err != nil {
			return
		}
		if !strings.HasPrefix(string(out), copyBinaryHeader) {
			t.Fatalf("no header: %q", out)
		}
		b := out[len(copyBinaryHeader):]
		take := func(n int, what string) []byte {
			if n < 0 || n > len(b) {
				t.Fatalf("%s: %d bytes wanted, %d left", what, n, len(b))
			}
			v := b[:n]
			b = b[n:]
			return v
		}
		tuples := 0
		for {
			fields := int16(binary.BigEndian.Uint16(take(2, "field count")))
			if fields == -1 {
				break
			}
			if fields != int16(copyRowFields) {
				t.Fatalf("tuple %d has %d fields", tuples, fields)
			}
			for range fields {
				if l := int32(binary.BigEndian.Uint32(take(4, "field length"))); l != -1 {
					take(int(l), "field")
				}
			}
			tuples++
		}
		if len(b) != 0 || tuples != n {
			t.Fatalf("%d tuples, %d counted, %d bytes after the trailer", tuples, n, len(b))
		}
		if n > 0 {
			linkCopyRows(out, [32]byte{})
		}
	})
}

// canonicalCases are records, each as a batch of one, that the canonical
// scanner reads (canonical) or leaves to gjson: what auditspool writes,
// with every kind of value and escape, and what an older or edited spool
// may hold.
func canonicalCases(tb testing.TB) []struct {
	name      string
	records   string
	canonical bool
} {
	tb.Helper()
	tok := uuid.MustParse("0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e")
	nasty := "a\\b\tc\nd\re \"q\" \\N \\. é \u2028 <&> \x01 \x00 \xff /"
	spooled := func(e vaultproxy.AuditEvent) string {
		b, err := auditspool.EncodeBatch(0, e)
		if err != nil {
			tb.Fatal(err)
		}
		return string(b.Records)
	}
	// rec is a record of the given members, between the ones every record has.
	rec := func(at, middle, end string) string {
		return `[{"at":"` + at + `","actor":"a","merchant_account_id":"m","action":"forward"` + middle + `,"outcome":"success"` + end + `}]`
	}
	const at = "2026-11-24T01:02:03.456789Z"
	const tokens = `,"tokens":["0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e"]`
	return []struct {
		name      string
		records   string
		canonical bool
	}{
		{"a forward's", spooled(vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "api_key:" + tok.String(), MerchantAccountID: "default",
			Action: "forward", Tokens: []uuid.UUID{tok, uuid.New()}, Purpose: "vault-forward", Outcome: "success", RequestID: uuid.NewString(),
			Detail: map[string]any{"placeholders": []string{"CARD_NUMBER_1"}, "host": "h:1", "method": "POST", "duration_ms": 3, "status": 200}}), true},
		{"escapes everywhere", spooled(vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: nasty, MerchantAccountID: nasty, Action: nasty,
			Purpose: nasty, Outcome: nasty, RequestID: nasty, Detail: map[string]any{nasty: nasty, "n": map[string]any{"(": "[{"}}}), true},
		{"no optional members", spooled(vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"}), true},
		{"empty strings", rec(at, `,"purpose":""`, `,"request_id":""`), true},
		{"no members", `[{}]`, true},
		{"required members missing", `[{"actor":"a","outcome":"success"}]`, true},
		{"raw invalid UTF-8", rec(at, `,"purpose":"p`+"\xff\xe2\x82"+`q"`, ""), true},
		{"raw invalid UTF-8 and escapes", rec(at, `,"purpose":"\n`+"\xff"+`\u0000"`, ""), true},
		{"every escape", rec(at, `,"purpose":"\"\\\/\b\f\n\r\t\u00e9\u00E9\u2028\u0000\ufffd"`, ""), true},
		{"a surrogate pair", rec(at, `,"purpose":"\ud83d\ude00"`, ""), false},
		{"a lone surrogate", rec(at, `,"purpose":"\ud83d"`, ""), false},
		{"a bad \\u escape", rec(at, `,"purpose":"\u00zz"`, ""), false},
		{"a short \\u escape", rec(at, `,"purpose":"\u00"`, ""), false},
		{"an unknown escape", rec(at, `,"purpose":"\x"`, ""), false},
		{"a raw control character", rec(at, `,"purpose":"a`+"\t"+`b"`, ""), false},
		{"a raw control character after an escape", rec(at, `,"purpose":"\na`+"\t"+`b"`, ""), false},
		{"null text", rec(at, `,"purpose":null`, ""), false},
		{"null required text", `[{"at":"` + at + `","actor":null,"merchant_account_id":"m","action":"forward","outcome":"success"}]`, false},
		{"text that is a number", `[{"at":"` + at + `","actor":7,"merchant_account_id":"m","action":"forward","outcome":"success"}]`, false},
		{"year 1", rec("0001-01-01T00:00:00.000001Z", "", ""), true},
		{"year 0", rec("0000-01-01T00:00:00Z", "", ""), true},
		{"year 9999", rec("9999-12-31T23:59:59.999999Z", "", ""), true},
		{"year 9999 rounded into 10000", rec("9999-12-31T23:59:59.9999995Z", "", ""), true},
		{"half a microsecond", rec("2026-11-24T01:02:03.0000005Z", "", ""), true},
		{"under half a microsecond", rec("2026-11-24T01:02:03.000000499Z", "", ""), true},
		{"a fraction with trailing zeros", rec("2026-11-24T01:02:03.100Z", "", ""), true},
		{"ten digits of fraction", rec("2026-11-24T01:02:03.1234567891Z", "", ""), false},
		{"an empty fraction", rec("2026-11-24T01:02:03.Z", "", ""), false},
		{"a leap day", rec("2024-02-29T00:00:00Z", "", ""), true},
		{"a leap day of 2000", rec("2000-02-29T00:00:00Z", "", ""), true},
		{"no leap day in 1900", rec("1900-02-29T00:00:00Z", "", ""), false},
		{"April 31", rec("2026-04-31T00:00:00Z", "", ""), false},
		{"month 13", rec("2026-13-01T00:00:00Z", "", ""), false},
		{"hour 24", rec("2026-11-24T24:00:00Z", "", ""), false},
		{"second 60", rec("2026-11-24T23:59:60Z", "", ""), false},
		{"an offset", rec("2026-11-24T01:02:03+01:00", "", ""), false},
		{"lower case", rec("2026-11-24t01:02:03z", "", ""), false},
		{"a date only", rec("2026-11-24", "", ""), false},
		{"a time that is a number", `[{"at":1764000000,"actor":"a"}]`, false},
		{"null time", `[{"at":null,"actor":"a"}]`, false},
		{"no tokens", rec(at, `,"tokens":[]`, ""), true},
		{"upper case tokens", rec(at, `,"tokens":["0192F1C4-7A3E-7D2B-9C1F-4E5A6B7C8D9E"]`, ""), true},
		{"tokens without dashes", rec(at, `,"tokens":["0192f1c47a3e7d2b9c1f4e5a6b7c8d9e"]`, ""), false},
		{"tokens as URNs", rec(at, `,"tokens":["urn:uuid:0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e"]`, ""), false},
		{"a token with an escape", rec(at, `,"tokens":["\u0030192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e"]`, ""), false},
		{"a token that is not a UUID", rec(at, `,"tokens":["0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9x"]`, ""), false},
		{"a token that is a number", rec(at, `,"tokens":[7]`, ""), false},
		{"tokens that are a string", rec(at, `,"tokens":"x"`, ""), false},
		{"null tokens", rec(at, `,"tokens":null`, ""), false},
		{"an empty detail", rec(at, "", `,"detail":{}`), true},
		{"a nested detail", rec(at, tokens, `,"detail":{"a":[1,{"b":"}]\"\\"}],"c":{"d":null}}`), true},
		{"parentheses in a detail", rec(at, "", `,"detail":{"a":1)}`), false},
		{"a detail with mismatched brackets", rec(at, "", `,"detail":{"a":{1]}`), true},
		{"an unterminated detail", `[{"at":"` + at + `","detail":{"a":"}`, false},
		{"a detail that is an array", rec(at, "", `,"detail":[1]`), false},
		{"null detail", rec(at, "", `,"detail":null`), false},
		{"reordered members", `[{"actor":"a","at":"` + at + `","merchant_account_id":"m","action":"forward","outcome":"success"}]`, false},
		{"a repeated member", rec(at, `,"purpose":"p","purpose":"q"`, ""), false},
		{"an unknown member", rec(at, `,"extra":{"a":1}`, ""), false},
		{"an unknown member at the end", rec(at, "", `,"extra":1`), false},
		{"a member name with an escape", `[{"\u0061t":"` + at + `"}]`, false},
		{"space", `[ {"at":"` + at + `", "actor":"a"} ]`, false},
		{"no batch", ``, false},
		{"not an array", `{"at":"` + at + `"}`, false},
		{"no records", `[]`, true},
		{"no records, then more", `[]x`, false},
		{"not a record", `[1]`, false},
		{"a record, then more", rec(at, "", "") + ` `, false},
		{"a trailing comma", strings.TrimSuffix(rec(at, "", ""), "]") + `,]`, false},
		{"unterminated", strings.TrimSuffix(rec(at, "", ""), "]"), false},
		{"records around others", strings.TrimSuffix(rec(at, "", ""), "]") + `,1,{"purpose":null},` + strings.TrimPrefix(rec(at, tokens, ""), "["), false},
	}
}

// The canonical scanner writes what parsing each record with gjson
// writes, and takes the records it is meant for.
func TestCanonicalRowsMatchParsed(t *testing.T) {
	for _, tc := range canonicalCases(t) {
		checkCanonicalRows(t, tc.name, []byte(tc.records))
		if _, _, done := appendCanonicalRows(nil, tc.records); done != tc.canonical {
			t.Errorf("%s: read whole by the scanner: %t, want %t", tc.name, done, tc.canonical)
		}
	}
	// Batches of several, in and out of canonical form.
	cases := canonicalCases(t)
	for i, a := range cases {
		b := cases[(i*7+3)%len(cases)]
		if !strings.HasPrefix(a.records, "[{") || !strings.HasPrefix(b.records, "[{") {
			continue
		}
		both := strings.TrimSuffix(a.records, "]") + "," + b.records[1:]
		checkCanonicalRows(t, a.name+", then "+b.name, []byte(both))
	}
}

// FuzzCanonicalRowsMatchParsed: for any batch, appendCopyRows writes and
// answers what parsing every record with gjson does.
func FuzzCanonicalRowsMatchParsed(f *testing.F) {
	for _, tc := range canonicalCases(f) {
		f.Add([]byte(tc.records))
	}
	f.Fuzz(func(t *testing.T, records []byte) {
		checkCanonicalRows(t, "", records)
	})
}

func checkCanonicalRows(t *testing.T, name string, records []byte) {
	t.Helper()
	got, gotN, gotErr := appendCopyRowsVia([]byte("x"), records, true)
	want, wantN, wantErr := appendCopyRowsVia([]byte("x"), records, false)
	if string(got) != string(want) || gotN != wantN || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("%s: %q\nscanned %d, %v: %q\nparsed  %d, %v: %q", name, records, gotN, gotErr, got, wantN, wantErr, want)
	}
}
