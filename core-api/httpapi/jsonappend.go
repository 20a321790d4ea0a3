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
// number (H. Hinnant's days_from_civil inverse).
func appendTimestamp(b []byte, t time.Time) []byte {
	secs := t.Unix()
	days := secs / 86400
	if secs%86400 < 0 {
		days--
	}
	sod := int(secs - days*86400)
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
	b = appendDigits(b, int(year), 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, int(day), 2)
	b = append(b, 'T')
	b = appendDigits(b, sod/3600, 2)
	b = append(b, ':')
	b = appendDigits(b, sod/60%60, 2)
	b = append(b, ':')
	b = appendDigits(b, sod%60, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6) // truncated, as Format does
	return append(b, 'Z')
}

// appendDigits appends v (>= 0, < 10^width) zero-padded to width digits.
func appendDigits(b []byte, v, width int) []byte {
	var a [8]byte
	for i := width - 1; i >= 0; i-- {
		a[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, a[:width]...)
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
