package coreapi

import (
	"slices"
	"time"
)

// DashboardRole is what a dashboard user may do; it maps to the API
// scopes of the bearer tokens the dashboard obtains (Scopes).
type DashboardRole string

// Dashboard roles.
const (
	// RoleAdmin may read and change everything in its merchant accounts.
	RoleAdmin DashboardRole = "admin"
	// RoleDeveloper may read everything and change the integration's
	// settings (vault forwarding, payment services, 3-D Secure scenarios,
	// webhook subscriptions), but moves no money and edits no buyer.
	RoleDeveloper DashboardRole = "developer"
	// RoleViewer may only read.
	RoleViewer DashboardRole = "viewer"
)

// DashboardRoles lists the roles, for error messages.
var DashboardRoles = []DashboardRole{RoleAdmin, RoleDeveloper, RoleViewer}

// Valid reports whether r is a known role.
func (r DashboardRole) Valid() bool { return slices.Contains(DashboardRoles, r) }

// Scopes returns the API scopes of the role's tokens; nil for an unknown
// role.
func (r DashboardRole) Scopes() []string {
	switch r {
	case RoleAdmin:
		return []string{"*.write"}
	case RoleDeveloper:
		return []string{"*.read", "vault-forward-configs.write", "payment-services.write",
			"three-ds-scenarios.write", "webhook-subscriptions.write"}
	case RoleViewer:
		return []string{"*.read"}
	}
	return nil
}

// DashboardUser is a person who signs in to the merchant dashboard.
type DashboardUser struct {
	ID    string
	Email string // lower case
	// PasswordHash is an argon2id PHC string; never rendered.
	PasswordHash string
	Role         DashboardRole
	// MerchantAccountIDs are the accounts the user may act in; ["*"]
	// means every account of the instance.
	MerchantAccountIDs []string
	// FailedSignIns counts the failed sign-ins since the last success;
	// LockedUntil, when after now, refuses every sign-in.
	FailedSignIns int
	LockedUntil   time.Time
	// MustChangePassword: the password was generated (by `core-api user
	// add` or an admin), so someone else has seen it; until the user sets
	// their own, their sessions may only change it, be read and end.
	MustChangePassword bool
	CreatedAt          time.Time
}

// DashboardSession is a signed-in browser. The cookie's token is known
// only by its SHA-256.
type DashboardSession struct {
	TokenHash []byte
	UserID    string
	CSRFToken string
	CreatedAt time.Time
	ExpiresAt time.Time
	// LastSeenAt is when the session was last used, kept to the minute:
	// idle past the idle timeout, the session ends before ExpiresAt.
	LastSeenAt time.Time
}
