package auth

import (
	"context"
	"net/http"
	"time"
)

// ParseAuthorization returns the token of an Authorization header value
// "Bearer <token>" (RFC 6750 section 2.1): the scheme is matched without
// regard to case, followed by one or more spaces, and the token must be
// non-empty and made only of the characters a JWT can hold (base64url and
// "."). Anything else, such as "Basic ..." or a trailing space, is not a
// bearer token.
func ParseAuthorization(value string) (string, bool) {
	token, ok := bearerPart(value)
	if !ok || !tokenChars(token) {
		return "", false
	}
	return token, true
}

// bearerPart is ParseAuthorization without the character check: the
// verifier's cache skips that check for a token it has verified before.
func bearerPart(value string) (string, bool) {
	const scheme = "bearer"
	if len(value) <= len(scheme) || value[len(scheme)] != ' ' || !equalFoldASCII(value[:len(scheme)], scheme) {
		return "", false
	}
	token := value[len(scheme):]
	for len(token) > 0 && token[0] == ' ' {
		token = token[1:]
	}
	return token, token != ""
}

// tokenChars reports whether token holds only characters a JWT can.
func tokenChars(token string) bool {
	for i := 0; i < len(token); i++ {
		if !tokenChar(token[i]) {
			return false
		}
	}
	return true
}

// BearerToken returns the bearer token of r's Authorization header. A
// request with more than one Authorization header has none.
func BearerToken(r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	return ParseAuthorization(values[0])
}

// VerifyRequest is Verify for a net/http request: it checks r's
// Authorization header at Config.Now. A request with several Authorization
// headers is refused, so an ambiguous request never authenticates.
func (v *Verifier) VerifyRequest(r *http.Request) (*Principal, error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return v.Verify(r.Context(), "", time.Time{})
	case 1:
		return v.Verify(r.Context(), values[0], time.Time{})
	}
	return nil, v.reject(errBadHeader, "several authorization headers")
}

func tokenChar(c byte) bool { return tokenCharTable[c] }

// tokenCharTable is the base64url alphabet and '.': a table, because every
// request checks each of its token's ~600 bytes.
var tokenCharTable = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	return t
}()

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

type ctxKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the Principal stored by WithPrincipal.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(*Principal)
	return p, ok && p != nil
}
