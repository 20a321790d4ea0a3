package httpapi

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/dashboard/web"
	"github.com/payorch/shared/apierror"
)

// SessionCookie is the dashboard's session cookie. The __Host- prefix
// makes browsers refuse it unless it is Secure, host-only and on path /.
const SessionCookie = "__Host-payorch-session"

// CodePasswordChangeRequired is the 403 of every dashboard route but the
// password change, the session's read and sign-out, while the user must
// change a generated password.
const CodePasswordChangeRequired = "password_change_required"

// CSRFHeader carries the session's anti-CSRF token on every
// state-changing dashboard request.
const CSRFHeader = "X-CSRF-Token"

// DashboardDeps is the dashboard's sign-in; nil Service: no dashboard.
type DashboardDeps struct {
	Service *dashboard.Service
	// Origin is the dashboard's origin (scheme://host[:port]): requests
	// that carry another Origin are refused.
	Origin string
	// Limiter bounds sign-in attempts per client address; nil: none.
	Limiter *RateLimiter
	// Web is the single-page app.
	Web web.Site
}

func dashboardRoutes(rt *Router, d DashboardDeps) {
	if d.Service == nil {
		return
	}
	h := dashboardHandlers{d}
	rt.Handle("POST /dashboard/sign-in", h.signIn)
	rt.Handle("POST /dashboard/sign-out", h.signOut)
	rt.Handle("GET /dashboard/session", h.session)
	rt.Handle("POST /dashboard/token", h.token)
	rt.Handle("POST /dashboard/password", h.changePassword)
	rt.Handle("GET /dashboard/users", h.team)
	rt.Handle("POST /dashboard/users", h.addUser)
	rt.Handle("PUT /dashboard/users/{user_id}", h.changeUser)
	rt.Handle("DELETE /dashboard/users/{user_id}", h.removeUser)
	rt.Handle("POST /dashboard/users/{user_id}/unlock", h.unlockUser)
	rt.Handle("POST /dashboard/users/{user_id}/password-reset", h.resetUserPassword)
	rt.Handle("GET /{$}", h.page)
	rt.Handle("GET /dashboard/assets/{name}", h.asset)
}

// pageHeaders lock the page to its own assets and to calling core-api and
// vault-proxy; nothing is cached without revalidation.
func (h dashboardHandlers) pageHeaders(w http.ResponseWriter, contentType string) {
	w.Header().Set("Content-Security-Policy", h.Web.CSP())
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", contentType)
}

func (h dashboardHandlers) page(w http.ResponseWriter, r *http.Request) error {
	h.pageHeaders(w, "text/html; charset=utf-8")
	return h.Web.WritePage(w)
}

func (h dashboardHandlers) asset(w http.ResponseWriter, r *http.Request) error {
	data, ctype, ok := web.Asset(r.PathValue("name"))
	if !ok {
		return apierror.NotFound("route not found")
	}
	h.pageHeaders(w, ctype)
	_, err := w.Write(data)
	return err
}

type dashboardHandlers struct{ DashboardDeps }

type dashboardUserJSON struct {
	ID                 string   `json:"id"`
	Email              string   `json:"email"`
	Role               string   `json:"role"`
	MerchantAccountIDs []string `json:"merchant_account_ids"`
	MustChangePassword bool     `json:"must_change_password"`
}

type dashboardSessionJSON struct {
	Type          string            `json:"type"`
	CSRFToken     string            `json:"csrf_token"`
	ExpiresAt     time.Time         `json:"expires_at"`
	IdleExpiresAt time.Time         `json:"idle_expires_at"`
	User          dashboardUserJSON `json:"user"`
}

func dashboardSession(s *dashboard.Session) dashboardSessionJSON {
	return dashboardSessionJSON{Type: "dashboard-session", CSRFToken: s.CSRFToken, ExpiresAt: s.ExpiresAt.UTC(),
		IdleExpiresAt: s.IdleExpiresAt.UTC(), User: dashboardUserJSON{ID: s.User.ID, Email: s.User.Email, Role: string(s.User.Role),
			MerchantAccountIDs: s.User.MerchantAccountIDs, MustChangePassword: s.User.MustChangePassword}}
}

var (
	errCrossOrigin  = apierror.Forbidden("cross-origin request refused")
	errCSRF         = apierror.Forbidden("missing or invalid " + CSRFHeader + " header")
	errNotSignedIn  = apierror.Unauthorized("not signed in")
	errBadSignIn    = apierror.Unauthorized(dashboard.ErrBadCredentials.Error())
	errSignInBudget = apierror.TooManyRequests("too many sign-in attempts from this address; try again in a minute")
	errMustChange   = apierror.New(http.StatusForbidden, CodePasswordChangeRequired, dashboard.ErrPasswordChangeRequired.Error())
)

// sameOrigin refuses a request a browser sent from another site: its
// Origin header, when present, must be the dashboard's, and its
// Sec-Fetch-Site must not be cross-site or same-site. Browsers send both
// on every cross-origin POST; a request without them comes from no
// browser page, and cannot carry the session's SameSite=Strict cookie
// from one.
func (h dashboardHandlers) sameOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && o != h.Origin {
		return errCrossOrigin
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return errCrossOrigin
	}
	return nil
}

// current is the request's live session, after the CSRF checks when the
// request changes state.
func (h dashboardHandlers) current(r *http.Request, changes bool) (*dashboard.Session, string, error) {
	if changes {
		if err := h.sameOrigin(r); err != nil {
			return nil, "", err
		}
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil, "", errNotSignedIn
	}
	s, err := h.Service.Session(r.Context(), c.Value)
	if errors.Is(err, dashboard.ErrNoSession) {
		return nil, "", errNotSignedIn
	}
	if err != nil {
		return nil, "", err
	}
	if changes && subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(s.CSRFToken)) != 1 {
		return nil, "", errCSRF
	}
	return s, c.Value, nil
}

// unrestricted is current for the routes a user who must change their
// password may not use: refused before the body is read.
func (h dashboardHandlers) unrestricted(r *http.Request, changes bool) (*dashboard.Session, error) {
	s, _, err := h.current(r, changes)
	if err != nil {
		return nil, err
	}
	if s.Unrestricted() != nil {
		return nil, errMustChange
	}
	return s, nil
}

// lockedOut is the answer to a locked-out user: 429, with when to retry.
func lockedOut(w http.ResponseWriter, locked *dashboard.LockedError) error {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(time.Until(locked.Until).Seconds())+1)))
	return apierror.TooManyRequests(locked.Error())
}

type signInRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (h dashboardHandlers) signIn(w http.ResponseWriter, r *http.Request) error {
	if err := h.sameOrigin(r); err != nil {
		return err
	}
	if !h.Limiter.Allow(clientAddr(r), time.Now()) {
		w.Header().Set("Retry-After", "60")
		return errSignInBudget
	}
	var req signInRequest
	if err := DecodeStrict(r, &req); err != nil {
		return err
	}
	s, err := h.Service.SignIn(r.Context(), req.Email, req.Password)
	var locked *dashboard.LockedError
	switch {
	case errors.Is(err, dashboard.ErrBadCredentials):
		return errBadSignIn
	case errors.As(err, &locked):
		return lockedOut(w, locked)
	case err != nil:
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.Token, Path: "/", Expires: s.ExpiresAt,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	w.Header().Set("Cache-Control", "no-store")
	return WriteJSON(w, http.StatusOK, dashboardSession(s))
}

func (h dashboardHandlers) signOut(w http.ResponseWriter, r *http.Request) error {
	_, token, err := h.current(r, true)
	if err != nil {
		return err
	}
	if err := h.Service.SignOut(r.Context(), token); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// session is the page's check of its session: it does not count as a
// use, so an open page does not keep an idle session alive.
func (h dashboardHandlers) session(w http.ResponseWriter, r *http.Request) error {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return errNotSignedIn
	}
	s, err := h.Service.PeekSession(r.Context(), c.Value)
	if errors.Is(err, dashboard.ErrNoSession) {
		return errNotSignedIn
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return WriteJSON(w, http.StatusOK, dashboardSession(s))
}

type dashboardTokenJSON struct {
	Type               string    `json:"type"`
	AccessToken        string    `json:"access_token"`
	TokenType          string    `json:"token_type"`
	ExpiresAt          time.Time `json:"expires_at"`
	ExpiresIn          int       `json:"expires_in"`
	Scopes             []string  `json:"scopes"`
	MerchantAccountIDs []string  `json:"merchant_account_ids"`
}

func (h dashboardHandlers) token(w http.ResponseWriter, r *http.Request) error {
	s, err := h.unrestricted(r, true)
	if err != nil {
		return err
	}
	t, err := h.Service.Token(s)
	if errors.Is(err, dashboard.ErrNoSession) {
		return errNotSignedIn
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return WriteJSON(w, http.StatusOK, dashboardTokenJSON{Type: "dashboard-token", AccessToken: t.AccessToken,
		TokenType: "Bearer", ExpiresAt: t.ExpiresAt.UTC(), ExpiresIn: int(time.Until(t.ExpiresAt).Seconds()),
		Scopes: t.Scopes, MerchantAccountIDs: t.MerchantAccountIDs})
}

// clientAddr is the request's peer address without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// RateLimiter allows Limit events per key in each window of Window, a
// fixed-window count kept in memory (per instance: a lockout in the
// database is what holds across instances).
type RateLimiter struct {
	Limit  int
	Window time.Duration

	mu     sync.Mutex
	start  time.Time
	counts map[string]int
}

// Allow counts one event of key at now and reports whether it is within
// the limit. A nil limiter allows everything.
func (l *RateLimiter) Allow(key string, now time.Time) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil || now.Sub(l.start) >= l.Window {
		l.start, l.counts = now, map[string]int{}
	}
	l.counts[key]++
	return l.counts[key] <= l.Limit
}
