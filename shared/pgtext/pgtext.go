// Package pgtext says what PostgreSQL's text (and jsonb) can hold: valid
// UTF-8 without U+0000. A value outside that fails its insert, which a
// service would otherwise answer as a 500; both zones check input against
// it first, and the audit trail, which must store whatever a caller chose,
// makes values fit.
package pgtext

import (
	"strings"
	"unicode/utf8"
)

// Storable reports whether PostgreSQL's text can hold s.
func Storable(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// AppendStorable appends s to dst as PostgreSQL's text can hold it: U+0000
// and each invalid UTF-8 byte become U+FFFD, the rest is unchanged.
func AppendStorable(dst []byte, s string) []byte {
	if Storable(s) {
		return append(dst, s...)
	}
	for _, r := range s { // ranging over invalid UTF-8 yields U+FFFD
		if r == 0 {
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}
