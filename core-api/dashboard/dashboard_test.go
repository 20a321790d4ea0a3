package dashboard_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/auth"
)

const password = "a-password-long-enough"

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newService(t *testing.T) (*dashboard.Service, *clock, *auth.Verifier) {
	t.Helper()
	key, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys := auth.NewKeySet()
	if _, err := keys.Add(&key.PublicKey, "dashboard-test"); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now().Truncate(time.Second)}
	v, err := auth.NewVerifier(auth.Config{Keys: keys, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return &dashboard.Service{Store: postgrestest.New(t), SigningKey: key, Issuer: "dashboard-test", Now: c.now}, c, v
}

func addUser(t *testing.T, s *dashboard.Service, email string, role coreapi.DashboardRole, accounts ...string) *coreapi.DashboardUser {
	t.Helper()
	u, err := s.AddUser(context.Background(), dashboard.NewUser{Email: email, Password: password, Role: role, MerchantAccountIDs: accounts})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestAddUserValidation(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	ok := dashboard.NewUser{Email: " Ada@Example.com ", Password: password, Role: coreapi.RoleAdmin, MerchantAccountIDs: []string{"*"}}
	u, err := s.AddUser(ctx, ok)
	if err != nil || u.Email != "ada@example.com" || u.PasswordHash == "" {
		t.Fatalf("AddUser = %+v, %v", u, err)
	}
	var dup *coreapi.DuplicateError
	if _, err := s.AddUser(ctx, ok); !errors.As(err, &dup) {
		t.Errorf("second AddUser of one email = %v; want a DuplicateError", err)
	}
	for _, c := range []struct {
		field  string
		change func(*dashboard.NewUser)
	}{
		{"email", func(n *dashboard.NewUser) { n.Email = "not an email" }},
		{"email", func(n *dashboard.NewUser) { n.Email = "Ada <ada@example.com>" }},
		{"password", func(n *dashboard.NewUser) { n.Password = "short" }},
		{"role", func(n *dashboard.NewUser) { n.Role = "owner" }},
		{"merchant_account_ids", func(n *dashboard.NewUser) { n.MerchantAccountIDs = nil }},
		{"merchant_account_ids", func(n *dashboard.NewUser) { n.MerchantAccountIDs = []string{"*", "default"} }},
		{"merchant_account_ids", func(n *dashboard.NewUser) { n.MerchantAccountIDs = []string{""} }},
		{"merchant_account_ids", func(n *dashboard.NewUser) { n.MerchantAccountIDs = []string{"Acme"} }},
		{"merchant_account_ids", func(n *dashboard.NewUser) { n.MerchantAccountIDs = []string{"acme", "acme"} }},
	} {
		in := ok
		in.Email = "other@example.com"
		c.change(&in)
		var inv *dashboard.InvalidUserError
		if _, err := s.AddUser(ctx, in); !errors.As(err, &inv) || !slices.ContainsFunc(inv.Problems,
			func(p coreapi.Problem) bool { return strings.HasPrefix(p.Pointer, "/"+c.field) }) {
			t.Errorf("AddUser(%+v) = %v; want an invalid %s", in, err, c.field)
		}
	}
}

func TestSignInSessionToken(t *testing.T) {
	s, clk, verifier := newService(t)
	// An idle timeout as long as the session: this test is about its
	// absolute expiry (TestIdleTimeout is about the other).
	s.Config.IdleTimeout = dashboard.DefaultSessionLifetime
	ctx := context.Background()
	u := addUser(t, s, "dev@example.com", coreapi.RoleDeveloper, "default", "acme")

	sess, err := s.SignIn(ctx, "DEV@example.com", password)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Token == "" || sess.CSRFToken == "" || sess.Token == sess.CSRFToken || sess.User.ID != u.ID {
		t.Fatalf("session = %+v", sess)
	}
	got, err := s.Session(ctx, sess.Token)
	if err != nil || got.CSRFToken != sess.CSRFToken || got.User.ID != u.ID || got.Token != "" {
		t.Fatalf("Session = %+v, %v", got, err)
	}
	if _, err := s.Session(ctx, sess.CSRFToken); !errors.Is(err, dashboard.ErrNoSession) {
		t.Errorf("Session(the CSRF token) = %v; want ErrNoSession", err)
	}

	tok, err := s.Token(got)
	if err != nil {
		t.Fatal(err)
	}
	p, err := verifier.Verify(ctx, "Bearer "+tok.AccessToken, clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Scopes, coreapi.RoleDeveloper.Scopes()) || p.Issuer != "dashboard-test" ||
		!p.CanAccessMerchant("acme") || p.CanAccessMerchant("other") || p.ExpiresAt.Sub(p.IssuedAt) != dashboard.MaxTokenLifetime {
		t.Errorf("principal = %+v", p)
	}
	if p.Require("transactions.write") == nil || p.Require("webhook-subscriptions.write") != nil || p.Require("transactions.read") != nil {
		t.Error("a developer's token has the wrong scopes")
	}

	// Near the session's end the token ends with it.
	clk.t = sess.ExpiresAt.Add(-time.Minute)
	tok, err = s.Token(got)
	if err != nil || !tok.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Errorf("token near the session's end = %+v, %v; want it to expire at %v", tok, err, sess.ExpiresAt)
	}
	// Past it, the session is gone.
	clk.t = sess.ExpiresAt.Add(time.Second)
	if _, err := s.Session(ctx, sess.Token); !errors.Is(err, dashboard.ErrNoSession) {
		t.Errorf("expired session = %v; want ErrNoSession", err)
	}
}

func TestSignOut(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	addUser(t, s, "viewer@example.com", coreapi.RoleViewer, "default")
	a, err := s.SignIn(ctx, "viewer@example.com", password)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.SignIn(ctx, "viewer@example.com", password)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SignOut(ctx, a.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, a.Token); !errors.Is(err, dashboard.ErrNoSession) {
		t.Errorf("signed-out session = %v", err)
	}
	if _, err := s.Session(ctx, b.Token); err != nil {
		t.Errorf("another browser's session after a sign-out = %v", err)
	}
	if err := s.SignOut(ctx, "unknown"); err != nil {
		t.Errorf("SignOut(unknown) = %v", err)
	}
}

func TestLockout(t *testing.T) {
	s, clk, _ := newService(t)
	s.Config = dashboard.Config{MaxFailures: 3, Lockout: 10 * time.Minute}
	ctx := context.Background()
	addUser(t, s, "admin@example.com", coreapi.RoleAdmin, "*")

	if _, err := s.SignIn(ctx, "nobody@example.com", password); !errors.Is(err, dashboard.ErrBadCredentials) {
		t.Errorf("unknown email = %v; want ErrBadCredentials", err)
	}
	// Two failures, then a success resets the count.
	for range 2 {
		if _, err := s.SignIn(ctx, "admin@example.com", "wrong password!"); !errors.Is(err, dashboard.ErrBadCredentials) {
			t.Fatalf("wrong password = %v", err)
		}
	}
	if _, err := s.SignIn(ctx, "admin@example.com", password); err != nil {
		t.Fatalf("right password after two failures = %v", err)
	}
	for range 2 {
		if _, err := s.SignIn(ctx, "admin@example.com", "wrong password!"); !errors.Is(err, dashboard.ErrBadCredentials) {
			t.Fatalf("wrong password = %v", err)
		}
	}
	// The third consecutive failure locks the user out.
	var locked *dashboard.LockedError
	if _, err := s.SignIn(ctx, "admin@example.com", "wrong password!"); !errors.As(err, &locked) ||
		!locked.Until.Equal(clk.now().Add(10*time.Minute)) {
		t.Fatalf("third failure = %v; want a lockout until %v", err, clk.now().Add(10*time.Minute))
	}
	if _, err := s.SignIn(ctx, "admin@example.com", password); !errors.As(err, &locked) {
		t.Errorf("right password while locked = %v; want a lockout", err)
	}
	clk.t = clk.t.Add(10*time.Minute + time.Second)
	if _, err := s.SignIn(ctx, "admin@example.com", password); err != nil {
		t.Errorf("right password after the lockout = %v", err)
	}
}

func TestRoleScopes(t *testing.T) {
	for _, c := range []struct {
		role          coreapi.DashboardRole
		write, noWrit string
	}{
		{coreapi.RoleAdmin, "transactions.write", ""},
		{coreapi.RoleDeveloper, "vault-forward-configs.write", "transactions.write"},
		{coreapi.RoleViewer, "", "buyers.write"},
	} {
		s := c.role.Scopes()
		if !auth.Match(s, "transactions.read") || !auth.Match(s, "vault-forward-configs.read") {
			t.Errorf("%s cannot read", c.role)
		}
		if c.write != "" && !auth.Match(s, c.write) {
			t.Errorf("%s cannot %s", c.role, c.write)
		}
		if c.noWrit != "" && auth.Match(s, c.noWrit) {
			t.Errorf("%s may %s", c.role, c.noWrit)
		}
	}
	if coreapi.DashboardRole("owner").Scopes() != nil {
		t.Error("an unknown role has scopes")
	}
}
