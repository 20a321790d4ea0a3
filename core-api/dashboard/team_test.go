package dashboard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/postgres"
)

func signIn(t *testing.T, s *dashboard.Service, email string) *dashboard.Session {
	t.Helper()
	sess, err := s.SignIn(context.Background(), email, password)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func TestIdleTimeout(t *testing.T) {
	s, clk, _ := newService(t)
	ctx := context.Background()
	addUser(t, s, "dev@example.com", coreapi.RoleDeveloper, "default")
	start := clk.now()
	sess := signIn(t, s, "dev@example.com")
	if !sess.IdleExpiresAt.Equal(start.Add(dashboard.DefaultIdleTimeout)) {
		t.Fatalf("idle expiry at sign-in = %v; want %v", sess.IdleExpiresAt, start.Add(dashboard.DefaultIdleTimeout))
	}
	at := func(d time.Duration) { clk.t = start.Add(d) }
	check := func(what string, get func(context.Context, string) (*dashboard.Session, error), wantIdleEnd time.Duration) {
		t.Helper()
		got, err := get(ctx, sess.Token)
		if wantIdleEnd == 0 {
			if !errors.Is(err, dashboard.ErrNoSession) {
				t.Fatalf("%s: %v; want ErrNoSession", what, err)
			}
			return
		}
		if err != nil || !got.IdleExpiresAt.Equal(start.Add(wantIdleEnd)) {
			t.Fatalf("%s: %+v, %v; want the idle expiry at start+%v", what, got, err, wantIdleEnd)
		}
	}
	// A use within a minute of the last one writes nothing.
	at(30 * time.Second)
	check("a use after 30 s", s.Session, 30*time.Minute)
	// A peek never counts as a use.
	at(20 * time.Minute)
	check("a peek after 20 min", s.PeekSession, 30*time.Minute)
	// A use does, and starts the idle timeout again.
	at(25 * time.Minute)
	check("a use after 25 min", s.Session, 55*time.Minute)
	at(54 * time.Minute)
	check("a peek after 54 min", s.PeekSession, 55*time.Minute)
	at(55*time.Minute + time.Second)
	check("a peek after 55 min", s.PeekSession, 0)
	check("a use after 55 min", s.Session, 0)

	// A token never outlives the idle timeout.
	s.Config.IdleTimeout = 10 * time.Minute
	sess = signIn(t, s, "dev@example.com")
	tok, err := s.Token(sess)
	if err != nil || !tok.ExpiresAt.Equal(clk.now().Add(10*time.Minute)) {
		t.Errorf("token with a 10-minute idle timeout = %+v, %v; want it to expire in 10 minutes", tok, err)
	}
}

func TestChangePassword(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	addUser(t, s, "viewer@example.com", coreapi.RoleViewer, "default")
	here, there := signIn(t, s, "viewer@example.com"), signIn(t, s, "viewer@example.com")
	const next = "another-long-password"

	for _, c := range []struct {
		current, next, field string
	}{
		{"wrong password!", next, "current_password"},
		{password, "short", "new_password"},
		{password, password, "new_password"},
	} {
		var inv *dashboard.InvalidUserError
		if err := s.ChangePassword(ctx, here, c.current, c.next); !errors.As(err, &inv) || inv.Problems[0].Pointer != "/"+c.field {
			t.Errorf("ChangePassword(%q, %q) = %v; want a problem with %s", c.current, c.next, err, c.field)
		}
	}
	if _, err := s.Session(ctx, there.Token); err != nil {
		t.Fatalf("the other session after refused changes = %v", err)
	}
	if err := s.ChangePassword(ctx, here, password, next); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, here.Token); err != nil {
		t.Errorf("the session that changed the password = %v; want it kept", err)
	}
	if _, err := s.Session(ctx, there.Token); !errors.Is(err, dashboard.ErrNoSession) {
		t.Errorf("another session after the change = %v; want ErrNoSession", err)
	}
	if _, err := s.SignIn(ctx, "viewer@example.com", password); !errors.Is(err, dashboard.ErrBadCredentials) {
		t.Errorf("sign-in with the old password = %v", err)
	}
	if _, err := s.SignIn(ctx, "viewer@example.com", next); err != nil {
		t.Errorf("sign-in with the new password = %v", err)
	}
}

// Wrong current passwords count towards the lockout, as sign-ins do.
// A generated password must be changed before the session does anything
// else; a password the user chose (core-api user add -password-stdin)
// need not be.
func TestMustChangePassword(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	addUser(t, s, "root@example.com", coreapi.RoleAdmin, "*")
	root := signIn(t, s, "root@example.com")
	if root.User.MustChangePassword {
		t.Fatal("a user whose password was given is flagged")
	}
	if _, err := s.Token(root); err != nil {
		t.Fatalf("token of a user whose password was given = %v", err)
	}
	_, generated, err := s.AddTeamUser(ctx, root, dashboard.TeamUser{Email: "admin@example.com", Role: coreapi.RoleAdmin, MerchantAccountIDs: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.SignIn(ctx, "admin@example.com", generated)
	if err != nil || !sess.User.MustChangePassword {
		t.Fatalf("sign-in with a generated password = %+v, %v; want a session that must change it", sess, err)
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"token", func() error { _, err := s.Token(sess); return err }},
		{"team", func() error { _, err := s.Team(ctx, sess); return err }},
		{"add", func() error {
			_, _, err := s.AddTeamUser(ctx, sess, dashboard.TeamUser{Email: "x@example.com", Role: coreapi.RoleViewer, MerchantAccountIDs: []string{"a"}})
			return err
		}},
		{"change", func() error {
			_, err := s.ChangeTeamUser(ctx, sess, root.User.ID, dashboard.TeamUserChange{MerchantAccountIDs: []string{"a"}})
			return err
		}},
		{"unlock", func() error { _, err := s.UnlockTeamUser(ctx, sess, root.User.ID); return err }},
		{"reset", func() error { _, _, err := s.ResetTeamUserPassword(ctx, sess, root.User.ID); return err }},
		{"remove", func() error { return s.RemoveTeamUser(ctx, sess, root.User.ID) }},
	} {
		if err := c.call(); !errors.Is(err, dashboard.ErrPasswordChangeRequired) {
			t.Errorf("%s by a user who must change their password = %v; want ErrPasswordChangeRequired", c.name, err)
		}
	}
	if err := s.ChangePassword(ctx, sess, generated, "my-own-password-now"); err != nil {
		t.Fatal(err)
	}
	sess, err = s.Session(ctx, sess.Token)
	if err != nil || sess.User.MustChangePassword {
		t.Fatalf("the session after the change = %+v, %v; want it kept and no longer restricted", sess, err)
	}
	if _, err := s.Token(sess); err != nil {
		t.Errorf("token after the change = %v", err)
	}
	if _, err := s.Team(ctx, sess); err != nil {
		t.Errorf("team after the change = %v", err)
	}
}

func TestChangePasswordLockout(t *testing.T) {
	s, _, _ := newService(t)
	s.Config = dashboard.Config{MaxFailures: 2}
	ctx := context.Background()
	addUser(t, s, "viewer@example.com", coreapi.RoleViewer, "default")
	sess := signIn(t, s, "viewer@example.com")
	_ = s.ChangePassword(ctx, sess, "wrong password!", "another-long-password")
	var locked *dashboard.LockedError
	if err := s.ChangePassword(ctx, sess, "wrong password!", "another-long-password"); !errors.As(err, &locked) {
		t.Fatalf("second wrong current password = %v; want a lockout", err)
	}
	if err := s.ChangePassword(ctx, sess, password, "another-long-password"); !errors.As(err, &locked) {
		t.Errorf("right current password while locked = %v; want a lockout", err)
	}
}

// errKind names what a team call answered, for the table.
func errKind(err error) string {
	var inv *dashboard.InvalidUserError
	var forbidden *dashboard.ForbiddenError
	var rule *dashboard.RuleError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, dashboard.ErrNotAdmin):
		return "not admin"
	case errors.Is(err, dashboard.ErrPasswordChangeRequired):
		return "must change password"
	case errors.As(err, &inv):
		return "invalid"
	case errors.As(err, &forbidden):
		return "forbidden"
	case errors.As(err, &rule):
		return "rule"
	case errors.Is(err, coreapi.ErrNotFound):
		return "not found"
	}
	return err.Error()
}

func TestTeamRules(t *testing.T) {
	role := func(r coreapi.DashboardRole) *coreapi.DashboardRole { return &r }
	// The team: who is in which accounts. Each case starts from it.
	team := []struct {
		email    string
		role     coreapi.DashboardRole
		accounts []string
	}{
		{"root@example.com", coreapi.RoleAdmin, []string{"*"}},
		{"admin-a@example.com", coreapi.RoleAdmin, []string{"a"}},
		{"admin-ab@example.com", coreapi.RoleAdmin, []string{"a", "b"}},
		{"admin-c@example.com", coreapi.RoleAdmin, []string{"c"}},
		{"viewer-a@example.com", coreapi.RoleViewer, []string{"a"}},
		{"viewer-ac@example.com", coreapi.RoleViewer, []string{"a", "c"}},
		{"viewer-all@example.com", coreapi.RoleViewer, []string{"*"}},
		{"dev-b@example.com", coreapi.RoleDeveloper, []string{"b"}},
		{"dev-z@example.com", coreapi.RoleDeveloper, []string{"z"}},
	}
	type call func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, id func(string) string) error
	change := func(target string, c dashboard.TeamUserChange) call {
		return func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, id func(string) string) error {
			_, err := s.ChangeTeamUser(ctx, actor, id(target), c)
			return err
		}
	}
	remove := func(target string) call {
		return func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, id func(string) string) error {
			return s.RemoveTeamUser(ctx, actor, id(target))
		}
	}
	add := func(r coreapi.DashboardRole, accounts ...string) call {
		return func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, _ func(string) string) error {
			u, pw, err := s.AddTeamUser(ctx, actor, dashboard.TeamUser{Email: "new@example.com", Role: r, MerchantAccountIDs: accounts})
			if err == nil {
				if u.Role != r || !slices.Equal(u.MerchantAccountIDs, accounts) || len(pw) < dashboard.MinPasswordLen {
					t.Errorf("added %+v with a password of %d bytes", u, len(pw))
				}
				if sess, err := s.SignIn(ctx, "new@example.com", pw); err != nil || !sess.User.MustChangePassword {
					t.Errorf("sign-in with the generated password = %+v, %v; want a session that must change it", sess, err)
				}
			}
			return err
		}
	}
	unlock := func(target string) call {
		return func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, id func(string) string) error {
			_, err := s.UnlockTeamUser(ctx, actor, id(target))
			return err
		}
	}
	// One database and one hash for every case: making them is most of
	// the cost of a case.
	s, _, _ := newService(t)
	db := s.Store.(*postgres.DB)
	// reset locks target out and signs it in first: the reset must clear
	// the one and end the other.
	reset := func(target string) call {
		return func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, id func(string) string) error {
			var before *dashboard.Session
			if target != "nobody" {
				before = signIn(t, s, target+"@example.com")
				if _, err := db.Pool.Exec(ctx, `UPDATE dashboard_users SET locked_until = now() + interval '1 hour' WHERE id = $1`, id(target)); err != nil {
					t.Fatal(err)
				}
			}
			u, pw, err := s.ResetTeamUserPassword(ctx, actor, id(target))
			if err != nil {
				if before != nil {
					if _, err := s.Session(ctx, before.Token); err != nil {
						t.Errorf("the target's session after a refused reset = %v; want it kept", err)
					}
				}
				return err
			}
			if !u.MustChangePassword || !u.LockedUntil.IsZero() || len(pw) < dashboard.MinPasswordLen || strings.Contains(u.PasswordHash, pw) {
				t.Errorf("reset answered %+v with a password of %d bytes", u, len(pw))
			}
			if _, err := s.Session(ctx, before.Token); !errors.Is(err, dashboard.ErrNoSession) {
				t.Errorf("the target's session after the reset = %v; want ErrNoSession", err)
			}
			if _, err := s.SignIn(ctx, target+"@example.com", password); !errors.Is(err, dashboard.ErrBadCredentials) {
				t.Errorf("sign-in with the old password after the reset = %v; want ErrBadCredentials", err)
			}
			sess, err := s.SignIn(ctx, target+"@example.com", pw)
			if err != nil || !sess.User.MustChangePassword {
				t.Errorf("sign-in with the reset password (the lockout cleared) = %+v, %v; want a session that must change it", sess, err)
			}
			return nil
		}
	}
	hash, err := dashboard.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, actor string
		call        call
		want        string
		withoutRoot bool // the * admin covers every account: without it, a/b/c have their own admins only
	}{
		{"a viewer may not add", "viewer-a", add(coreapi.RoleViewer, "a"), "not admin", false},
		{"a developer may not remove", "dev-b", remove("viewer-a"), "not admin", false},
		{"a developer may not unlock", "dev-b", unlock("viewer-a"), "not admin", false},
		{"an admin adds in their account", "admin-a", add(coreapi.RoleViewer, "a"), "ok", false},
		{"an admin adds an admin of their account", "admin-ab", add(coreapi.RoleAdmin, "a", "b"), "ok", false},
		{"an admin adds outside their accounts", "admin-a", add(coreapi.RoleViewer, "a", "b"), "forbidden", false},
		{"only a * admin grants *", "admin-ab", add(coreapi.RoleViewer, "*"), "forbidden", false},
		{"a * admin grants *", "root", add(coreapi.RoleDeveloper, "*"), "ok", false},
		{"a bad role", "admin-a", add("owner", "a"), "invalid", false},
		{"a bad account id", "admin-a", add(coreapi.RoleViewer, "A!"), "invalid", false},
		{"a taken email", "admin-a", func(ctx context.Context, s *dashboard.Service, actor *dashboard.Session, _ func(string) string) error {
			_, _, err := s.AddTeamUser(ctx, actor, dashboard.TeamUser{Email: "Viewer-A@example.com", Role: coreapi.RoleViewer, MerchantAccountIDs: []string{"a"}})
			var dup *coreapi.DuplicateError
			if errors.As(err, &dup) {
				return nil
			}
			return err
		}, "ok", false},
		{"an admin promotes in their account", "admin-a", change("viewer-a", dashboard.TeamUserChange{Role: role(coreapi.RoleAdmin)}), "ok", false},
		{"an admin moves a user among their accounts", "admin-ab", change("viewer-a", dashboard.TeamUserChange{MerchantAccountIDs: []string{"b"}}), "ok", false},
		{"escalation of a user with other accounts", "admin-a", change("viewer-ac", dashboard.TeamUserChange{Role: role(coreapi.RoleAdmin)}), "forbidden", false},
		{"escalation into another account", "admin-a", change("viewer-a", dashboard.TeamUserChange{MerchantAccountIDs: []string{"a", "c"}}), "forbidden", false},
		{"a * user is beyond a one-account admin", "admin-a", change("viewer-all", dashboard.TeamUserChange{Role: role(coreapi.RoleDeveloper)}), "forbidden", false},
		{"a user sharing no account is not found", "admin-a", change("dev-z", dashboard.TeamUserChange{Role: role(coreapi.RoleViewer)}), "not found", false},
		{"an unknown user is not found", "root", change("nobody", dashboard.TeamUserChange{Role: role(coreapi.RoleViewer)}), "not found", false},
		{"a bad role in a change", "root", change("viewer-a", dashboard.TeamUserChange{Role: role("owner")}), "invalid", false},
		{"no accounts in a change", "root", change("viewer-a", dashboard.TeamUserChange{MerchantAccountIDs: []string{}}), "invalid", false},
		{"the last admin of an account steps down", "admin-c", change("admin-c", dashboard.TeamUserChange{Role: role(coreapi.RoleViewer)}), "rule", true},
		{"the last admin of an account drops it", "admin-ab", change("admin-ab", dashboard.TeamUserChange{MerchantAccountIDs: []string{"a"}}), "rule", true},
		{"an admin of every account steps in", "admin-c", change("admin-c", dashboard.TeamUserChange{Role: role(coreapi.RoleViewer)}), "ok", false},
		{"the last * admin drops *", "root", change("root", dashboard.TeamUserChange{MerchantAccountIDs: []string{"a", "b", "c"}}), "rule", false},
		{"an admin steps down where another stays", "admin-a", change("admin-a", dashboard.TeamUserChange{Role: role(coreapi.RoleDeveloper)}), "ok", false},
		{"not oneself", "admin-a", remove("admin-a"), "rule", false},
		{"an admin removes another of their account", "admin-ab", remove("admin-a"), "ok", false},
		{"an admin removes a viewer", "admin-a", remove("viewer-a"), "ok", false},
		{"removal beyond one's accounts", "admin-a", remove("viewer-ac"), "forbidden", false},
		{"removal of a user sharing no account", "admin-c", remove("dev-b"), "not found", false},
		{"a * admin removes anyone else", "root", remove("admin-c"), "ok", false},
		{"unlock in one's accounts", "admin-a", unlock("viewer-a"), "ok", false},
		{"unlock beyond one's accounts", "admin-a", unlock("viewer-ac"), "forbidden", false},
		{"reset in one's accounts", "admin-a", reset("viewer-a"), "ok", false},
		{"reset of another admin of one's accounts", "admin-ab", reset("admin-a"), "ok", false},
		{"a * admin resets a * user", "root", reset("viewer-all"), "ok", false},
		{"reset beyond one's accounts", "admin-a", reset("viewer-ac"), "forbidden", false},
		{"reset of a user sharing no account", "admin-c", reset("dev-b"), "not found", false},
		{"reset of an unknown user", "root", reset("nobody"), "not found", false},
		{"reset of oneself", "admin-a", reset("admin-a"), "rule", false},
		{"a developer may not reset", "dev-b", reset("dev-b"), "not admin", false},
		{"a viewer may not reset", "viewer-a", reset("viewer-ac"), "not admin", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if _, err := db.Pool.Exec(ctx, `DELETE FROM dashboard_users`); err != nil {
				t.Fatal(err)
			}
			ids := map[string]string{}
			for _, m := range team {
				if c.withoutRoot && m.email == "root@example.com" {
					continue
				}
				u := &coreapi.DashboardUser{ID: uuid.NewString(), Email: m.email, PasswordHash: hash, Role: m.role,
					MerchantAccountIDs: m.accounts, CreatedAt: time.Now()}
				if err := s.Store.CreateDashboardUser(ctx, u); err != nil {
					t.Fatal(err)
				}
				ids[m.email[:len(m.email)-len("@example.com")]] = u.ID
			}
			id := func(name string) string {
				if v, ok := ids[name]; ok {
					return v
				}
				return "00000000-0000-4000-8000-000000000000"
			}
			actor := signIn(t, s, c.actor+"@example.com")
			if got := errKind(c.call(ctx, s, actor, id)); got != c.want {
				t.Errorf("%s = %s; want %s", c.name, got, c.want)
			}
		})
	}
}

func TestTeamListsSharedAccounts(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	for _, u := range []struct {
		email    string
		role     coreapi.DashboardRole
		accounts []string
	}{
		{"root@example.com", coreapi.RoleAdmin, []string{"*"}},
		{"admin-a@example.com", coreapi.RoleAdmin, []string{"a"}},
		{"viewer-ab@example.com", coreapi.RoleViewer, []string{"a", "b"}},
		{"dev-b@example.com", coreapi.RoleDeveloper, []string{"b"}},
	} {
		addUser(t, s, u.email, u.role, u.accounts...)
	}
	// Each member as "email accounts manageable": an admin sees only the
	// accounts they share with a user, and may manage only a user all of
	// whose accounts are theirs.
	team := func(actor string) []string {
		users, err := s.Team(ctx, signIn(t, s, actor))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range users {
			out = append(out, fmt.Sprintf("%s %s %t", u.Email, strings.Join(u.MerchantAccountIDs, ","), u.Manageable))
		}
		return out
	}
	for _, c := range []struct {
		actor string
		want  []string
	}{
		{"admin-a@example.com", []string{"admin-a@example.com a true", "root@example.com a false", "viewer-ab@example.com a false"}},
		{"root@example.com", []string{"admin-a@example.com a true", "dev-b@example.com b true", "root@example.com * true", "viewer-ab@example.com a,b true"}},
	} {
		if got := team(c.actor); !slices.Equal(got, c.want) {
			t.Errorf("%s's team = %q; want %q", c.actor, got, c.want)
		}
	}
	if _, err := s.Team(ctx, signIn(t, s, "dev-b@example.com")); !errors.Is(err, dashboard.ErrNotAdmin) {
		t.Errorf("a developer's team = %v; want ErrNotAdmin", err)
	}
}

// An admin removed by another admin meanwhile acts no more, even within
// a request that passed the session check.
func TestTeamActorIsReadUnderTheLock(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	addUser(t, s, "admin-1@example.com", coreapi.RoleAdmin, "a")
	second := addUser(t, s, "admin-2@example.com", coreapi.RoleAdmin, "a")
	viewer := addUser(t, s, "viewer@example.com", coreapi.RoleViewer, "a")
	one, two := signIn(t, s, "admin-1@example.com"), signIn(t, s, "admin-2@example.com")
	if err := s.RemoveTeamUser(ctx, one, second.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveTeamUser(ctx, two, viewer.ID); !errors.Is(err, dashboard.ErrNotAdmin) {
		t.Errorf("a removed admin's stale session removing = %v; want ErrNotAdmin", err)
	}
	if _, err := s.Session(ctx, two.Token); !errors.Is(err, dashboard.ErrNoSession) {
		t.Errorf("a removed user's session = %v; want ErrNoSession", err)
	}
}

// Every change names who made it and to whom, and never a password.
func TestTeamChangesAreLogged(t *testing.T) {
	s, _, _ := newService(t)
	var buf bytes.Buffer
	s.Log = slog.New(slog.NewJSONHandler(&buf, nil))
	ctx := context.Background()
	addUser(t, s, "admin@example.com", coreapi.RoleAdmin, "a")
	admin := signIn(t, s, "admin@example.com")
	u, pw, err := s.AddTeamUser(ctx, admin, dashboard.TeamUser{Email: "new@example.com", Role: coreapi.RoleViewer, MerchantAccountIDs: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	dev := coreapi.RoleDeveloper
	if _, err := s.ChangeTeamUser(ctx, admin, u.ID, dashboard.TeamUserChange{Role: &dev}); err != nil {
		t.Fatal(err)
	}
	if err := s.ChangePassword(ctx, admin, password, "a-new-password-for-admin"); err != nil {
		t.Fatal(err)
	}
	_, resetPW, err := s.ResetTeamUserPassword(ctx, admin, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveTeamUser(ctx, admin, u.ID); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`"msg":"dashboard user added"`, `"msg":"dashboard user changed"`, `"role_before":"viewer"`,
		`"role":"developer"`, `"msg":"dashboard user removed"`, `"by_email":"admin@example.com"`, `"email":"new@example.com"`,
		`"msg":"dashboard password changed; the user's other sessions ended"`, `"msg":"dashboard password reset; the user's sessions ended"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{pw, resetPW, password, "a-new-password-for-admin", "argon2id"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds a password or its hash (%q)", secret)
		}
	}
}
