package postgres

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/google/uuid"
	"github.com/payorch/shared/pgtext"
	"github.com/tidwall/gjson"
)

// appendCanonicalRows appends the COPY rows of the leading records of a
// batch that are in the canonical form auditspool writes them in (see
// recordScanner), and returns how many, and whether they are the whole
// batch. It writes the row appendParsedRows would for each (the tests
// compare the two over a table and a fuzz target), in one pass with no
// allocation: parsing with gjson cost the shipper three times as much
// per forward's record (BenchmarkAppendCopyRows, ~1.3 us then), on the
// cores the forwards run on.
// Anything else, which it leaves to appendParsedRows, includes every
// error.
func appendCanonicalRows(dst []byte, records string) ([]byte, int, bool) {
	sc := recordScanner{s: records}
	if !sc.next('[') {
		return dst, 0, false
	}
	if sc.next(']') {
		return dst, 0, sc.i == len(sc.s)
	}
	for n := 0; ; {
		row := len(dst)
		var ok bool
		if dst, ok = sc.row(dst); !ok {
			return dst[:row], n, false
		}
		n++
		if !sc.next(',') {
			return dst, n, sc.next(']') && sc.i == len(sc.s)
		}
	}
}

// recordScanner reads records in their canonical form: the members in
// copyColumns' order, with no space between tokens, each of the JSON type
// its kind reads (scanned here as gjson would parse it), times as
// auditspool writes them, tokens as 36-character UUIDs, and the detail an
// object. A member may be absent, as the optional ones are. Whatever it
// does not read is left to gjson, which then parses the rest of the batch.
type recordScanner struct {
	s string // the batch
	i int    // the next byte to read
}

// next reads c if it is the next byte.
func (sc *recordScanner) next(c byte) bool {
	if sc.i < len(sc.s) && sc.s[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

// row appends the COPY row of the record at the scanner.
func (sc *recordScanner) row(dst []byte) ([]byte, bool) {
	if !sc.next('{') {
		return dst, false
	}
	dst = beginCopyRow(dst)
	first := true
	for _, c := range copyColumns {
		if !sc.member(first, c.member) {
			// What the parsed path writes for a member the record lacks.
			dst, _ = c.kind.appendField(dst, gjson.Result{}, c.required)
			continue
		}
		first = false
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		var ok bool
		switch c.kind {
		case copyText:
			dst, ok = sc.text(dst)
		case copyTimestamptz:
			dst, ok = sc.timestamptz(dst)
		case copyUUIDArray:
			dst, ok = sc.uuidArray(dst)
		case copyJSON:
			dst, ok = sc.object(dst)
		}
		if !ok {
			return dst, false
		}
		dst = endField(dst, lenAt)
	}
	// A member out of order, repeated or unknown is left here.
	if !sc.next('}') {
		return dst, false
	}
	return endCopyRow(dst), true
}

// member reads the member name and its colon, after a comma unless first.
func (sc *recordScanner) member(first bool, name string) bool {
	s := sc.s[sc.i:]
	if !first {
		if s == "" || s[0] != ',' {
			return false
		}
		s = s[1:]
	}
	if len(s) < len(name)+3 || s[0] != '"' || s[1:1+len(name)] != name || s[1+len(name)] != '"' || s[2+len(name)] != ':' {
		return false
	}
	sc.i = len(sc.s) - len(s) + len(name) + 3
	return true
}

// text appends a JSON string as copyText stores it.
func (sc *recordScanner) text(dst []byte) ([]byte, bool) {
	if !sc.next('"') {
		return dst, false
	}
	s, start := sc.s, sc.i
	i := start
	for i < len(s) && plainASCII[s[i]] {
		i++
	}
	if i < len(s) && s[i] == '"' { // storable as it is, most often
		sc.i = i + 1
		return append(dst, s[start:i]...), true
	}
	for i < len(s) && s[i] >= ' ' && s[i] != '"' && s[i] != '\\' {
		i++
	}
	if i < len(s) && s[i] == '"' { // no escapes, but bytes past ASCII
		sc.i = i + 1
		return pgtext.AppendStorable(dst, s[start:i]), true
	}
	at := len(dst)
	dst = append(dst, s[start:i]...)
	sc.i = i
	var ok bool
	if dst, ok = sc.unescape(dst); !ok {
		return dst, false
	}
	if v := dst[at:]; !pgtext.Storable(unsafe.String(unsafe.SliceData(v), len(v))) {
		dst = pgtext.AppendStorable(dst[:at], string(v))
	}
	return dst, true
}

// plainASCII are the bytes a JSON string holds as they are that
// PostgreSQL's text holds as they are: ASCII but controls, quote and
// backslash.
var plainASCII = func() (plain [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// unescape appends the rest of a JSON string with escapes, decoded, and
// reads its closing quote. It takes what gjson decodes the same way:
// escapes other than a lone surrogate's, and no control characters, at
// which gjson would end the string.
func (sc *recordScanner) unescape(dst []byte) ([]byte, bool) {
	s, i := sc.s, sc.i
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			sc.i = i + 1
			return dst, true
		case c < ' ' || c == '\\' && i+1 == len(s):
			return dst, false
		case c != '\\':
			dst = append(dst, c)
			i++
			continue
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hexRune(s[i+2:])
			if !ok || utf16.IsSurrogate(r) {
				return dst, false
			}
			dst = utf8.AppendRune(dst, r)
			i += 4
		default:
			return dst, false
		}
		i += 2
	}
	return dst, false
}

// hexRune reads the four hex digits of a \u escape. In base 16 ParseUint
// takes no sign, prefix or underscore: only the digits JSON allows.
func hexRune(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	r, err := strconv.ParseUint(s[:4], 16, 32)
	return rune(r), err == nil
}

// timestamptz appends a time as auditspool writes it, RFC 3339 in UTC
// ("Z") with up to nine digits of fraction, as copyTimestamptz stores it.
func (sc *recordScanner) timestamptz(dst []byte) ([]byte, bool) {
	t, n, ok := parseRecordTime(sc.s[sc.i:])
	if !ok {
		return dst, false
	}
	sc.i += n
	return appendTimestamptz(dst, t), true
}

// parseRecordTime reads `"2006-01-02T15:04:05.999999999Z"` (the fraction
// optional) at the start of s, and returns how many bytes it took. It
// reads only times time.Parse(time.RFC3339Nano) reads, and to the same
// time; the rest go to gjson and time.Parse.
func parseRecordTime(s string) (time.Time, int, bool) {
	const date = `"2006-01-02T15:04:05`
	if len(s) < len(date)+2 || s[0] != '"' || s[5] != '-' || s[8] != '-' || s[11] != 'T' || s[14] != ':' || s[17] != ':' {
		return time.Time{}, 0, false
	}
	year, ok1 := decimal(s[1:5])
	month, ok2 := decimal(s[6:8])
	day, ok3 := decimal(s[9:11])
	hour, ok4 := decimal(s[12:14])
	minute, ok5 := decimal(s[15:17])
	sec, ok6 := decimal(s[18:20])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, 0, false
	}
	i, nsec := len(date), 0
	if s[i] == '.' {
		digits := 0
		for i++; i < len(s) && digits < 9 && '0' <= s[i] && s[i] <= '9'; i++ {
			nsec = nsec*10 + int(s[i]-'0')
			digits++
		}
		if digits == 0 {
			return time.Time{}, 0, false
		}
		for ; digits < 9; digits++ {
			nsec *= 10
		}
	}
	if len(s) < i+2 || s[i] != 'Z' || s[i+1] != '"' {
		return time.Time{}, 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // a day past the month's end, which time.Date rolls over and time.Parse refuses
		return time.Time{}, 0, false
	}
	return t, i + 2, true
}

// decimal reads s, all decimal digits.
func decimal(s string) (int, bool) {
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// uuidArray appends a JSON array of UUID strings, each of 36 characters,
// as copyUUIDArray stores it.
func (sc *recordScanner) uuidArray(dst []byte) ([]byte, bool) {
	if !sc.next('[') {
		return dst, false
	}
	dst, at := beginUUIDArray(dst)
	n := 0
	if !sc.next(']') {
		for {
			const quoted = len(`"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"`)
			s := sc.s[sc.i:]
			if len(s) < quoted || s[0] != '"' || s[quoted-1] != '"' {
				return dst, false
			}
			id, err := uuid.Parse(s[1 : quoted-1]) // hex digits and dashes only, when it succeeds
			if err != nil {
				return dst, false
			}
			sc.i += quoted
			dst = appendUUIDElement(dst, id)
			n++
			if sc.next(']') {
				break
			}
			if !sc.next(',') {
				return dst, false
			}
		}
	}
	return endUUIDArray(dst, at, n), true
}

// object appends a JSON object as it is, as copyJSON stores it, ending it
// where gjson does: at the bracket that brings the count of open ones
// (either kind) to zero, outside strings. gjson counts parentheses too;
// here they send the record to gjson.
func (sc *recordScanner) object(dst []byte) ([]byte, bool) {
	s, start := sc.s, sc.i
	if start == len(s) || s[start] != '{' {
		return dst, false
	}
	depth := 0
	for i := start; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				sc.i = i + 1
				return append(dst, s[start:sc.i]...), true
			}
		case '(', ')':
			return dst, false
		case '"':
			if i = closingQuote(s, i+1); i < 0 {
				return dst, false
			}
		}
	}
	return dst, false
}

// closingQuote is the index of the quote that ends the JSON string whose
// contents start at s[i], or -1: the first quote after an even number of
// backslashes.
func closingQuote(s string, i int) int {
	for {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		backslashes := 0
		for j := q - 1; j >= i && s[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q
		}
		i = q + 1
	}
}
