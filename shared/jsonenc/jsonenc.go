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
