package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/payorch/shared/jsonenc"
)

// Hand-written JSON for the hottest responses (list pages): appending to a
// pooled buffer skips encoding/json's reflection and the intermediate
// structs (BENCHMARKS.md, "Core API"). The output is byte-identical to
// json.Marshal of the corresponding struct (jsonappend_test.go checks it),
// so clients cannot tell which encoder wrote a response.

// appendJSONString appends s as encoding/json would (see shared/jsonenc).
func appendJSONString(b []byte, s string) []byte { return jsonenc.AppendString(b, s) }

// appendJSONStringPtr appends *s, or null for nil.
func appendJSONStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendTimestamp appends t in timestampLayout, as t.UTC().Format would,
// without parsing the layout: the civil date comes from the Unix day
// number (H. Hinnant's days_from_civil inverse), and the digits two at a
// time from a table into one fixed-size array. A page of 20 buyers has
// 40 timestamps: a loop dividing by ten for every digit took a third of
// the list handler's instructions.
func appendTimestamp(b []byte, t time.Time) []byte {
	secs := t.Unix()
	days := secs / 86400
	if secs%86400 < 0 {
		days--
	}
	sod := uint32(secs - days*86400)
	z := days + 719468
	era := z / 146097
	if z < 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	year := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day := doy - (153*mp+2)/5 + 1
	month := mp + 3
	if mp >= 10 {
		month = mp - 9
		year++
	}
	if year < 0 || year > 9999 {
		return t.UTC().AppendFormat(b, timestampLayout)
	}
	us := uint32(t.Nanosecond() / 1000) // truncated, as Format does
	var a [len("2006-01-02T15:04:05.000000Z")]byte
	put2(a[0:], uint32(year)/100)
	put2(a[2:], uint32(year)%100)
	a[4] = '-'
	put2(a[5:], uint32(month))
	a[7] = '-'
	put2(a[8:], uint32(day))
	a[10] = 'T'
	put2(a[11:], sod/3600)
	a[13] = ':'
	put2(a[14:], sod/60%60)
	a[16] = ':'
	put2(a[17:], sod%60)
	a[19] = '.'
	put2(a[20:], us/10000)
	put2(a[22:], us/100%100)
	put2(a[24:], us%100)
	a[26] = 'Z'
	return append(b, a[:]...)
}

// digitPairs is "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// put2 writes v (< 100) as two digits at a[0:2].
func put2(a []byte, v uint32) {
	_ = a[1]
	a[0], a[1] = digitPairs[2*v], digitPairs[2*v+1]
}

// appendTimestampJSON appends t as a JSON string.
func appendTimestampJSON(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = appendTimestamp(b, t)
	return append(b, '"')
}

func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// jsonBufs recycles response buffers; big ones are dropped, not kept.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

const maxPooledBuf = 64 << 10

// writeAppendedJSON writes the JSON that fill appends, from a pooled
// buffer, with a Content-Length.
func writeAppendedJSON(w http.ResponseWriter, status int, fill func([]byte) []byte) error {
	bp := jsonBufs.Get().(*[]byte)
	b := fill((*bp)[:0])
	err := writeJSONBytes(w, status, b)
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		jsonBufs.Put(bp)
	}
	return err
}

// writeJSONBytes writes an encoded JSON body with status.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte) error {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	_, err := w.Write(b)
	return err
}
