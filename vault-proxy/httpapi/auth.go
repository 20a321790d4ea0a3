package httpapi

import (
	"regexp"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/valyala/fasthttp"
)

// MerchantHeader selects the merchant account; absent means "default".
const MerchantHeader = "x-service-merchant-account-id"

// merchantID is the pattern of merchant account ids, quoted in errors;
// validMerchantID checks it, in headers and paths alike.
var merchantID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// maxMerchantIDLen is the longest id merchantID matches.
const maxMerchantIDLen = 64

// Authenticator checks bearer tokens with the same verifier core-api uses.
type Authenticator struct {
	Verifier *auth.Verifier
	Now      func() time.Time
}

// Caller is an authenticated request's identity.
type Caller struct {
	Principal         *auth.Principal
	MerchantAccountID string
}

// Authorize verifies the bearer token, requires scope and resolves the
// merchant account the request acts in.
func (a *Authenticator) Authorize(ctx *fasthttp.RequestCtx, scope string) (Caller, error) {
	// The token is judged at the request's arrival, which fasthttp has
	// read the clock for already.
	now := ctx.Time()
	if a.Now != nil {
		now = a.Now()
	}
	p, err := a.Verifier.VerifyBytes(ctx, ctx.Request.Header.Peek("Authorization"), now)
	if err != nil {
		return Caller{}, err
	}
	if err := p.Require(scope); err != nil {
		return Caller{}, err
	}
	m, err := MerchantAccount(ctx)
	if err != nil {
		return Caller{}, err
	}
	if !p.CanAccessMerchant(m) {
		return Caller{}, apierror.Forbidden("this token may not act in merchant account " + m)
	}
	return Caller{Principal: p, MerchantAccountID: m}, nil
}

// MerchantAccount reads and checks the merchant account header.
func MerchantAccount(ctx *fasthttp.RequestCtx) (string, error) {
	m := ctx.Request.Header.Peek(MerchantHeader)
	if len(m) == 0 {
		return "default", nil
	}
	if !validMerchantID(m) {
		return "", apierror.BadRequest("invalid merchant account id", apierror.Detail{
			Location: apierror.LocationHeader, Pointer: MerchantHeader, Message: "must match " + merchantID.String(), Type: "value_error.str.regex",
		})
	}
	return string(m), nil
}

// validMerchantID reports whether id matches merchantID. It is written out
// because every authenticated request checks the header, and the regexp
// engine cost more than the rest of Authorize but the token lookup. Bytes
// suffice: no byte of a multi-byte UTF-8 sequence is in the pattern's
// classes, so such a rune (or invalid UTF-8) fails either way.
func validMerchantID[T string | []byte](id T) bool {
	if len(id) == 0 || len(id) > maxMerchantIDLen || !lowerAlnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !lowerAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}
