package httpapi

import (
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/shared/zone"
	"github.com/valyala/fasthttp"
)

// unlimitedRoutes are never rate limited: probes must see the instance as
// it is, however busy.
var unlimitedRoutes = map[string]bool{fasthttp.MethodGet + " /healthz": true, fasthttp.MethodGet + " " + zone.ReadyPath: true}

// SetRateLimit limits the router's requests with g (nil: no limit; the
// internal and admin listeners have none), verifying bearer tokens with v
// to find each request's credential: a request with a valid token spends
// from its signing key's bucket, any other (no token, a failing one, a
// checkout session's card fields, a processor's notification passed on to
// core-api) from its remote address's.
func (rt *Router) SetRateLimit(g *ratelimit.Guard, v *auth.Verifier) {
	rt.limit, rt.verifier = g, v
}

// rateLimited spends ctx's request from its bucket and, when that is
// empty, answers 429 and reports true: the route's handler does not run,
// so a refused request changes nothing and is not passed on to core-api.
// An allowed request keeps the principal its token verified to, so that
// the handler's authorization (Authenticator.Authorize) does not verify
// the same token again.
func (rt *Router) rateLimited(ctx *fasthttp.RequestCtx, id, route string) bool {
	if rt.limit == nil || unlimitedRoutes[route] {
		return false
	}
	var d ratelimit.Decision
	p, err := rt.verifier.VerifyBytes(ctx, ctx.Request.Header.Peek("Authorization"), ctx.Time())
	if err == nil {
		d = rt.limit.Credential(p)
	} else {
		d = rt.limit.Address(ctx.RemoteIP().String())
	}
	if d.Allowed {
		if p != nil {
			ctx.SetUserValue(verifiedKey{}, verified{rt.verifier, p})
		}
		return false
	}
	ratelimit.SetHeaders(d, ctx.Response.Header.Set)
	rt.writeError(ctx, id, ratelimit.Refusal())
	return true
}

// verifiedKey is the request's user value of the principal the router
// already verified its bearer token to, at the request's arrival (a
// verified).
type verifiedKey struct{}

// verified is a principal with the verifier that judged the token: a
// handler takes it only from the verifier it would have asked itself.
type verified struct {
	by *auth.Verifier
	p  *auth.Principal
}
