package apierror

import (
	"mime"
	"strings"
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
