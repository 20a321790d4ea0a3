package requestid

import "net/http"

// Middleware gives every request an id: the incoming X-Request-Id if it is
// Valid, else a new one. The id is put in the request context, echoed in the
// response header (set before next runs, so it is there even when next
// writes the header itself), and written to the request's own header so
// that a proxy forwarding the request passes the id on, not the rejected
// one.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		incoming := r.Header.Get(Header)
		id := Resolve(incoming)
		w.Header().Set(Header, id)
		r = r.WithContext(WithID(r.Context(), id))
		if id != incoming || len(r.Header.Values(Header)) > 1 {
			// Handlers must not modify the request they were given, and
			// WithContext shares the header map, so the header is cloned.
			h := r.Header.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set(Header, id)
			r.Header = h
		}
		next.ServeHTTP(w, r)
	})
}
