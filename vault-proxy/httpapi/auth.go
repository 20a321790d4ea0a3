package httpapi

import (
	"time"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/valyala/fasthttp"
)

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

// verify is the request's principal: the one the router's rate limit
// verified its token to at the request's arrival (unless a clock is
// injected), else its token verified now.
func (a *Authenticator) verify(ctx *fasthttp.RequestCtx) (*auth.Principal, error) {
	// The token is judged at the request's arrival, which fasthttp has
	// read the clock for already.
	now := ctx.Time()
	if a.Now != nil {
		now = a.Now()
	} else if v, ok := ctx.UserValue(verifiedKey{}).(verified); ok && v.by == a.Verifier {
		return v.p, nil
	}
	return a.Verifier.VerifyBytes(ctx, ctx.Request.Header.Peek("Authorization"), now)
}

// Authorize verifies the bearer token, requires scope and resolves the
// merchant account the request acts in.
func (a *Authenticator) Authorize(ctx *fasthttp.RequestCtx, scope string) (Caller, error) {
	// The token is judged at the request's arrival, which fasthttp has
	// read the clock for already.
	p, err := a.verify(ctx)
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

// MerchantAccount reads and checks the merchant account header
// (accountid.FromHeader).
func MerchantAccount(ctx *fasthttp.RequestCtx) (string, error) {
	m, ok := accountid.FromHeader(ctx.Request.Header.Peek(accountid.Header))
	if !ok {
		return "", errMerchantHeader
	}
	return m, nil
}

var errMerchantHeader = apierror.BadRequest("invalid merchant account id", apierror.Detail{
	Location: apierror.LocationHeader, Pointer: accountid.Header, Message: accountid.Mismatch, Type: accountid.MismatchType,
})
