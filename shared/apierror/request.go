package apierror

import (
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckJSONContentType is the 415 every JSON route of both services gives
// a body whose Content-Type is not JSON: application/json or
// application/*+json, in UTF-8 if a charset is named.
func CheckJSONContentType(contentType string) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return UnsupportedMediaType("Content-Type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return UnsupportedMediaType("Content-Type must be application/json")
	}
	return nil
}

// PointerToken escapes an object key for a Detail's JSON pointer
// (RFC 6901: "~" as "~0", "/" as "~1").
func PointerToken(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// CheckJSONText is the 400 both services give a JSON body whose text they
// could not keep as sent: invalid UTF-8, or a \u escape of half a UTF-16
// surrogate pair. A parser would put U+FFFD in its place without a word,
// and a value stored exactly as entered (a credential, a name) would then
// differ from what the client sent.
func CheckJSONText(body []byte) error {
	if !utf8.Valid(body) {
		return BadRequest("request body is not valid UTF-8", Detail{Location: LocationBody, Pointer: "", Message: "not valid UTF-8", Type: "value_error.jsondecode"})
	}
	if hasLoneSurrogate(body) {
		return BadRequest("request body holds half a UTF-16 surrogate pair", Detail{Location: LocationBody, Pointer: "",
			Message: "a \\u escape of an unpaired surrogate (U+D800 to U+DFFF) is not a character", Type: "value_error.str.encoding"})
	}
	return nil
}

// hasLoneSurrogate reports whether JSON text b holds a \u escape of half a
// UTF-16 surrogate pair without its other half. A backslash occurs only
// inside strings, so reading escapes pairwise from the start suffices.
func hasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character: "\\" is skipped whole
		if i >= len(b) || b[i] != 'u' {
			continue
		}
		r, ok := hex4(b, i+1)
		if !ok {
			continue // malformed: the parser refuses it
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				if lo, ok := hex4(b, i+3); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(n), err == nil
}
