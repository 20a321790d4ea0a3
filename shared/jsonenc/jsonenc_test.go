package jsonenc

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// Every byte value at every place of strings of every length around the
// blocks plainString reads (four and eight bytes, overlapping at the end)
// is judged as the table judges it, and written as encoding/json writes
// it.
func TestAppendStringEveryByteEverywhere(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for at := 0; at < n; at++ {
			for c := range 256 {
				s := []byte(strings.Repeat("a", n))
				s[at] = byte(c)
				if got := plainString(string(s)); got != plain[c] {
					t.Fatalf("plainString(%q) = %v, want %v", s, got, plain[c])
				}
				want, _ := json.Marshal(string(s))
				if got := AppendString(nil, string(s)); string(got) != string(want) {
					t.Fatalf("AppendString(%q) = %s, encoding/json = %s", s, got, want)
				}
			}
		}
	}
}

// plainWord is the plain table for eight bytes at once: every byte value
// in every place, and random words whose bytes are drawn mostly from near
// the table's edges.
func TestPlainWord(t *testing.T) {
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			want = want && plain[c]
		}
		if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("plainWord(% x) = %v, want %v", w, got, want)
		}
	}
	for at := range 8 {
		for c := range 256 {
			w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
			w[at] = byte(c)
			check(w)
		}
	}
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x25, 0x26, 0x27, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,
		0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0xa2, 0xbc, 0xdc, 0xfe, 0xff, 'a', 'Z', '0'}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		var w [8]byte
		for i := range w {
			if r.IntN(4) == 0 {
				w[i] = byte(r.IntN(256))
			} else {
				w[i] = edges[r.IntN(len(edges))]
			}
		}
		check(w)
	}
}

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
	benchAppendStrings(b, strs)
}

// BenchmarkAppendStringPage writes the strings of a page of 20 buyers in
// core-api's list: an id, a name and an external identifier each.
func BenchmarkAppendStringPage(b *testing.B) {
	var strs []string
	for i := range 20 {
		n := string(rune('0' + i%10))
		strs = append(strs, "0192f3a4-5b6c-7d8e-9f00-00000000000"+n, "Buyer "+n, "seed-"+n)
	}
	benchAppendStrings(b, strs)
}

// benchAppendStrings appends strs, one after the other, to one buffer.
func benchAppendStrings(b *testing.B, strs []string) {
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for _, s := range strs {
			buf = AppendString(buf, s)
		}
	}
}
