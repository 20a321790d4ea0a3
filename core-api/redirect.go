package coreapi

import (
	"errors"
	"net/url"
	"time"
)

// MethodGCash is a push payment the buyer approves in the GCash wallet,
// reached by a redirect.
const MethodGCash = "gcash"

// RedirectMethods are the methods paid by a redirect to the buyer's
// wallet or bank: the payment needs a redirect_url, and waits for the
// buyer (buyer_approval_pending, with an approval_url) until its
// reference expires (ApprovalExpiresAt).
var RedirectMethods = []string{MethodGCash}

// ErrMissingRedirectURL is a redirect payment without redirect_url.
var ErrMissingRedirectURL = errors.New("a redirect payment needs redirect_url: where the buyer returns after approving")

// Codes of a refused approval_expires_at (ApprovalExpiryError.Code).
const (
	CodeApprovalExpiresInPast       = "approval_expires_at_in_past"
	CodeApprovalExpiresBeyondWindow = "approval_expires_at_beyond_window"
)

// ApprovalExpiryError is an expiry of a push payment's reference that
// the connector cannot take: not in the future, or beyond its maximum
// window. Pointer is where it was given (/approval_expires_at, or the
// connector's entry of connection_options).
type ApprovalExpiryError struct {
	Code      string
	Pointer   string
	MaxWindow time.Duration
}

func (e *ApprovalExpiryError) Error() string {
	if e.Code == CodeApprovalExpiresInPast {
		return "approval_expires_at must be in the future"
	}
	return "approval_expires_at is beyond the connector's maximum window of " + e.MaxWindow.String()
}

// ApprovalExpiry is when a push payment's reference expires, given the
// request's approval_expires_at (nil: none), the connector's entry of
// connection_options' override (nil: none, which wins when given) and
// the connector's default and maximum windows, at now.
func ApprovalExpiry(requested, override *time.Time, overridePointer string, def, maxWindow time.Duration, now time.Time) (time.Time, error) {
	at, pointer := now.Add(def), ""
	switch {
	case override != nil:
		at, pointer = *override, overridePointer
	case requested != nil:
		at, pointer = *requested, "/approval_expires_at"
	}
	if pointer == "" {
		return at.UTC().Truncate(time.Second), nil
	}
	if !at.After(now) {
		return time.Time{}, &ApprovalExpiryError{Code: CodeApprovalExpiresInPast, Pointer: pointer, MaxWindow: maxWindow}
	}
	if at.Sub(now) > maxWindow {
		return time.Time{}, &ApprovalExpiryError{Code: CodeApprovalExpiresBeyondWindow, Pointer: pointer, MaxWindow: maxWindow}
	}
	return at.UTC(), nil
}

// validRedirectURL reports whether s is an absolute http(s) URL a buyer
// can be sent to.
func validRedirectURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && len(s) <= maxURLLen
}
