package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/shared/apierror"
)

// Request deadlines. vault-proxy, which passes merchants' requests on to
// core-api, waits 60 s for an answer and then answers 504 itself (or, for
// a payment method's creation, asks again); a client that calls core-api
// directly may wait longer still. Without a deadline of its own core-api
// would go on working (holding a pool connection, a row lock) on a request
// nobody waits for any more. So every handler's context ends at the
// request timeout, below vault-proxy's 60 s with time left for the answer
// to travel: the database (waiting for a pool connection included: pgxpool
// bounds that wait by the context only) and vault-proxy calls give up
// then, and the request is answered 504 gateway_timeout.
const (
	DefaultRequestTimeout = 50 * time.Second
	MaxRequestTimeout     = 55 * time.Second
)

// errRequestTimeout answers a request that ran out of time. A write may
// have been made just before: the database committed it, the answer did
// not come back in time.
var errRequestTimeout = apierror.GatewayTimeout("the request did not complete in time; " +
	"a change it was making may or may not have been stored: read the record before retrying")

// queryCanceled is SQLSTATE 57014: statement_timeout, or the cancel
// request pgx sends when a context ends during a statement.
const queryCanceled = "57014"

// SetRequestTimeout sets the deadline of every request's context
// (DefaultRequestTimeout unless set; tests set short ones).
func (rt *Router) SetRequestTimeout(d time.Duration) { rt.timeout = d }

// withDeadline returns r under the request deadline.
func (rt *Router) withDeadline(r *http.Request) (*http.Request, context.CancelFunc) {
	d := rt.timeout
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return r.WithContext(ctx), cancel
}

// timedOut returns the answer to a handler's err under ctx: a bare server
// error (a pgx, network or context error) once the request's deadline has
// passed, or a statement the database cancelled, becomes 504
// gateway_timeout. A domain answer (4xx) stands, and so does an upstream's
// own 5xx (a vault-proxy or connector failure says more than "late").
func timedOut(ctx context.Context, err error) error {
	if e := apierror.As(err); e.Status != http.StatusInternalServerError {
		return err
	}
	var pe *pgconn.PgError
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &pe) && pe.Code == queryCanceled {
		return &deadlineError{cause: err}
	}
	return err
}

// deadlineError is errRequestTimeout for the client, with the failure
// behind it for the log line.
type deadlineError struct{ cause error }

func (e *deadlineError) Error() string   { return errRequestTimeout.Error() + ": " + e.cause.Error() }
func (e *deadlineError) Unwrap() []error { return []error{errRequestTimeout, e.cause} }
