package pagination

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/apierror"
)

func codec(t testing.TB, fill byte) *Codec {
	t.Helper()
	c, err := NewCodec("core-api", bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewCodecRefusesShortKeys(t *testing.T) {
	if _, err := NewCodec("core-api", make([]byte, 31)); err == nil {
		t.Fatal("31-byte key accepted")
	}
}

func TestRoundTrip(t *testing.T) {
	c := codec(t, 1)
	tm := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	keys := []Key{
		{Time: tm, ID: "7f0c1a8e-8d2b-4a43-9c55-2b6a0f4e1d11"},
		{ID: "12345"}, // monotonic key, no time
		{Time: time.UnixMicro(-1).UTC(), ID: ""},
	}
	for _, k := range keys {
		for _, d := range []Direction{Next, Previous} {
			s := c.encode(d, k, "buyers", Binding("default", ""))
			gd, gk, ok := c.decode(s, "buyers", Binding("default", ""))
			if !ok || gd != d || gk.ID != k.ID || !gk.Time.Equal(k.Time) {
				t.Fatalf("round trip %v %v: got %v %v %v", d, k, gd, gk, ok)
			}
		}
	}
}

// A cursor's bytes are its format (package comment), pinned: cursors a
// client holds keep working whatever computes them.
func TestCursorBytes(t *testing.T) {
	c := codec(t, 1)
	tm := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for _, tc := range []struct {
		d          Direction
		k          Key
		list, bind string
		want       string
	}{
		{Next, Key{Time: tm, ID: "7f0c1a8e-8d2b-4a43-9c55-2b6a0f4e1d11"}, "buyers", Binding("default", "", ""), "AQIABhfDu1NKgDdmMGMxYThlLThkMmItNGE0My05YzU1LTJiNmEwZjRlMWQxMVJh1uEPL_5FpX_cp16HM-4"},
		{Previous, Key{Time: tm, ID: "7f0c1a8e-8d2b-4a43-9c55-2b6a0f4e1d11"}, "buyers", Binding("default", "q", ""), "AQMABhfDu1NKgDdmMGMxYThlLThkMmItNGE0My05YzU1LTJiNmEwZjRlMWQxMXAwRSzOpJx4SdCIvW_rhIs"},
		{Next, Key{ID: "12345"}, "vault-forward-configs", Binding("m1"), "AQAAAAAAAAAAADEyMzQ1g3wAGvTU6qJgliHsK4dYUA"},
		{Previous, Key{Time: time.UnixMicro(-1).UTC()}, "l", "", "AQP__________1e6wefQWOQDV1xO0Hc6SUs"},
	} {
		got := c.encode(tc.d, tc.k, tc.list, tc.bind)
		if got != tc.want {
			t.Errorf("encode(%v, %+v, %q, %q) = %q, want %q", tc.d, tc.k, tc.list, tc.bind, got, tc.want)
		}
		if d, k, ok := c.decode(tc.want, tc.list, tc.bind); !ok || d != tc.d || k.ID != tc.k.ID || !k.Time.Equal(tc.k.Time) {
			t.Errorf("decode(%q) = %v %+v %v", tc.want, d, k, ok)
		}
	}
}

// Every list page makes a cursor or two, and a page reached through one
// checks it: the MAC is computed with the key's HMAC state made once, in
// scratch space kept for reuse, so a cursor costs one allocation, its
// string.
func TestCursorAllocations(t *testing.T) {
	c := codec(t, 1)
	k := Key{Time: time.Unix(1, 0), ID: "7f0c1a8e-8d2b-4a43-9c55-2b6a0f4e1d11"}
	bind := Binding("default", "", "")
	s := c.encode(Next, k, "buyers", bind)
	// Averaged over many runs: under the race detector sync.Pool drops
	// some of what it is given back, which raceAllocs allows for.
	if n := testing.AllocsPerRun(1000, func() { _ = c.encode(Next, k, "buyers", bind) }); n > 1+raceAllocs {
		t.Errorf("encode: %v allocations, want 1", n)
	}
	// decode: the decoded bytes and the boundary id.
	if n := testing.AllocsPerRun(1000, func() { _, _, _ = c.decode(s, "buyers", bind) }); n > 2+raceAllocs {
		t.Errorf("decode: %v allocations, want at most 2", n)
	}
}

// One codec serves every request at once (go test -race).
func TestCodecConcurrentUse(t *testing.T) {
	c := codec(t, 1)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := Key{Time: time.UnixMicro(int64(g*1000 + i)).UTC(), ID: strconv.Itoa(i)}
				bind := Binding("m", strconv.Itoa(g))
				d, got, ok := c.decode(c.encode(Previous, k, "buyers", bind), "buyers", bind)
				if !ok || d != Previous || got != k {
					t.Errorf("round trip of %+v: %v %+v %v", k, d, got, ok)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestParseRequest(t *testing.T) {
	c := codec(t, 1)
	good := c.encode(Previous, Key{Time: time.Unix(1, 0), ID: "a"}, "buyers", Binding("m1", "x"))
	flipped := []byte(good)
	if flipped[3] == 'A' {
		flipped[3] = 'B'
	} else {
		flipped[3] = 'A'
	}
	lastFlipped := []byte(good)
	lastFlipped[len(lastFlipped)-1] ^= 1

	tests := []struct {
		name      string
		query     string
		wantLimit int
		wantDir   Direction
		pointer   string // "" means success
	}{
		{"defaults", "", 20, Next, ""},
		{"limit 1", "limit=1", 1, Next, ""},
		{"limit 100", "limit=100", 100, Next, ""},
		{"limit 0", "limit=0", 0, Next, "limit"},
		{"limit 101", "limit=101", 0, Next, "limit"},
		{"limit -1", "limit=-1", 0, Next, "limit"},
		{"limit abc", "limit=abc", 0, Next, "limit"},
		{"limit empty", "limit=", 0, Next, "limit"},
		{"limit twice", "limit=5&limit=6", 0, Next, "limit"},
		{"empty cursor is the first page", "cursor=", 20, Next, ""},
		{"good cursor", "cursor=" + good, 20, Previous, ""},
		{"flipped char", "cursor=" + string(flipped), 0, Next, "cursor"},
		{"flipped last char", "cursor=" + string(lastFlipped), 0, Next, "cursor"},
		{"truncated", "cursor=" + good[:len(good)-2], 0, Next, "cursor"},
		{"garbage", "cursor=%%%", 0, Next, "cursor"},
		{"too long", "cursor=" + strings.Repeat("A", 600), 0, Next, "cursor"},
		{"two cursors", "cursor=" + good + "&cursor=" + good, 0, Next, "cursor"},
		// base64's decoders skip \r and \n: without a check of its own, a
		// cursor would have endless spellings (found by make soak).
		{"good cursor with a CR inside", "cursor=" + good[:5] + "%0D" + good[5:], 0, Next, "cursor"},
		{"good cursor with an LF at the end", "cursor=" + good + "%0A", 0, Next, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			if tt.name == "garbage" {
				q = url.Values{"cursor": {"%%%"}}
			}
			p, err := c.ParseRequest(q, "buyers", Binding("m1", "x"))
			if tt.pointer == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.Limit != tt.wantLimit || p.Direction != tt.wantDir {
					t.Fatalf("got %+v", p)
				}
				return
			}
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != 400 || len(e.Details) != 1 ||
				e.Details[0].Pointer != tt.pointer || e.Details[0].Location != "query" {
				t.Fatalf("err = %v (%+v)", err, e)
			}
		})
	}
}

func TestCursorIsBoundToListBindingAndKey(t *testing.T) {
	c := codec(t, 1)
	s := c.encode(Next, Key{Time: time.Unix(5, 0), ID: "id"}, "buyers", Binding("m1", ""))
	otherService, err := NewCodec("vault-proxy", bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		c     *Codec
		list  string
		bind  string
		valid bool
	}{
		{"same", c, "buyers", Binding("m1", ""), true},
		{"other merchant", c, "buyers", Binding("m2", ""), false},
		{"other filter", c, "buyers", Binding("m1", "q"), false},
		{"other list", c, "merchant-accounts", Binding("m1", ""), false},
		{"other key", codec(t, 2), "buyers", Binding("m1", ""), false},
		{"other service, same key", otherService, "buyers", Binding("m1", ""), false},
		// length prefixes keep part boundaries apart
		{"shifted parts", c, "buyers", Binding("m", "1"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.ParseRequest(url.Values{"cursor": {s}}, tc.list, tc.bind)
			if (err == nil) != tc.valid {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

type row struct {
	t  time.Time
	id string
}

func keyOf(r row) Key { return Key{Time: r.t, ID: r.id} }

func TestBuild(t *testing.T) {
	c := codec(t, 1)
	base := time.Unix(1000, 0).UTC()
	rows := make([]row, 5) // newest first
	for i := range rows {
		rows[i] = row{base.Add(-time.Duration(i) * time.Second), string(rune('a' + i))}
	}
	parse := func(cursor string, limit string) Page {
		t.Helper()
		q := url.Values{"limit": {limit}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		p, err := c.ParseRequest(q, "l", "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	first := Build(parse("", "2"), rows[:3], keyOf)
	if len(first.Items) != 2 || first.PreviousCursor != nil || first.NextCursor == nil {
		t.Fatalf("first page %+v", first)
	}
	p2 := parse(*first.NextCursor, "2")
	if p2.Direction != Next || p2.Boundary.ID != "b" {
		t.Fatalf("next page %+v", p2)
	}
	where, order, args := p2.Keyset("created_at", "id", 2)
	if where != "(created_at, id) < ($2, $3)" || order != "created_at DESC, id DESC" || len(args) != 2 {
		t.Fatalf("keyset %q %q %v", where, order, args)
	}
	last := Build(p2, rows[2:5], keyOf) // exactly limit+1? no: 3 rows > 2, more
	if last.NextCursor == nil || last.PreviousCursor == nil {
		t.Fatalf("middle page %+v", last)
	}
	end := Build(parse(*last.NextCursor, "2"), rows[4:5], keyOf)
	if end.NextCursor != nil || end.PreviousCursor == nil || len(end.Items) != 1 {
		t.Fatalf("last page %+v", end)
	}

	// Backward from the last page: the store returns ascending rows.
	back := parse(*end.PreviousCursor, "2")
	where, order, _ = back.Keyset("created_at", "id", 2)
	if back.Direction != Previous || where != "(created_at, id) > ($2, $3)" || order != "created_at ASC, id ASC" {
		t.Fatalf("backward keyset %+v %q %q", back, where, order)
	}
	asc := []row{rows[3], rows[2], rows[1]}
	prev := Build(back, asc, keyOf)
	if len(prev.Items) != 2 || prev.Items[0].id != "c" || prev.Items[1].id != "d" || prev.PreviousCursor == nil || prev.NextCursor == nil {
		t.Fatalf("backward page %+v", prev)
	}
	start := Build(parse(*prev.PreviousCursor, "2"), []row{rows[1], rows[0]}, keyOf)
	if len(start.Items) != 2 || start.Items[0].id != "a" || start.PreviousCursor != nil || start.NextCursor == nil {
		t.Fatalf("start page %+v", start)
	}

	empty := Build(parse("", "2"), []row(nil), keyOf)
	b, _ := json.Marshal(empty)
	if string(b) != `{"items":[],"limit":2,"next_cursor":null,"previous_cursor":null}` {
		t.Fatalf("empty envelope %s", b)
	}
}

// Build takes the store's rows over: a page's items are the rows it was
// given, not a copy of them (a page of 20 buyers is 2 KiB copied through
// the GC's write barriers), so that what it allocates is its cursors.
func TestBuildTakesRowsOver(t *testing.T) {
	c := codec(t, 1)
	page, err := c.ParseRequest(url.Values{"limit": {"2"}}, "l", "")
	if err != nil {
		t.Fatal(err)
	}
	rows := []row{{time.Unix(3, 0), "c"}, {time.Unix(2, 0), "b"}, {time.Unix(1, 0), "a"}}
	env := Build(page, rows, keyOf)
	if len(env.Items) != 2 || &env.Items[0] != &rows[0] || env.NextCursor == nil {
		t.Fatalf("items %v at %p, rows at %p", env.Items, env.Items, rows)
	}
	// The next cursor: its string and the pointer to it.
	if n := testing.AllocsPerRun(1000, func() { env = Build(page, rows, keyOf) }); n > 2+raceAllocs {
		t.Errorf("Build: %v allocations, want 2", n)
	}
}

func TestKeysetID(t *testing.T) {
	boundary := &Key{ID: "42"}
	cases := []struct {
		name        string
		page        Page
		newestFirst bool
		where       string
		order       string
		args        int
	}{
		{"first page, newest first", Page{Direction: Next}, true, "", "id DESC", 0},
		{"first page, oldest first", Page{Direction: Next}, false, "", "id ASC", 0},
		{"next, newest first", Page{Direction: Next, Boundary: boundary}, true, "id < $2", "id DESC", 1},
		{"previous, newest first", Page{Direction: Previous, Boundary: boundary}, true, "id > $2", "id ASC", 1},
		{"next, oldest first", Page{Direction: Next, Boundary: boundary}, false, "id > $2", "id ASC", 1},
		{"previous, oldest first", Page{Direction: Previous, Boundary: boundary}, false, "id < $2", "id DESC", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			where, order, args := tc.page.KeysetID("id", 2, tc.newestFirst)
			if where != tc.where || order != tc.order || len(args) != tc.args {
				t.Fatalf("KeysetID = %q %q %v", where, order, args)
			}
			if tc.args == 1 && args[0] != "42" {
				t.Fatalf("args = %v", args)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	c := codec(f, 1)
	f.Add(c.encode(Next, Key{Time: time.Unix(1, 0), ID: "x"}, "l", ""))
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		d, k, ok := c.decode(s, "l", "")
		if !ok {
			return
		}
		// Anything accepted re-encodes to itself.
		if got := c.encode(d, k, "l", ""); got != s {
			t.Fatalf("accepted %q re-encodes as %q", s, got)
		}
	})
}

// A first page's cursor, and the check of one on the next page.
func BenchmarkCursor(b *testing.B) {
	c := codec(b, 1)
	k := Key{Time: time.Unix(1, 0), ID: "7f0c1a8e-8d2b-4a43-9c55-2b6a0f4e1d11"}
	bind := Binding("default", "", "")
	s := c.encode(Next, k, "buyers", bind)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.encode(Next, k, "buyers", bind)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = c.decode(s, "buyers", bind)
		}
	})
}

// A page of 20 buyer-sized rows, as core-api's list builds it.
func BenchmarkBuild(b *testing.B) {
	type buyer struct {
		id      string
		created time.Time
		// A buyer row's other columns, for its size alone.
		_ string     // merchant account
		_ [4]*string // display name, external identifier, account number, billing details
		_ time.Time  // updated_at
	}
	c := codec(b, 1)
	page, err := c.ParseRequest(url.Values{"limit": {"20"}}, "buyers", Binding("default", "", ""))
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]buyer, 21)
	for i := range rows {
		rows[i] = buyer{id: "7f0c1a8e-8d2b-4a43-9c55-2b6a0f4e1d" + strconv.Itoa(10+i), created: time.Unix(int64(100-i), 0)}
	}
	key := func(r buyer) Key { return Key{Time: r.created, ID: r.id} }
	b.ReportAllocs()
	for b.Loop() {
		_ = Build(page, rows, key)
	}
}
