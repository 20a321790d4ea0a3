package httpapi

import (
	"context"
	"net/http"

	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/ratelimit"
)

// unlimitedRoutes are never rate limited: probes and scrapes must see the
// instance as it is, however busy.
var unlimitedRoutes = map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}

// SetRateLimit limits the router's requests with g (nil: no limit),
// verifying bearer tokens with v to find each request's credential.
//
// A request with a valid token spends from its signing key's bucket; one
// whose Authorization header fails verification (the expensive case, a
// P-521 signature check per forged token) from its remote address's. A
// request without the header is not limited here: core-api sees
// vault-proxy's address for everything vault-proxy passes on, so such a
// bucket would be shared by every client; vault-proxy, the public entry,
// limits those by the client's address, and core-api's own routes without
// a bearer token (dashboard sign-in, processors' notifications) have their
// own checks.
func (rt *Router) SetRateLimit(g *ratelimit.Guard, v *auth.Verifier) {
	rt.limit, rt.verifier = g, v
}

// rateLimited spends r's request from its bucket and, when that is empty,
// answers 429 and reports true: the route's handler does not run, so a
// refused request changes nothing (an Idempotency-Key is not claimed).
// An allowed request is returned with the principal its token verified
// to, so that the handler's authorization (Auth.verify) does not verify
// the same token again.
func (rt *Router) rateLimited(w http.ResponseWriter, r *http.Request, pattern string) (*http.Request, bool) {
	if rt.limit == nil || unlimitedRoutes[pattern] || len(r.Header.Values("Authorization")) == 0 {
		return r, false
	}
	var d ratelimit.Decision
	p, err := rt.verifier.VerifyRequest(r)
	if err == nil {
		d = rt.limit.Credential(p)
	} else {
		d = rt.limit.Address(clientAddr(r))
	}
	if d.Allowed {
		if p != nil {
			r = r.WithContext(context.WithValue(r.Context(), verifiedKey{}, verified{rt.verifier, p}))
		}
		return r, false
	}
	ratelimit.SetHeaders(d, w.Header().Set)
	rt.writeError(w, r, ratelimit.Refusal())
	return r, true
}

// verifiedKey is the request context's key of the principal the router
// already verified r's bearer token to (a verified).
type verifiedKey struct{}

// verified is a principal with the verifier that judged the token: a
// handler takes it only from the verifier it would have asked itself.
type verified struct {
	by *auth.Verifier
	p  *auth.Principal
}
