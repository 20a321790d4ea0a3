// Package dashboard is the merchant dashboard's sign-in: its users
// (argon2id passwords, a role mapping to API scopes, the merchant accounts
// they may act in) and their management by admins (team.go), sessions held
// in an HttpOnly cookie with a server-side absolute expiry, an idle
// timeout and an anti-CSRF token, lockout after repeated failures, and the
// short-lived bearer tokens the dashboard's page calls the public APIs
// with. The tokens are signed by a key of their own, registered under
// their own issuer (docs/dashboard.md).
package dashboard

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/auth"
)

// Defaults of Config.
const (
	DefaultSessionLifetime = 12 * time.Hour
	DefaultIdleTimeout     = 30 * time.Minute
	// MaxTokenLifetime bounds the bearer tokens: the page asks for a new
	// one before this runs out.
	MaxTokenLifetime   = 15 * time.Minute
	DefaultMaxFailures = 5
	DefaultLockout     = 15 * time.Minute
)

// touchInterval is how stale a session's LastSeenAt may get: a use
// writes it only when it is older, so a busy page costs one UPDATE a
// minute, not one per request. The idle timeout is therefore exact to
// the minute.
const touchInterval = time.Minute

// Store keeps users and sessions.
type Store interface {
	CreateDashboardUser(ctx context.Context, u *coreapi.DashboardUser) error
	DashboardUserByEmail(ctx context.Context, email string) (*coreapi.DashboardUser, error)
	DashboardUser(ctx context.Context, id string) (*coreapi.DashboardUser, error)
	// RecordFailedSignIn adds one to the user's failures and, when they
	// reach maxFailures, locks the user until lockUntil and resets the
	// count; it returns the user as it then is.
	RecordFailedSignIn(ctx context.Context, id string, maxFailures int, lockUntil time.Time) (*coreapi.DashboardUser, error)
	ResetFailedSignIns(ctx context.Context, id string) error
	// CreateDashboardSession stores s; it may drop the sessions that
	// expired by s.CreatedAt or were last seen before idleSince.
	CreateDashboardSession(ctx context.Context, s *coreapi.DashboardSession, idleSince time.Time) error
	// DashboardSession returns the session unless it expired by now or
	// was last seen before idleSince.
	DashboardSession(ctx context.Context, tokenHash []byte, now, idleSince time.Time) (*coreapi.DashboardSession, error)
	// TouchDashboardSession sets the session's LastSeenAt to now.
	TouchDashboardSession(ctx context.Context, tokenHash []byte, now time.Time) error
	DeleteDashboardSession(ctx context.Context, tokenHash []byte) error
	// SetDashboardPassword replaces the user's password hash, sets its
	// must-change flag to mustChange, clears its failures and lockout,
	// and ends every session of the user but keep.
	SetDashboardPassword(ctx context.Context, userID, hash string, mustChange bool, keep []byte) error
	TeamStore
}

// Config tunes the service; zero values take the defaults.
type Config struct {
	SessionLifetime time.Duration
	// IdleTimeout ends a session unused for that long; at most
	// SessionLifetime.
	IdleTimeout   time.Duration
	TokenLifetime time.Duration // at most MaxTokenLifetime
	MaxFailures   int           // consecutive failed sign-ins before a lockout
	Lockout       time.Duration
}

// Service signs users in and out and mints their tokens.
type Service struct {
	Store Store
	// SigningKey signs the dashboard's bearer tokens, under Issuer: a key
	// of its own, never one of the API keys'.
	SigningKey *ecdsa.PrivateKey
	Issuer     string
	Config     Config
	Now        func() time.Time
	// Log records who changed which user (never a password); nil: none.
	Log *slog.Logger

	dummyOnce sync.Once
	dummyHash string // checked for unknown emails, so they take as long as known ones
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) cfg() Config {
	c := s.Config
	if c.SessionLifetime <= 0 {
		c.SessionLifetime = DefaultSessionLifetime
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	c.IdleTimeout = min(c.IdleTimeout, c.SessionLifetime)
	if c.TokenLifetime <= 0 || c.TokenLifetime > MaxTokenLifetime {
		c.TokenLifetime = MaxTokenLifetime
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.Lockout <= 0 {
		c.Lockout = DefaultLockout
	}
	return c
}

// Errors of the service; httpapi maps them to statuses.
var (
	// ErrBadCredentials is an unknown email or a wrong password: the
	// answer does not tell which.
	ErrBadCredentials = errors.New("invalid email or password")
	// ErrNoSession is a missing, unknown or expired session.
	ErrNoSession = errors.New("not signed in")
	// ErrPasswordChangeRequired is any use but a password change, a read
	// or a sign-out of a session whose user must change a generated
	// password first (403).
	ErrPasswordChangeRequired = errors.New("your password was generated for you: change it (POST /dashboard/password) before anything else")
)

// LockedError is a sign-in refused because the user is locked out.
type LockedError struct{ Until time.Time }

func (e *LockedError) Error() string {
	return "too many failed sign-ins: try again after " + e.Until.UTC().Format(time.RFC3339)
}

// InvalidUserError is input about a user that breaks the rules, each
// problem at its field's JSON pointer (/email, /merchant_account_ids/0).
// Its message names them all, for the CLI.
type InvalidUserError struct{ Problems coreapi.Problems }

func (e *InvalidUserError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = strings.TrimPrefix(p.Pointer, "/") + ": " + p.Message
	}
	return strings.Join(parts, "; ")
}

// invalid is nil without problems, else an *InvalidUserError.
func invalid(p coreapi.Problems) error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidUserError{Problems: p}
}

// checkEmail returns the email in its stored form (lower case, trimmed).
func checkEmail(p *coreapi.Problems, email string) string {
	email = strings.ToLower(strings.TrimSpace(email))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		p.Add("/email", "must be an email address such as ada@example.com", "value_error.email")
	}
	return email
}

func checkPassword(p *coreapi.Problems, field, password string) {
	if n := len(password); n < MinPasswordLen || n > MaxPasswordLen {
		p.Add("/"+field, fmt.Sprintf("must be %d to %d bytes long", MinPasswordLen, MaxPasswordLen), "value_error.str.length")
	}
}

func checkRole(p *coreapi.Problems, r coreapi.DashboardRole) {
	if !r.Valid() {
		p.Add("/role", "must be admin, developer or viewer", "value_error.enum")
	}
}

func checkAccounts(p *coreapi.Problems, ids []string) {
	if len(ids) == 0 || len(ids) > 1 && slices.Contains(ids, auth.AllMerchantAccounts) {
		p.Add("/merchant_account_ids", `must name one or more merchant accounts, or be "*" alone for every one`, "value_error.merchant_account_ids")
		return
	}
	for i, id := range ids {
		if id != auth.AllMerchantAccounts && !accountid.Valid(id) {
			p.Add(fmt.Sprintf("/merchant_account_ids/%d", i), "must be \"*\" or a merchant account id matching "+accountid.Pattern, accountid.MismatchType)
		} else if slices.Index(ids, id) < i {
			p.Add(fmt.Sprintf("/merchant_account_ids/%d", i), "is named twice", "value_error.duplicate")
		}
	}
}

// NewUser is what AddUser needs.
type NewUser struct {
	Email              string
	Password           string
	Role               coreapi.DashboardRole
	MerchantAccountIDs []string // ["*"]: every account
	// MustChangePassword: Password was generated, not chosen by the user.
	MustChangePassword bool
}

// AddUser creates a user (core-api user add).
func (s *Service) AddUser(ctx context.Context, in NewUser) (*coreapi.DashboardUser, error) {
	var p coreapi.Problems
	email := checkEmail(&p, in.Email)
	checkPassword(&p, "password", in.Password)
	checkRole(&p, in.Role)
	checkAccounts(&p, in.MerchantAccountIDs)
	if err := invalid(p); err != nil {
		return nil, err
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return nil, err
	}
	u := &coreapi.DashboardUser{ID: uuid.NewString(), Email: email, PasswordHash: hash, Role: in.Role,
		MerchantAccountIDs: slices.Clone(in.MerchantAccountIDs), MustChangePassword: in.MustChangePassword, CreatedAt: s.now()}
	if err := s.Store.CreateDashboardUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// Session is a signed-in browser: the cookie's token (shown once, at
// sign-in), its CSRF token and its user.
type Session struct {
	Token     string // only set by SignIn
	CSRFToken string
	ExpiresAt time.Time
	// IdleExpiresAt is when the session ends unless it is used again
	// (never after ExpiresAt).
	IdleExpiresAt time.Time
	User          *coreapi.DashboardUser

	tokenHash []byte
}

// Unrestricted is ErrPasswordChangeRequired while the session's user must
// change a generated password, else nil.
func (sess *Session) Unrestricted() error {
	if sess.User.MustChangePassword {
		return ErrPasswordChangeRequired
	}
	return nil
}

func (s *Service) newSession(sess *coreapi.DashboardSession, u *coreapi.DashboardUser) *Session {
	return &Session{CSRFToken: sess.CSRFToken, ExpiresAt: sess.ExpiresAt, User: u, tokenHash: sess.TokenHash,
		IdleExpiresAt: earlier(sess.ExpiresAt, sess.LastSeenAt.Add(s.cfg().IdleTimeout))}
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// SignIn checks the credentials and opens a session. A wrong password
// counts towards the user's lockout; a locked user is refused even with
// the right password.
func (s *Service) SignIn(ctx context.Context, email, password string) (*Session, error) {
	cfg, now := s.cfg(), s.now()
	if len(password) > MaxPasswordLen {
		return nil, ErrBadCredentials
	}
	u, err := s.Store.DashboardUserByEmail(ctx, strings.ToLower(strings.TrimSpace(email)))
	if errors.Is(err, coreapi.ErrNotFound) {
		_, _ = CheckPassword(s.dummy(), password)
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, err
	}
	if now.Before(u.LockedUntil) {
		return nil, &LockedError{Until: u.LockedUntil}
	}
	ok, err := CheckPassword(u.PasswordHash, password)
	if err != nil {
		return nil, err
	}
	if !ok {
		u, err := s.Store.RecordFailedSignIn(ctx, u.ID, cfg.MaxFailures, now.Add(cfg.Lockout))
		if err != nil {
			return nil, err
		}
		if now.Before(u.LockedUntil) {
			return nil, &LockedError{Until: u.LockedUntil}
		}
		return nil, ErrBadCredentials
	}
	if u.FailedSignIns > 0 {
		if err := s.Store.ResetFailedSignIns(ctx, u.ID); err != nil {
			return nil, err
		}
	}
	token, csrf := randomToken(), randomToken()
	sess := &coreapi.DashboardSession{TokenHash: HashToken(token), UserID: u.ID, CSRFToken: csrf,
		CreatedAt: now, ExpiresAt: now.Add(cfg.SessionLifetime), LastSeenAt: now}
	if err := s.Store.CreateDashboardSession(ctx, sess, now.Add(-cfg.IdleTimeout)); err != nil {
		return nil, err
	}
	out := s.newSession(sess, u)
	out.Token = token
	return out, nil
}

// Session returns the live session of a cookie token, with its user, and
// counts this as a use of it: the idle timeout starts again.
func (s *Service) Session(ctx context.Context, token string) (*Session, error) {
	return s.session(ctx, token, true)
}

// PeekSession is Session without counting a use: the page's check of
// whether it is still signed in does not keep an idle session alive.
func (s *Service) PeekSession(ctx context.Context, token string) (*Session, error) {
	return s.session(ctx, token, false)
}

func (s *Service) session(ctx context.Context, token string, use bool) (*Session, error) {
	if token == "" {
		return nil, ErrNoSession
	}
	now, hash := s.now(), HashToken(token)
	sess, err := s.Store.DashboardSession(ctx, hash, now, now.Add(-s.cfg().IdleTimeout))
	if errors.Is(err, coreapi.ErrNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	if use && now.Sub(sess.LastSeenAt) >= touchInterval {
		if err := s.Store.TouchDashboardSession(ctx, hash, now); err != nil {
			return nil, err
		}
		sess.LastSeenAt = now
	}
	u, err := s.Store.DashboardUser(ctx, sess.UserID)
	if errors.Is(err, coreapi.ErrNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	return s.newSession(sess, u), nil
}

// SignOut ends the session of a cookie token; an unknown one is no error.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	return s.Store.DeleteDashboardSession(ctx, HashToken(token))
}

// Token is a bearer token minted for a session.
type Token struct {
	AccessToken        string
	ExpiresAt          time.Time
	Scopes             []string
	MerchantAccountIDs []string
}

// Token mints a bearer token for sess's user: its role's scopes, its
// merchant accounts, living TokenLifetime and never beyond the session,
// nor past its idle timeout. A user who must change their password gets
// none.
func (s *Service) Token(sess *Session) (*Token, error) {
	if err := sess.Unrestricted(); err != nil {
		return nil, err
	}
	now := s.now().Truncate(time.Second)
	lifetime := min(s.cfg().TokenLifetime, sess.ExpiresAt.Sub(now), sess.IdleExpiresAt.Sub(now))
	if lifetime < time.Second {
		return nil, ErrNoSession
	}
	scopes := sess.User.Role.Scopes()
	tok, err := auth.Mint(s.SigningKey, s.Issuer, scopes, lifetime, now, sess.User.MerchantAccountIDs)
	if err != nil {
		return nil, err
	}
	return &Token{AccessToken: tok, ExpiresAt: now.Add(lifetime), Scopes: scopes,
		MerchantAccountIDs: slices.Clone(sess.User.MerchantAccountIDs)}, nil
}

// HashToken is how a session token is stored: its SHA-256.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// randomToken returns 256 random bits, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// dummy returns a hash to check unknown emails against, made once.
func (s *Service) dummy() string {
	s.dummyOnce.Do(func() { s.dummyHash, _ = HashPassword(randomToken()) })
	return s.dummyHash
}
