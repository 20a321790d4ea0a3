package mockcard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/health"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/requestid"
)

// server is the simulator's HTTP API (docs/sandbox/mock-card.md).
type server struct {
	store   *store
	gifts   *giftStore
	log     *slog.Logger
	now     func() time.Time
	hold    time.Duration
	closing <-chan struct{} // closed when the simulator stops: held answers go at once
	mux     *http.ServeMux
	handler http.Handler // mux behind the request ids
	notify  *notifier    // nil: results that come later are never sent (tests)
}

// reply is a route's answer.
type reply struct {
	status int
	body   []byte
	replay bool // a stored answer, sent again for its idempotency key
	held   bool // the processing amount: wait before answering
}

// route serves one method of one path; an error becomes the envelope.
type route func(r *http.Request) (reply, error)

// methods are the routes of one path, by method.
type methods map[string]route

func newServer(st *store, log *slog.Logger, now func() time.Time, hold time.Duration, closing <-chan struct{}) *server {
	s := &server{store: st, gifts: newGiftStore(st.max, st.fingerprint), log: log, now: now, hold: hold, closing: closing, mux: http.NewServeMux()}
	s.giftRoutes()
	s.handle("/v1/authorizations", methods{http.MethodPost: s.authorize, http.MethodGet: s.lookup})
	s.handle("/v1/authorizations/{id}", methods{http.MethodGet: s.get})
	for _, op := range []opKind{captureOp, voidOp, refundOp} {
		s.handle("/v1/authorizations/{id}/"+op.name, methods{http.MethodPost: s.operate(op)})
	}
	s.handle("/sandbox/stats", methods{http.MethodGet: s.stats})
	s.handle("/healthz", methods{http.MethodGet: func(*http.Request) (reply, error) { return jsonReply(http.StatusOK, health.Alive) }})
	s.handle("/readyz", methods{http.MethodGet: func(r *http.Request) (reply, error) { // no dependency to check
		return jsonReply(health.Ready(r.Context(), s.log, nil))
	}})
	s.handle("/", nil) // every other path
	s.handler = requestid.Middleware(s.mux)
	return s
}

// ServeHTTP gives the request an id (X-Request-Id, in every error body
// and log line) and routes it.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// handle registers the methods of pattern; nil answers 404.
func (s *server) handle(pattern string, ms methods) {
	allow := strings.Join(slices.Sorted(maps.Keys(ms)), ", ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var rep reply
		var err error
		h, ok := ms[r.Method]
		var denied error // the processor's own routes need an API key
		if ok && strings.HasPrefix(pattern, "/v1/") {
			denied = checkAPIKey(r)
		}
		switch {
		case ms == nil:
			err = apierror.NotFound("route not found")
		case denied != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="mock-card"`)
			err = denied
		case !ok:
			w.Header().Set("Allow", allow)
			err = apierror.MethodNotAllowed("method not allowed on this route")
		default:
			rep, err = h(r)
		}
		if err != nil {
			rep = s.errorReply(r, err)
		}
		if rep.held {
			s.holdAnswer(r.Context())
		}
		write(w, rep)
		end := time.Now()
		// The path only: never the query (an idempotency key) or the body.
		logging.LogAccess(r.Context(), s.log.Handler(), logging.AccessLine{Time: end, Method: r.Method, Path: r.URL.Path,
			Status: rep.status, Duration: end.Sub(start)})
	})
}

// errProcessor is the answer of AmountProcessorError.
var errProcessor = apierror.New(http.StatusInternalServerError, "processor_error",
	"the processor failed to process the authorization; nothing was recorded")

func (s *server) errorReply(r *http.Request, err error) reply {
	e := apierror.As(err).WithRequestID(requestid.FromContext(r.Context()))
	if e.Status >= 500 && !errors.Is(err, errProcessor) {
		s.log.ErrorContext(r.Context(), "request failed", "code", e.Code, "err", err)
	}
	return reply{status: e.Status, body: e.JSON()}
}

// holdAnswer waits out the processing amount's hold: until the client
// gives up, the hold ends or the simulator stops. Nothing is locked.
func (s *server) holdAnswer(ctx context.Context) {
	t := time.NewTimer(s.hold)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-s.closing:
	}
}

func write(w http.ResponseWriter, rep reply) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(rep.body)))
	h.Set("X-Content-Type-Options", "nosniff")
	if rep.replay {
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
}

func jsonReply(status int, v any) (reply, error) {
	b, err := json.Marshal(v)
	return reply{status: status, body: b}, err
}

// authorize is POST /v1/authorizations.
func (s *server) authorize(r *http.Request) (reply, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return reply{}, err
	}
	var req authorizeRequest
	if err := decodeBody(r, &req, false); err != nil {
		return reply{}, err
	}
	if err := req.validate(); err != nil {
		return reply{}, err
	}
	// The security code does not count: vault-proxy fills it in once, so
	// a connector sending its request again cannot send it again.
	same := req
	same.Card.SecurityCode = ""
	f := s.store.fingerprint(&same)
	// The answer is made before the store is locked; a duplicate's is
	// thrown away.
	var a *Authorization
	var body []byte
	if req.Amount != AmountProcessorError {
		now := s.now()
		v := decide(&req, now)
		if a = newAuthorization(key, &req, v, now); v.pending {
			a = pendingAuthorization(a)
		}
		if body, err = json.Marshal(a); err != nil {
			return reply{}, err
		}
	}
	st, replay, err := s.store.authorize(key, f, a, body)
	if errors.Is(err, errNoStoredReply) {
		return reply{}, errProcessor
	}
	if err != nil {
		return reply{}, err
	}
	if !replay && a.Status == statusPending {
		s.settleLater(a.ID, "", "")
	}
	return reply{status: st.status, body: st.body, replay: replay, held: req.Amount == AmountHeld && !replay}, nil
}

// operate is POST /v1/authorizations/{id}/captures, voids or refunds.
func (s *server) operate(op opKind) route {
	return func(r *http.Request) (reply, error) {
		key, err := idempotencyKey(r)
		if err != nil {
			return reply{}, err
		}
		var f fingerprint
		var amount *int64
		if op.name == voidOp.name {
			var req voidRequest
			if err := decodeBody(r, &req, true); err != nil {
				return reply{}, err
			}
			f = s.store.fingerprint(req)
		} else {
			var req amountRequest
			if err := decodeBody(r, &req, true); err != nil {
				return reply{}, err
			}
			if err := req.validate(); err != nil {
				return reply{}, err
			}
			f, amount = s.store.fingerprint(req), req.Amount
		}
		st, replay, err := s.store.operate(r.PathValue("id"), op, key, f, amount, s.now())
		if err != nil {
			return reply{}, err
		}
		if _, ok := pendingOperations[deref(amount)]; ok && !replay && op.name != voidOp.name {
			s.settleLater(r.PathValue("id"), op.name, key)
		}
		return reply{status: st.status, body: st.body, replay: replay}, nil
	}
}

// get is GET /v1/authorizations/{id}.
func (s *server) get(r *http.Request) (reply, error) {
	b, err := s.store.get(r.PathValue("id"))
	return reply{status: http.StatusOK, body: b}, err
}

// lookup is GET /v1/authorizations?idempotency_key=: how a connector
// that lost an answer finds what its request did.
func (s *server) lookup(r *http.Request) (reply, error) {
	key, err := keyParam(r)
	if err != nil {
		return reply{}, err
	}
	b, err := s.store.lookup(key)
	return reply{status: http.StatusOK, body: b}, err
}

// stats is GET /sandbox/stats[?idempotency_key=].
func (s *server) stats(r *http.Request) (reply, error) {
	key := ""
	if r.URL.Query().Has("idempotency_key") {
		var err error
		if key, err = keyParam(r); err != nil {
			return reply{}, err
		}
	}
	return jsonReply(http.StatusOK, s.store.stats(key))
}
