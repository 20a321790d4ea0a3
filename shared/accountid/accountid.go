// Package accountid is what a merchant account id is, the same for both
// services and wherever an id arrives: the header that names the account
// a request acts in, a path segment, a query parameter, a body field. It
// links nothing but the standard library's basics, so that core-api's
// domain, which must not link net/http, checks ids by the same rule as
// the transports.
package accountid

// Header names the merchant account a request acts in, on both services'
// public listeners (absent or empty: Default) and on vault-proxy's
// internal one (required there: core-api names the account on every call).
const Header = "x-service-merchant-account-id"

// Default is the account a public request acts in when it names none, and
// the one account a token without a merchant_account_ids claim may act in.
const Default = "default"

// Pattern is the shape of an id, as the OpenAPI documents, the databases'
// CHECK constraints and error messages quote it. Valid decides it.
const Pattern = `^[a-z0-9][a-z0-9_-]{0,63}$`

// MaxLen is the length of the longest id Pattern matches.
const MaxLen = 64

// Mismatch and MismatchType are the message and type of the error detail
// for an id that does not match Pattern, wherever it was read.
const (
	Mismatch     = "must match " + Pattern
	MismatchType = "value_error.str.regex"
)

// Valid reports whether id matches Pattern. It is written out rather than
// a regexp because every authenticated request checks the header, and the
// regexp engine cost more than the rest of the authorization but the
// token lookup. Bytes suffice: no byte of a multi-byte UTF-8 sequence is
// in the pattern's classes, so such a rune (or invalid UTF-8) fails either
// way.
func Valid[T string | []byte](id T) bool {
	if len(id) == 0 || len(id) > MaxLen || !lowerAlnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !lowerAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// FromHeader is the account a request acts in given the value of its
// Header: Default when the value is empty, the value when Valid, and false
// otherwise.
func FromHeader[T string | []byte](v T) (string, bool) {
	switch {
	case len(v) == 0:
		return Default, true
	case !Valid(v):
		return "", false
	}
	return string(v), true
}

func lowerAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}
