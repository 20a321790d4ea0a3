package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

var jsonStringCases = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>",
	"\x00\x01\x1f\x7f\b\f\n\r\t", "héllo wörld ✓ 𝄞", "bad \xff utf-8 \xc3", "\u2028 line \u2029 para",
	"emoji 😀 and \xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond U+10FFFF",
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringCases {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendTimestampMatchesFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	times := []time.Time{
		{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 3, 4, 5, 6, 7000, time.FixedZone("x", -5*3600)),
	}
	for range 10000 {
		zone := time.FixedZone("y", r.IntN(28*3600)-14*3600)
		times = append(times,
			time.Unix(r.Int64N(400e9)-100e9, r.Int64N(1e9)).In(zone),   // years about -1200 to 11500
			time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(zone),           // 1970 to 2096
			time.Unix(-62135596800+r.Int64N(3e6)-1.5e6, r.Int64N(1e9)), // around year 1
		)
	}
	for _, tm := range times {
		if got, want := timestamp(tm), tm.UTC().Format(timestampLayout); got != want {
			t.Fatalf("timestamp(%v) = %s, want %s", tm, got, want)
		}
	}
}

// The list page written by hand is what encoding/json writes for the
// reference types.
func TestAppendBuyerPageMatchesEncodingJSON(t *testing.T) {
	name, ext, odd := "Ann <Buyer> & Co", "ext-1", "bad \xff \u2028"
	now := time.Date(2026, 11, 22, 7, 30, 0, 123456789, time.FixedZone("z", 3600))
	next, prev := "bmV4dA", "cHJldg"
	for _, env := range []pagination.Envelope[coreapi.Buyer]{
		{Items: []coreapi.Buyer{}, Limit: 20},
		{Items: []coreapi.Buyer{
			{ID: "6f1c2a8e-0000-4000-8000-000000000001", DisplayName: &name, ExternalIdentifier: &ext, CreatedAt: now, UpdatedAt: now.Add(time.Hour)},
			{ID: "6f1c2a8e-0000-4000-8000-000000000002", DisplayName: &odd, CreatedAt: now.Add(-time.Second), UpdatedAt: now},
		}, Limit: 2, NextCursor: &next, PreviousCursor: &prev},
		{Items: []coreapi.Buyer{{ID: "x", ExternalIdentifier: &odd}}, Limit: 100, PreviousCursor: &prev},
	} {
		ref := pagination.Envelope[buyerSummaryJSON]{Items: []buyerSummaryJSON{}, Limit: env.Limit, NextCursor: env.NextCursor, PreviousCursor: env.PreviousCursor}
		for _, b := range env.Items {
			ref.Items = append(ref.Items, buyerSummaryJSON{
				Type: "buyer", ID: b.ID, DisplayName: b.DisplayName, ExternalIdentifier: b.ExternalIdentifier,
				CreatedAt: b.CreatedAt.UTC().Format(timestampLayout), UpdatedAt: b.UpdatedAt.UTC().Format(timestampLayout),
			})
		}
		want, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendBuyerPage(nil, env); !bytes.Equal(got, want) {
			t.Errorf("appendBuyerPage =\n%s\nwant\n%s", got, want)
		}

		rec := httptest.NewRecorder()
		if err := writeAppendedJSON(rec, 200, func(b []byte) []byte { return appendBuyerPage(b, env) }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.Body.Bytes(), want) || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Content-Length") != itoa(len(want)) {
			t.Errorf("writeAppendedJSON wrote %v %s", rec.Header(), rec.Body.Bytes())
		}
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func BenchmarkTimestamp(b *testing.B) {
	tm := time.Date(2026, 11, 22, 7, 30, 0, 123456789, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		var a [32]byte
		_ = appendTimestamp(a[:0], tm)
	}
}

func BenchmarkTimestampFormat(b *testing.B) {
	tm := time.Date(2026, 11, 22, 7, 30, 0, 123456789, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		var a [32]byte
		_ = tm.UTC().AppendFormat(a[:0], timestampLayout)
	}
}
