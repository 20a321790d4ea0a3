package httpapi

import (
	"github.com/valyala/fasthttp"
)

// CORS headers the dashboard's page may send: the bearer token, the JSON
// body, the idempotency key of each click and the merchant account.
const corsAllowHeaders = "Authorization, Content-Type, Idempotency-Key, x-service-merchant-account-id"

// SetCORS lets pages served from origin (the merchant dashboard's,
// scheme://host[:port]) call this listener from the browser: the answers
// to that origin carry Access-Control-Allow-Origin, and its preflight
// requests are answered here. Any other origin gets no CORS header, so
// browsers keep its pages from reading answers or sending non-simple
// requests. No credentials are allowed: the dashboard sends a bearer
// token, never a cookie, to vault-proxy. Empty origin: no CORS.
func (rt *Router) SetCORS(origin string) { rt.corsOrigin = origin }

// withCORS wraps next with the CORS answers of rt.corsOrigin.
func (rt *Router) withCORS(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	if rt.corsOrigin == "" {
		return next
	}
	origin := []byte(rt.corsOrigin)
	// The headers are set after next: error answers and answers passed
	// on from core-api are rebuilt from scratch, and the page must read
	// their messages too.
	return func(ctx *fasthttp.RequestCtx) {
		allowed := string(ctx.Request.Header.Peek("Origin")) == string(origin)
		if allowed && ctx.IsOptions() && len(ctx.Request.Header.Peek("Access-Control-Request-Method")) > 0 {
			ctx.Response.Header.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
			ctx.Response.Header.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			ctx.Response.Header.Set("Access-Control-Max-Age", "600")
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		} else {
			next(ctx)
		}
		ctx.Response.Header.Set("Vary", "Origin")
		if allowed {
			ctx.Response.Header.SetBytesV("Access-Control-Allow-Origin", origin)
			ctx.Response.Header.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset")
		}
	}
}
