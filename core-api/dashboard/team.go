package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/auth"
)

// TeamStore is what team management needs of the store.
type TeamStore interface {
	// DashboardUsers lists every user, by email.
	DashboardUsers(ctx context.Context) ([]*coreapi.DashboardUser, error)
	// EditDashboardTeam runs edit over every user as they are, in one
	// transaction that no other edit runs alongside, and stores what it
	// returns: two admins demoting each other at once cannot both pass
	// the last-admin rule.
	EditDashboardTeam(ctx context.Context, edit func(users []*coreapi.DashboardUser) (TeamEdit, error)) error
	// UnlockDashboardUser clears the user's failures and lockout.
	UnlockDashboardUser(ctx context.Context, id string) (*coreapi.DashboardUser, error)
}

// TeamEdit is one change of the team: Update's role and merchant
// accounts are written, or the user DeleteID is removed (its sessions
// with it), or Reset's password is written.
type TeamEdit struct {
	Update   *coreapi.DashboardUser
	DeleteID string
	Reset    *PasswordReset
}

// PasswordReset is an admin's reset of a user's password: the hash of a
// generated one, which the user must change; it clears their lockout and
// ends every session of theirs.
type PasswordReset struct {
	UserID string
	Hash   string
}

// Errors of team management.
var (
	// ErrNotAdmin is a team request by a developer or a viewer (403).
	ErrNotAdmin = errors.New("only an admin may manage the dashboard's users")
)

// ForbiddenError is a change an admin may not make: a user or an account
// outside the admin's own merchant accounts (403).
type ForbiddenError struct{ Message string }

func (e *ForbiddenError) Error() string { return e.Message }

// RuleError is a change that breaks a rule of the team (422): the last
// admin of an account, or the admin's own user.
type RuleError struct{ Message string }

func (e *RuleError) Error() string { return e.Message }

// TeamUser is what an admin gives to add a user; the password is
// generated.
type TeamUser struct {
	Email              string
	Role               coreapi.DashboardRole
	MerchantAccountIDs []string
}

// TeamUserChange is what an admin changes of a user; nil keeps it.
type TeamUserChange struct {
	Role               *coreapi.DashboardRole
	MerchantAccountIDs []string
}

// covers reports whether accounts include id, "*" including every one
// (and only "*" covering "*").
func covers(accounts []string, id string) bool {
	return slices.Contains(accounts, auth.AllMerchantAccounts) || slices.Contains(accounts, id)
}

// within reports whether every account of ids is one of accounts.
func within(accounts, ids []string) bool {
	for _, id := range ids {
		if !covers(accounts, id) {
			return false
		}
	}
	return true
}

// shares reports whether a user of accounts and one of ids have an
// account in common: an admin sees the users that share one of theirs.
func shares(accounts, ids []string) bool {
	if slices.Contains(accounts, auth.AllMerchantAccounts) || slices.Contains(ids, auth.AllMerchantAccounts) {
		return true
	}
	for _, id := range ids {
		if slices.Contains(accounts, id) {
			return true
		}
	}
	return false
}

func requireAdmin(actor *Session) error {
	if err := actor.Unrestricted(); err != nil {
		return err
	}
	if actor.User.Role != coreapi.RoleAdmin {
		return ErrNotAdmin
	}
	return nil
}

// outside is the first of ids the actor does not administer, as a
// ForbiddenError, or nil.
func outside(actor *Session, ids []string) error {
	for _, id := range ids {
		if !covers(actor.User.MerchantAccountIDs, id) {
			if id == auth.AllMerchantAccounts {
				return &ForbiddenError{`only an admin of every merchant account may grant "*"`}
			}
			return &ForbiddenError{fmt.Sprintf("you do not administer merchant account %q", id)}
		}
	}
	return nil
}

// target finds id among users as actor may manage it: a user sharing none
// of actor's accounts is not found, one with accounts beyond actor's is
// forbidden.
func target(actor *Session, users []*coreapi.DashboardUser, id string) (*coreapi.DashboardUser, error) {
	i := slices.IndexFunc(users, func(u *coreapi.DashboardUser) bool { return u.ID == id })
	if i < 0 || !shares(actor.User.MerchantAccountIDs, users[i].MerchantAccountIDs) {
		return nil, fmt.Errorf("dashboard user: %w", coreapi.ErrNotFound)
	}
	if !within(actor.User.MerchantAccountIDs, users[i].MerchantAccountIDs) {
		return nil, &ForbiddenError{users[i].Email + " also has merchant accounts you do not administer"}
	}
	return users[i], nil
}

// fresh is actor as the team now is, under the team's lock: an admin
// demoted or removed by a concurrent edit acts no more.
func fresh(actor *Session, users []*coreapi.DashboardUser) (*Session, error) {
	i := slices.IndexFunc(users, func(u *coreapi.DashboardUser) bool { return u.ID == actor.User.ID })
	if i < 0 || users[i].Role != coreapi.RoleAdmin {
		return nil, ErrNotAdmin
	}
	a := *actor
	a.User = users[i]
	return &a, nil
}

// orphan is the account that would be left without an admin if before
// became after (nil: removed), or "".
func orphan(users []*coreapi.DashboardUser, before, after *coreapi.DashboardUser) string {
	if before.Role != coreapi.RoleAdmin {
		return ""
	}
	for _, id := range before.MerchantAccountIDs {
		if after != nil && after.Role == coreapi.RoleAdmin && covers(after.MerchantAccountIDs, id) {
			continue
		}
		if !slices.ContainsFunc(users, func(u *coreapi.DashboardUser) bool {
			return u.ID != before.ID && u.Role == coreapi.RoleAdmin && covers(u.MerchantAccountIDs, id)
		}) {
			return id
		}
	}
	return ""
}

func lastAdmin(u *coreapi.DashboardUser, account string) error {
	if account == auth.AllMerchantAccounts {
		return &RuleError{u.Email + " is the last admin of every merchant account (\"*\"): make another user such an admin first"}
	}
	return &RuleError{fmt.Sprintf("%s is the last admin of merchant account %q: make another user its admin first", u.Email, account)}
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// logChange records who changed what: ids, emails, roles and accounts,
// never a password.
func (s *Service) logChange(ctx context.Context, what string, actor *Session, u *coreapi.DashboardUser, attrs ...any) {
	attrs = append([]any{"by_user_id", actor.User.ID, "by_email", actor.User.Email, "user_id", u.ID, "email", u.Email}, attrs...)
	s.log().InfoContext(ctx, what, attrs...)
}

// TeamMember is a user as an admin sees them. Their merchant accounts
// are narrowed to those the admin holds too: the others belong to other
// merchants, whose account ids are none of this admin's business.
// Manageable tells whether the admin may change, unlock, reset or remove
// the user: all of the user's accounts are the admin's (the rule target
// enforces).
type TeamMember struct {
	coreapi.DashboardUser
	Manageable bool
}

// SeenBy is u as actor sees them in the team.
func SeenBy(actor *Session, u *coreapi.DashboardUser) TeamMember {
	m := TeamMember{DashboardUser: *u, Manageable: within(actor.User.MerchantAccountIDs, u.MerchantAccountIDs)}
	m.MerchantAccountIDs = sharedAccounts(actor.User.MerchantAccountIDs, u.MerchantAccountIDs)
	return m
}

// sharedAccounts is what a holder of accounts sees of ids: every one when
// accounts is "*"; otherwise those of ids in accounts, and all of
// accounts when ids is "*" (which includes them).
func sharedAccounts(accounts, ids []string) []string {
	switch {
	case slices.Contains(accounts, auth.AllMerchantAccounts):
		return slices.Clone(ids)
	case slices.Contains(ids, auth.AllMerchantAccounts):
		return slices.Clone(accounts)
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !slices.Contains(accounts, id) })
}

// Team lists the users who share one of the admin's merchant accounts, as
// the admin sees them (SeenBy).
func (s *Service) Team(ctx context.Context, actor *Session) ([]TeamMember, error) {
	if err := requireAdmin(actor); err != nil {
		return nil, err
	}
	users, err := s.Store.DashboardUsers(ctx)
	if err != nil {
		return nil, err
	}
	var out []TeamMember
	for _, u := range users {
		if shares(actor.User.MerchantAccountIDs, u.MerchantAccountIDs) {
			out = append(out, SeenBy(actor, u))
		}
	}
	return out, nil
}

// AddTeamUser adds a user in some of the admin's merchant accounts, with
// a generated password (128 random bits) returned once: the admin hands
// it over, and the user changes it.
func (s *Service) AddTeamUser(ctx context.Context, actor *Session, in TeamUser) (*coreapi.DashboardUser, string, error) {
	if err := requireAdmin(actor); err != nil {
		return nil, "", err
	}
	var p coreapi.Problems
	checkEmail(&p, in.Email)
	checkRole(&p, in.Role)
	checkAccounts(&p, in.MerchantAccountIDs)
	if err := invalid(p); err != nil {
		return nil, "", err
	}
	if err := outside(actor, in.MerchantAccountIDs); err != nil {
		return nil, "", err
	}
	password := rand.Text()
	u, err := s.AddUser(ctx, NewUser{Email: in.Email, Password: password, Role: in.Role, MerchantAccountIDs: in.MerchantAccountIDs,
		MustChangePassword: true})
	if err != nil {
		return nil, "", err
	}
	s.logChange(ctx, "dashboard user added", actor, u, "role", u.Role, "merchant_account_ids", u.MerchantAccountIDs)
	return u, password, nil
}

// editTeamUser runs edit over user id under the team's lock, with actor
// as the team now has them (fresh) and the user as actor may manage it
// (target), and stores what it returns.
func (s *Service) editTeamUser(ctx context.Context, actor *Session, id string,
	edit func(actor *Session, users []*coreapi.DashboardUser, u *coreapi.DashboardUser) (TeamEdit, error)) error {
	return s.Store.EditDashboardTeam(ctx, func(users []*coreapi.DashboardUser) (TeamEdit, error) {
		actor, err := fresh(actor, users)
		if err != nil {
			return TeamEdit{}, err
		}
		u, err := target(actor, users, id)
		if err != nil {
			return TeamEdit{}, err
		}
		return edit(actor, users, u)
	})
}

// ChangeTeamUser changes a user's role or merchant accounts. The admin
// may change only users all of whose accounts are the admin's and give
// only accounts of the admin's; no change leaves an account without an
// admin (an admin may step down, or drop an account, while another admin
// holds it).
func (s *Service) ChangeTeamUser(ctx context.Context, actor *Session, id string, c TeamUserChange) (*coreapi.DashboardUser, error) {
	if err := requireAdmin(actor); err != nil {
		return nil, err
	}
	var p coreapi.Problems
	if c.Role != nil {
		checkRole(&p, *c.Role)
	}
	if c.MerchantAccountIDs != nil {
		checkAccounts(&p, c.MerchantAccountIDs)
	}
	if err := invalid(p); err != nil {
		return nil, err
	}
	var before, after coreapi.DashboardUser
	err := s.editTeamUser(ctx, actor, id, func(actor *Session, users []*coreapi.DashboardUser, u *coreapi.DashboardUser) (TeamEdit, error) {
		if err := outside(actor, c.MerchantAccountIDs); err != nil {
			return TeamEdit{}, err
		}
		before, after = *u, *u
		if c.Role != nil {
			after.Role = *c.Role
		}
		if c.MerchantAccountIDs != nil {
			after.MerchantAccountIDs = slices.Clone(c.MerchantAccountIDs)
		}
		if a := orphan(users, u, &after); a != "" {
			return TeamEdit{}, lastAdmin(u, a)
		}
		return TeamEdit{Update: &after}, nil
	})
	if err != nil {
		return nil, err
	}
	if before.Role != after.Role || !slices.Equal(before.MerchantAccountIDs, after.MerchantAccountIDs) {
		s.logChange(ctx, "dashboard user changed", actor, &after, "role_before", before.Role, "role", after.Role,
			"merchant_account_ids_before", before.MerchantAccountIDs, "merchant_account_ids", after.MerchantAccountIDs)
	}
	return &after, nil
}

// RemoveTeamUser removes a user (and so its sessions), never the admin's
// own and never the last admin of an account.
func (s *Service) RemoveTeamUser(ctx context.Context, actor *Session, id string) error {
	if err := requireAdmin(actor); err != nil {
		return err
	}
	if id == actor.User.ID {
		return &RuleError{"you cannot remove yourself: ask another admin"}
	}
	var removed *coreapi.DashboardUser
	err := s.editTeamUser(ctx, actor, id, func(_ *Session, users []*coreapi.DashboardUser, u *coreapi.DashboardUser) (TeamEdit, error) {
		if a := orphan(users, u, nil); a != "" {
			return TeamEdit{}, lastAdmin(u, a)
		}
		removed = u
		return TeamEdit{DeleteID: u.ID}, nil
	})
	if err != nil {
		return err
	}
	s.logChange(ctx, "dashboard user removed", actor, removed, "role", removed.Role)
	return nil
}

// UnlockTeamUser lifts a user's lockout after failed sign-ins.
func (s *Service) UnlockTeamUser(ctx context.Context, actor *Session, id string) (*coreapi.DashboardUser, error) {
	if err := requireAdmin(actor); err != nil {
		return nil, err
	}
	users, err := s.Store.DashboardUsers(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := target(actor, users, id); err != nil {
		return nil, err
	}
	u, err := s.Store.UnlockDashboardUser(ctx, id)
	if err != nil {
		return nil, err
	}
	s.logChange(ctx, "dashboard user unlocked", actor, u)
	return u, nil
}

// ResetTeamUserPassword gives a user a generated password (128 random
// bits), returned once for the admin to hand over, which the user must
// change at their next sign-in. It ends every session of the user and
// clears their lockout. The admin may reset only a user all of whose
// accounts are the admin's, and never their own password (they change it).
func (s *Service) ResetTeamUserPassword(ctx context.Context, actor *Session, id string) (*coreapi.DashboardUser, string, error) {
	if err := requireAdmin(actor); err != nil {
		return nil, "", err
	}
	if id == actor.User.ID {
		return nil, "", &RuleError{"you cannot reset your own password: change it with Change password (POST /dashboard/password)"}
	}
	password := rand.Text()
	hash, err := HashPassword(password)
	if err != nil {
		return nil, "", err
	}
	var reset coreapi.DashboardUser
	err = s.editTeamUser(ctx, actor, id, func(_ *Session, _ []*coreapi.DashboardUser, u *coreapi.DashboardUser) (TeamEdit, error) {
		reset = *u
		return TeamEdit{Reset: &PasswordReset{UserID: u.ID, Hash: hash}}, nil
	})
	if err != nil {
		return nil, "", err
	}
	reset.PasswordHash, reset.MustChangePassword, reset.FailedSignIns, reset.LockedUntil = hash, true, 0, time.Time{}
	s.logChange(ctx, "dashboard password reset; the user's sessions ended", actor, &reset)
	return &reset, password, nil
}

var errWrongCurrent = coreapi.Problem{Pointer: "/current_password", Message: "is not your current password", Type: "value_error.password"}

// ChangePassword replaces the signed-in user's password after checking
// the current one, and ends every other session of the user: whoever
// knew the old password is signed out. A wrong current password counts
// towards the lockout, as a failed sign-in does.
func (s *Service) ChangePassword(ctx context.Context, sess *Session, current, next string) error {
	var p coreapi.Problems
	checkPassword(&p, "new_password", next)
	if len(current) > MaxPasswordLen {
		p = append(p, errWrongCurrent)
	}
	if err := invalid(p); err != nil {
		return err
	}
	cfg, now := s.cfg(), s.now()
	u, err := s.Store.DashboardUser(ctx, sess.User.ID)
	if err != nil {
		return err
	}
	if now.Before(u.LockedUntil) {
		return &LockedError{Until: u.LockedUntil}
	}
	ok, err := CheckPassword(u.PasswordHash, current)
	if err != nil {
		return err
	}
	if !ok {
		u, err := s.Store.RecordFailedSignIn(ctx, u.ID, cfg.MaxFailures, now.Add(cfg.Lockout))
		if err != nil {
			return err
		}
		if now.Before(u.LockedUntil) {
			return &LockedError{Until: u.LockedUntil}
		}
		return &InvalidUserError{coreapi.Problems{errWrongCurrent}}
	}
	if current == next {
		return &InvalidUserError{coreapi.Problems{{Pointer: "/new_password", Message: "must differ from the current password", Type: "value_error.password"}}}
	}
	hash, err := HashPassword(next)
	if err != nil {
		return err
	}
	if err := s.Store.SetDashboardPassword(ctx, u.ID, hash, false, sess.tokenHash); err != nil {
		return err
	}
	s.logChange(ctx, "dashboard password changed; the user's other sessions ended", sess, u)
	return nil
}
