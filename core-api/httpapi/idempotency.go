package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/shared/apierror"
)

// CallerHandler serves a route once its caller is authorized.
type CallerHandler func(w http.ResponseWriter, r *http.Request, c Caller) error

// ReplayedHeader marks a response replayed from an idempotency key.
const ReplayedHeader = "Idempotent-Replayed"

// completeTimeout bounds the storing of a response once the work is done:
// the request's own deadline may have run out by then.
const completeTimeout = 5 * time.Second

// Idempotent authorizes a request for scope and runs h under its
// Idempotency-Key (docs/api-conventions.md, "Idempotency"), if it has one,
// scoped to the caller's merchant account and endpoint (a name the route
// gives; aliases of one operation give the same name). The body is read
// first (h still reads it from r) and the key is claimed on a SHA-256 of
// the method, path and query, and body bytes:
//
//   - a completed key with the same fingerprint: its stored status and
//     body are answered, byte for byte, with Idempotent-Replayed: true,
//     and h is not run;
//   - another fingerprint: 422 idempotency_key_reused;
//   - a request with the key still running: 409 concurrent_request;
//   - else h runs and its response, buffered, is stored with the key when
//     its status is below 500 (a 4xx is an answer: the same request would
//     get it again). A 5xx, a timeout or a panic gives the key back, so
//     the client's retry runs afresh (unless h attached a resource to it:
//     Resumable).
//
// h runs with the claim in its context (idempotency.Attach). It must be
// safe to run again after a partial run: a retry takes over a claim whose
// process died once its lease runs out (package idempotency).
func (d Deps) Idempotent(scope, endpoint string, h CallerHandler) Handler {
	return d.Resumable(scope, endpoint, h, nil)
}

// ResumeHandler answers a request whose key an earlier run left with a
// resource attached (idempotency.Attach): it asks what became of that
// resource and answers it as h would have, without moving money again.
type ResumeHandler func(w http.ResponseWriter, r *http.Request, c Caller, resource string) error

// Resumable is Idempotent for a handler that attaches what it makes to
// its key before it calls a processor: a request that takes over a claim
// with a resource attached (its first run died, or failed with a 5xx,
// after the attach) runs resume instead of h.
func (d Deps) Resumable(scope, endpoint string, h CallerHandler, resume ResumeHandler) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := d.Auth.Authorize(r, scope)
		if err != nil {
			return err
		}
		key, ok, err := idempotencyKey(r.Header)
		if err != nil {
			return err
		}
		if !ok {
			return h(w, r, c)
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		if r.Body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		s := idempotency.Scope{MerchantAccountID: c.MerchantAccountID, Endpoint: endpoint, Key: key}
		claim, err := d.Idempotency.Begin(r.Context(), s, idempotency.FingerprintOf(r.Method, r.URL.RequestURI(), body))
		switch {
		case errors.Is(err, idempotency.ErrReused):
			return errKeyReused
		case errors.Is(err, idempotency.ErrInFlight):
			return errKeyInFlight
		case err != nil:
			return err
		case claim.Replay != nil:
			w.Header().Set(ReplayedHeader, "true")
			return writeStored(w, *claim.Replay)
		}
		run := h
		switch {
		case claim.Resource != "" && resume != nil:
			d.Log.WarnContext(r.Context(), "idempotency key taken over from a run that did not complete: its resource is resumed",
				"endpoint", endpoint, "merchant_account_id", c.MerchantAccountID, "resource", claim.Resource)
			run = func(w http.ResponseWriter, r *http.Request, c Caller) error { return resume(w, r, c, claim.Resource) }
		case claim.TakenOver:
			d.Log.WarnContext(r.Context(), "idempotency key taken over after its lease ran out: the handler runs again",
				"endpoint", endpoint, "merchant_account_id", c.MerchantAccountID)
		}
		r = r.WithContext(d.Idempotency.WithRun(r.Context(), s, claim.Owner))
		return d.runClaimed(w, r, c, s, claim.Owner, run)
	}
}

// runClaimed runs h with the claim on s held, and completes or releases it.
func (d Deps) runClaimed(w http.ResponseWriter, r *http.Request, c Caller, s idempotency.Scope, owner string, h CallerHandler) error {
	done := false
	defer func() {
		if !done { // a 5xx, a timeout, a panic
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), completeTimeout)
			defer cancel()
			if err := d.Idempotency.Release(ctx, s, owner); err != nil {
				// The claim's lease frees the key in its time.
				d.Log.ErrorContext(ctx, "idempotency key: could not give it back", "endpoint", s.Endpoint, "err", err)
			}
		}
	}()
	buf := &buffer{header: http.Header{}}
	rec := &statusWriter{ResponseWriter: buf}
	if err := h(rec, r, c); err != nil {
		e := envelope(r, timedOut(r.Context(), err))
		if e.Status >= 500 {
			return err
		}
		// The error envelope replaces whatever h had written.
		buf = &buffer{header: http.Header{"Content-Type": {"application/json"}}}
		rec = &statusWriter{ResponseWriter: buf}
		rec.WriteHeader(e.Status)
		_, _ = rec.Write(e.JSON())
	}
	resp := idempotency.Response{Status: rec.code(), ContentType: buf.header.Get("Content-Type"), Body: buf.body.Bytes()}
	if resp.Status < 500 {
		done = true
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), completeTimeout)
		defer cancel()
		if err := d.Idempotency.Complete(ctx, s, owner, resp); err != nil {
			// The work is done: its answer goes to the client regardless.
			// A retry then finds the claim (its lease) or the response of
			// the request that took it over.
			d.Log.ErrorContext(ctx, "idempotency key: the response was not stored", "endpoint", s.Endpoint, "err", err)
		}
	}
	for k, v := range buf.header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	_, err := w.Write(resp.Body)
	return err
}

// writeStored writes a stored response.
func writeStored(w http.ResponseWriter, resp idempotency.Response) error {
	if resp.ContentType != "" {
		w.Header().Set("Content-Type", resp.ContentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, err := w.Write(resp.Body)
	return err
}

var (
	errKeyReused   = apierror.IdempotencyKeyReused("this Idempotency-Key was used with a different request; use a new key for a new request")
	errKeyInFlight = apierror.ConcurrentRequest("a request with this Idempotency-Key is still being processed; retry later")
)

// idempotencyKey returns the request's Idempotency-Key, ok false when it
// has none. A key is 1 to 255 printable ASCII characters (space to
// tilde): what any client library generates (UUIDs, random strings), and
// nothing that a log line or a header could render ambiguously.
func idempotencyKey(h http.Header) (key string, ok bool, err error) {
	vs := h.Values(idempotency.Header)
	if len(vs) == 0 {
		return "", false, nil
	}
	bad := len(vs) > 1 || len(vs[0]) == 0 || len(vs[0]) > idempotency.MaxKeyLength
	for i := 0; !bad && i < len(vs[0]); i++ {
		bad = vs[0][i] < ' ' || vs[0][i] > '~'
	}
	if bad {
		return "", false, errBadKey
	}
	return vs[0], true, nil
}

var errBadKey = apierror.BadRequest("invalid Idempotency-Key header", apierror.Detail{
	Location: apierror.LocationHeader, Pointer: idempotency.Header,
	Message: "must be given once, 1 to 255 printable ASCII characters (space to ~)", Type: "value_error.idempotency_key",
})

// buffer holds a response, to be stored before it is sent; a statusWriter
// over it tracks the status.
type buffer struct {
	header http.Header
	body   bytes.Buffer
}

func (b *buffer) Header() http.Header         { return b.header }
func (b *buffer) WriteHeader(int)             {}
func (b *buffer) Write(p []byte) (int, error) { return b.body.Write(p) }
