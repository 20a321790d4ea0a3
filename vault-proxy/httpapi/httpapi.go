// Package httpapi is vault-proxy's fasthttp transport: routing, request ids,
// the error envelope, panics and access logs. Handlers stay thin and return
// errors; this package turns them into the documented error shape.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/fasthttp/router"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/deadline"
	"github.com/payorch/shared/health"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/metrics"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/shared/requestid"
	"github.com/payorch/shared/zone"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/valyala/fasthttp"
)

// Handler serves one route. A returned error becomes the error envelope: an
// *apierror.Error as it is, anything else as a bare server_error whose text
// is logged but never sent.
type Handler func(ctx *fasthttp.RequestCtx) error

// Check is one readiness probe (PostgreSQL, Vault, ...).
type Check = health.Check

// Router wraps a fasthttp router so every route gets the same middleware.
type Router struct {
	r        *router.Router
	log      *slog.Logger
	listener string        // for metrics: public, internal, admin
	metrics  *metrics.HTTP // nil: none

	corsOrigin string // see SetCORS

	routes map[string][]string // method: the path templates Handle registered

	limit    *ratelimit.Guard // nil: none; see SetRateLimit
	verifier *auth.Verifier
}

// SetMetrics counts every request of the listener in m, by route
// template and status.
func (rt *Router) SetMetrics(m *metrics.HTTP, listener string) { rt.metrics, rt.listener = m, listener }

// NewRouter returns a router whose unknown routes and methods answer in the
// error envelope.
func NewRouter(log *slog.Logger) *Router {
	rt := &Router{r: router.New(), log: log}
	rt.r.HandleMethodNotAllowed = true
	rt.r.NotFound = rt.wrap(unmatchedRoute, func(*fasthttp.RequestCtx) error { return apierror.NotFound("route not found") })
	rt.r.MethodNotAllowed = rt.wrap(unmatchedRoute, func(*fasthttp.RequestCtx) error {
		return apierror.New(fasthttp.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route")
	})
	rt.r.PanicHandler = nil // wrap recovers, so the panic value never reaches a default handler
	return rt
}

// Handle registers h for method and path (fasthttp/router syntax: {id}).
func (rt *Router) Handle(method, path string, h Handler) {
	rt.r.Handle(method, path, rt.wrap(method+" "+path, h))
	if rt.routes == nil {
		rt.routes = map[string][]string{}
	}
	rt.routes[method] = append(rt.routes[method], path)
}

// RefuseOtherMethods answers 405 method_not_allowed, with an Allow header
// naming the methods registered, for every other method on each of paths
// (each already registered with at least one method).
func (rt *Router) RefuseOtherMethods(paths ...string) {
	// Not HEAD nor OPTIONS: the router and the CORS preflight (withCORS)
	// answer those.
	methods := []string{fasthttp.MethodGet, fasthttp.MethodPost, fasthttp.MethodPut, fasthttp.MethodPatch, fasthttp.MethodDelete}
	for _, path := range paths {
		var allowed []string
		for _, m := range methods {
			if rt.registered(m, path) {
				allowed = append(allowed, m)
			}
		}
		allow := strings.Join(allowed, ", ")
		refuse := func(ctx *fasthttp.RequestCtx) error {
			ctx.Response.Header.Set("Allow", allow)
			return apierror.New(fasthttp.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route")
		}
		for _, m := range methods {
			if !rt.registered(m, path) {
				rt.r.Handle(m, path, rt.wrap(unmatchedRoute, refuse))
			}
		}
	}
}

// registered says whether method has a handler for path, as registered
// (the template itself, not a request path).
func (rt *Router) registered(method, path string) bool {
	return slices.Contains(rt.routes[method], path)
}

// NotFound replaces the handler for unmatched routes (the public listener
// passes them on to core-api).
func (rt *Router) NotFound(h Handler) { rt.r.NotFound = rt.wrap(unmatchedRoute, h) }

// MethodNotAllowed replaces the handler for a known path with an unknown
// method (the public listener passes those on to core-api as well:
// GET /payment-methods is core-api's list, POST is vault-proxy's).
func (rt *Router) MethodNotAllowed(h Handler) { rt.r.MethodNotAllowed = rt.wrap(unmatchedRoute, h) }

// unmatchedRoute labels the requests no route matched (passed on to
// core-api from the public listener, or refused): never their path,
// which may hold anything.
const unmatchedRoute = "unmatched"

// Handler is the fasthttp entry point.
func (rt *Router) Handler() fasthttp.RequestHandler { return rt.withCORS(rt.r.Handler) }

// Health registers /healthz (the process is up) and /readyz (its
// dependencies answer).
func (rt *Router) Health(checks ...Check) {
	rt.Handle(fasthttp.MethodGet, "/healthz", func(ctx *fasthttp.RequestCtx) error {
		return WriteJSON(ctx, fasthttp.StatusOK, health.Alive)
	})
	rt.Handle(fasthttp.MethodGet, zone.ReadyPath, func(ctx *fasthttp.RequestCtx) error {
		// Not ctx itself: see requestContext (health.Ready adds the timeout).
		status, body := health.Ready(context.WithoutCancel(ctx), rt.log, checks)
		return WriteJSON(ctx, status, body)
	})
}

type ctxKey struct{}

// wrap runs h with the middleware; route is its template, for metrics.
func (rt *Router) wrap(route string, h Handler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		start := ctx.Time() // set by fasthttp as the request was read: no second clock read
		id := requestid.Resolve(string(ctx.Request.Header.Peek("X-Request-Id")))
		ctx.SetUserValue(ctxKey{}, id)
		ctx.Response.Header.Set("X-Request-Id", id)
		if !rt.rateLimited(ctx, id, route) {
			if err := rt.call(ctx, h); err != nil {
				rt.writeError(ctx, id, err)
			}
		}
		rt.accessLog(ctx, id, start)
		rt.metrics.Observe(rt.listener, route, ctx.Response.StatusCode(), time.Since(start))
	}
}

// accessLog writes the request's line (logging.LogAccess).
func (rt *Router) accessLog(ctx *fasthttp.RequestCtx, id string, start time.Time) {
	now := time.Now()
	logging.LogAccess(ctx, rt.log.Handler(), logging.AccessLine{Time: now, RequestID: id,
		Status: ctx.Response.StatusCode(), Duration: now.Sub(start),
		// Views of the request's buffers: LogAccess keeps nothing of them.
		// A checkout session's id is the secure fields' credential: masked.
		Method: unsafeString(ctx.Method()), Path: logging.MaskPathSegment(unsafeString(ctx.Path()), CheckoutSessionsPath+"/")}) // never the query or body
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// call runs h and turns a panic into an error without its value: a panic in
// a PCI process may hold card data, so only the fact is logged.
func (rt *Router) call(ctx *fasthttp.RequestCtx, h Handler) (err error) {
	defer func() {
		if recover() != nil {
			err = errPanic
		}
	}()
	return h(ctx)
}

var errPanic = errors.New("handler panicked")

// errAuditUnavailable answers a request that would have revealed card
// data while the audit log cannot record the access.
var errAuditUnavailable = apierror.New(fasthttp.StatusServiceUnavailable, "audit_unavailable",
	"the audit log cannot record this access right now; nothing was revealed or sent")

func (rt *Router) writeError(ctx *fasthttp.RequestCtx, id string, err error) {
	e := apierror.As(err)
	if errors.Is(err, vaultproxy.ErrAuditUnavailable) {
		e = errAuditUnavailable
	}
	e = e.WithRequestID(id)
	if e.Status >= 500 {
		rt.log.ErrorContext(ctx, "request failed", "request_id", id, "code", e.Code, "err", err)
	}
	ctx.Response.ResetBody()
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(e.Status)
	ctx.SetBody(e.JSON())
}

// ServerError answers requests fasthttp refuses before any handler runs
// (a body over the size limit, malformed HTTP) in the error envelope.
func (rt *Router) ServerError(ctx *fasthttp.RequestCtx, err error) {
	e := apierror.BadRequest("the request could not be read")
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		e = apierror.TooLarge("the request body is larger than this service accepts")
	}
	id := requestid.Generate()
	ctx.Response.Header.Set("X-Request-Id", id)
	rt.writeError(ctx, id, e)
}

// RequestID returns the id the middleware assigned to this request.
func RequestID(ctx *fasthttp.RequestCtx) string {
	id, _ := ctx.UserValue(ctxKey{}).(string)
	return id
}

// WriteJSON writes v as the JSON body with status.
func WriteJSON(ctx *fasthttp.RequestCtx, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(status)
	ctx.SetBody(b)
	return nil
}

// requestContext is the context for the calls made while serving ctx
// (PostgreSQL, Vault, the outbound client). *fasthttp.RequestCtx is a
// context.Context, but its Done channel is a field of the Server that
// Shutdown writes without synchronisation, while context.AfterFunc (pgx)
// and WithCancel read it from other goroutines: the race detector reports
// it. The request's values are kept; cancellation is by deadline only,
// and the deadline's timer starts only if something waits on Done.
func requestContext(ctx *fasthttp.RequestCtx, d time.Duration) (context.Context, context.CancelFunc) {
	return deadline.WithTimeout(ctx, d)
}
