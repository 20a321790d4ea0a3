package httpapi

import (
	"errors"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/shared/apierror"
)

// The dashboard's team routes (docs/dashboard.md): session-authenticated,
// with the CSRF and Origin checks of every state-changing dashboard route.

type teamUserJSON struct {
	Type               string   `json:"type"`
	ID                 string   `json:"id"`
	Email              string   `json:"email"`
	Role               string   `json:"role"`
	MerchantAccountIDs []string `json:"merchant_account_ids"`
	Manageable         bool     `json:"manageable"`
	LockedUntil        *string  `json:"locked_until"`
	MustChangePassword bool     `json:"must_change_password"`
	CreatedAt          string   `json:"created_at"`
	// Password is the generated password, in the answer to the user's
	// creation or password reset only.
	Password string `json:"password,omitempty"`
}

// teamUser renders u as the admin sees them; a lockout already over is
// none.
func teamUser(u dashboard.TeamMember, now time.Time) teamUserJSON {
	j := teamUserJSON{Type: "dashboard-user", ID: u.ID, Email: u.Email, Role: string(u.Role),
		MerchantAccountIDs: u.MerchantAccountIDs, Manageable: u.Manageable, MustChangePassword: u.MustChangePassword,
		CreatedAt: timestamp(u.CreatedAt)}
	if now.Before(u.LockedUntil) {
		t := timestamp(u.LockedUntil)
		j.LockedUntil = &t
	}
	return j
}

type teamListJSON struct {
	Items []teamUserJSON `json:"items"`
}

// teamError maps the team's errors to the envelope.
func teamError(w http.ResponseWriter, err error) error {
	var inv *dashboard.InvalidUserError
	var forbidden *dashboard.ForbiddenError
	var rule *dashboard.RuleError
	var locked *dashboard.LockedError
	switch {
	case errors.As(err, &inv):
		return domainError(&coreapi.ValidationError{Problems: inv.Problems}, "")
	case errors.Is(err, dashboard.ErrPasswordChangeRequired):
		return errMustChange
	case errors.Is(err, dashboard.ErrNotAdmin):
		return apierror.Forbidden(err.Error())
	case errors.As(err, &forbidden):
		return apierror.Forbidden(forbidden.Message)
	case errors.As(err, &rule):
		return apierror.Unprocessable(rule.Message)
	case errors.As(err, &locked):
		return lockedOut(w, locked)
	}
	return domainError(err, "dashboard user")
}

// teamTarget checks the admin's session as for any change (CSRF and Origin
// included) and reads the user the path names.
func (h dashboardHandlers) teamTarget(r *http.Request) (*dashboard.Session, string, error) {
	s, err := h.unrestricted(r, true)
	if err != nil {
		return nil, "", err
	}
	id, err := pathUUID(r, "user_id")
	if err != nil {
		return nil, "", err
	}
	return s, id, nil
}

// writeTeamUser answers with u as s sees them, and the password generated
// for them if any: an answer carrying one must never be cached.
func writeTeamUser(w http.ResponseWriter, status int, s *dashboard.Session, u *coreapi.DashboardUser, password string) error {
	out := teamUser(dashboard.SeenBy(s, u), time.Now())
	if password != "" {
		out.Password = password
		w.Header().Set("Cache-Control", "no-store")
	}
	return WriteJSON(w, status, out)
}

func (h dashboardHandlers) team(w http.ResponseWriter, r *http.Request) error {
	s, err := h.unrestricted(r, false)
	if err != nil {
		return err
	}
	users, err := h.Service.Team(r.Context(), s)
	if err != nil {
		return teamError(w, err)
	}
	out := teamListJSON{Items: make([]teamUserJSON, len(users))}
	now := time.Now()
	for i, u := range users {
		out.Items[i] = teamUser(u, now)
	}
	w.Header().Set("Cache-Control", "no-store")
	return WriteJSON(w, http.StatusOK, out)
}

type addTeamUserRequest struct {
	Email              string   `json:"email"`
	Role               string   `json:"role"`
	MerchantAccountIDs []string `json:"merchant_account_ids"`
}

func (h dashboardHandlers) addUser(w http.ResponseWriter, r *http.Request) error {
	s, err := h.unrestricted(r, true)
	if err != nil {
		return err
	}
	var req addTeamUserRequest
	if err := DecodeStrict(r, &req); err != nil {
		return err
	}
	u, password, err := h.Service.AddTeamUser(r.Context(), s, dashboard.TeamUser{Email: req.Email,
		Role: coreapi.DashboardRole(req.Role), MerchantAccountIDs: req.MerchantAccountIDs})
	if err != nil {
		return teamError(w, err)
	}
	return writeTeamUser(w, http.StatusCreated, s, u, password)
}

type changeTeamUserRequest struct {
	Role               coreapi.Optional[string]   `json:"role"`
	MerchantAccountIDs coreapi.Optional[[]string] `json:"merchant_account_ids"`
}

func (h dashboardHandlers) changeUser(w http.ResponseWriter, r *http.Request) error {
	s, id, err := h.teamTarget(r)
	if err != nil {
		return err
	}
	var req changeTeamUserRequest
	if err := DecodeStrict(r, &req); err != nil {
		return err
	}
	// Neither field can be cleared: null is refused, not read as absent.
	var nulls []apierror.Detail
	for _, f := range []struct {
		pointer   string
		set, null bool
	}{{"/role", req.Role.Set, req.Role.Null}, {"/merchant_account_ids", req.MerchantAccountIDs.Set, req.MerchantAccountIDs.Null}} {
		if f.set && f.null {
			nulls = append(nulls, apierror.Detail{Location: apierror.LocationBody, Pointer: f.pointer,
				Message: "must not be null: omit the field to keep its value", Type: "type_error.none.not_allowed"})
		}
	}
	if len(nulls) > 0 {
		return apierror.BadRequest("invalid request body", nulls...)
	}
	var c dashboard.TeamUserChange
	if req.Role.Set {
		role := coreapi.DashboardRole(req.Role.Value)
		c.Role = &role
	}
	if req.MerchantAccountIDs.Set {
		c.MerchantAccountIDs = req.MerchantAccountIDs.Value
		if c.MerchantAccountIDs == nil {
			c.MerchantAccountIDs = []string{} // [] is a value, refused as no account at all
		}
	}
	u, err := h.Service.ChangeTeamUser(r.Context(), s, id, c)
	if err != nil {
		return teamError(w, err)
	}
	return writeTeamUser(w, http.StatusOK, s, u, "")
}

func (h dashboardHandlers) removeUser(w http.ResponseWriter, r *http.Request) error {
	s, id, err := h.teamTarget(r)
	if err != nil {
		return err
	}
	if err := h.Service.RemoveTeamUser(r.Context(), s, id); err != nil {
		return teamError(w, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h dashboardHandlers) unlockUser(w http.ResponseWriter, r *http.Request) error {
	s, id, err := h.teamTarget(r)
	if err != nil {
		return err
	}
	u, err := h.Service.UnlockTeamUser(r.Context(), s, id)
	if err != nil {
		return teamError(w, err)
	}
	return writeTeamUser(w, http.StatusOK, s, u, "")
}

func (h dashboardHandlers) resetUserPassword(w http.ResponseWriter, r *http.Request) error {
	s, id, err := h.teamTarget(r)
	if err != nil {
		return err
	}
	u, password, err := h.Service.ResetTeamUserPassword(r.Context(), s, id)
	if err != nil {
		return teamError(w, err)
	}
	return writeTeamUser(w, http.StatusOK, s, u, password)
}

type changePasswordRequest struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

func (h dashboardHandlers) changePassword(w http.ResponseWriter, r *http.Request) error {
	s, _, err := h.current(r, true)
	if err != nil {
		return err
	}
	var req changePasswordRequest
	if err := DecodeStrict(r, &req); err != nil {
		return err
	}
	if err := h.Service.ChangePassword(r.Context(), s, req.CurrentPassword, req.NewPassword); err != nil {
		return teamError(w, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
