package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
)

// merchantHeaderKey is the merchant account header's canonical form, the
// key net/http stores it under: Header.Get canonicalizes any other
// spelling into a new string, on every request.
var merchantHeaderKey = http.CanonicalHeaderKey(accountid.Header)

// AccountExists reports whether a merchant account exists.
type AccountExists func(ctx context.Context, id string) (bool, error)

// Auth authorizes requests: a valid bearer token with the needed scope,
// acting in an existing merchant account the token may use.
type Auth struct {
	Verifier *auth.Verifier
	Exists   AccountExists
	Now      func() time.Time

	// Known accounts are remembered briefly so the hot path does not pay a
	// query per request; a deleted account stays usable for at most knownTTL.
	mu    sync.Mutex
	known map[string]time.Time
}

const knownTTL = 30 * time.Second

var errMerchantHeader = apierror.BadRequest("invalid merchant account id", apierror.Detail{
	Location: apierror.LocationHeader, Pointer: accountid.Header, Message: accountid.Mismatch, Type: accountid.MismatchType,
})

// Caller is an authorized request's identity.
type Caller struct {
	Principal         *auth.Principal
	MerchantAccountID string
}

// verify is r's principal: the one the router's rate limit verified r's
// token to, else r's token verified now.
func (a *Auth) verify(r *http.Request) (*auth.Principal, error) {
	if v, ok := r.Context().Value(verifiedKey{}).(verified); ok && v.by == a.Verifier {
		return v.p, nil
	}
	return a.Verifier.VerifyRequest(r)
}

// Authorize checks r for scope.
func (a *Auth) Authorize(r *http.Request, scope string) (Caller, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	p, err := a.verify(r)
	if err != nil {
		return Caller{}, err
	}
	if err := p.Require(scope); err != nil {
		return Caller{}, err
	}
	m, ok := accountid.FromHeader(headerValue(r.Header, merchantHeaderKey))
	if !ok {
		return Caller{}, errMerchantHeader
	}
	if !p.CanAccessMerchant(m) {
		return Caller{}, apierror.Forbidden("this token may not act in merchant account " + m)
	}
	if err := a.checkAccount(r.Context(), m, now()); err != nil {
		return Caller{}, err
	}
	return Caller{Principal: p, MerchantAccountID: m}, nil
}

// AuthorizeTarget is Authorize for a route about one resource: the caller,
// and the resource's id from path parameter param (a lower-case UUID,
// else 400 naming it). Authorization comes first, so an unauthorized
// caller learns nothing of the id's form.
func (a *Auth) AuthorizeTarget(r *http.Request, scope, param string) (Caller, string, error) {
	c, err := a.Authorize(r, scope)
	if err != nil {
		return Caller{}, "", err
	}
	id, err := pathUUID(r, param)
	return c, id, err
}

func (a *Auth) checkAccount(ctx context.Context, id string, now time.Time) error {
	a.mu.Lock()
	until, ok := a.known[id]
	a.mu.Unlock()
	if ok && now.Before(until) {
		return nil
	}
	exists, err := a.Exists(ctx, id)
	if err != nil {
		return err
	}
	if !exists {
		return apierror.NotFound("merchant account " + id + " not found")
	}
	a.mu.Lock()
	if a.known == nil {
		a.known = map[string]time.Time{}
	}
	a.known[id] = now.Add(knownTTL)
	a.mu.Unlock()
	return nil
}

// Forget drops an account from the cache (after it is deleted).
func (a *Auth) Forget(id string) {
	a.mu.Lock()
	delete(a.known, id)
	a.mu.Unlock()
}

// headerValue is h.Get(key) for a key already canonical.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
