// Package jsonenc holds the hand-written JSON encoding both services use on
// hot paths (error envelopes, list pages). Its output is byte-identical to
// encoding/json, so clients cannot tell which encoder wrote a response.
package jsonenc

import "unicode/utf8"

// plain[c] is whether encoding/json writes byte c as itself: ASCII that
// is not a control character, a quote, a backslash or HTML-significant.
// A table makes the common case, a run of such bytes, one load per byte.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Plain reports whether byte c stands for itself inside a JSON string, as
// encoding/json writes one.
func Plain(c byte) bool { return plain[c] }

// AppendString appends s as a JSON string exactly as encoding/json
// writes it: HTML-safe (<, > and & escaped), invalid UTF-8 replaced by
// U+FFFD, and U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	if plainString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, <, > and &
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainString reports whether every byte of s is plain, eight at a time:
// the strings of list pages and audit records (ids, names, hosts) mostly
// are, and a byte at a time they cost about twelve instructions each. The
// last eight bytes, or a shorter string's first and last four, are read
// overlapping what was read before.
func plainString(s string) bool {
	n := len(s)
	switch {
	case n >= 8:
		for i := 0; i+8 <= n; i += 8 {
			if !plainWord(load64(s[i:])) {
				return false
			}
		}
		return plainWord(load64(s[n-8:]))
	case n >= 4:
		return plainWord(uint64(load32(s)) | uint64(load32(s[n-4:]))<<32)
	}
	for i := 0; i < n; i++ {
		if !plain[s[i]] {
			return false
		}
	}
	return true
}

// load64 and load32 are the first eight and four bytes of s,
// little-endian (one load each).
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func load32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether the eight bytes of x are all plain: none is
// 0x80 or above, below 0x20, or one of " & < > \. Each test is the
// zero-byte test (v-ones)&^v&highs, exact as a yes or no: " and & differ
// in bit 2 only, < and > in bit 1 only, so one test covers each pair.
func plainWord(x uint64) bool {
	quoteAmp := (x ^ '"'*ones) &^ (4 * ones)
	angles := (x ^ '<'*ones) &^ (2 * ones)
	backslash := x ^ '\\'*ones
	control := (x - 0x20*ones) &^ x
	special := (quoteAmp-ones)&^quoteAmp | (angles-ones)&^angles | (backslash-ones)&^backslash
	return (x|control|special)&highs == 0
}
