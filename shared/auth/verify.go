package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	"github.com/payorch/shared/accountid"

	"github.com/payorch/shared/apierror"
)

// Algorithm is the only signing algorithm issued and accepted.
const Algorithm = "ES512"

// Defaults of Config.
const (
	DefaultLeeway      = 30 * time.Second
	DefaultMaxLifetime = 30 * 24 * time.Hour
	DefaultCacheSize   = 4096
)

// MaxTokenLen is the longest token Verify looks at; longer ones are
// rejected before any decoding.
const MaxTokenLen = 8192

// maxJTILen bounds the jti, which ends up in log lines.
const maxJTILen = 256

// The errors Verify and Require answer with. Shared values are safe: the
// apierror With methods return copies.
var (
	errMissing     = apierror.Unauthorized("missing bearer token")
	errBadHeader   = apierror.Unauthorized("invalid authorization header")
	errInvalid     = apierror.Unauthorized("invalid token")
	errExpired     = apierror.Unauthorized("token expired")
	errNotYetValid = apierror.Unauthorized("token not yet valid")
	errNoPrincipal = apierror.Unauthorized("missing bearer token")
)

// Config configures a Verifier. Zero fields take the defaults.
type Config struct {
	// Keys are the accepted public keys. Required.
	Keys *KeySet

	// Leeway absorbs clock skew: iat and nbf may be this far in the future
	// and exp is honoured until this long after it. Zero means
	// DefaultLeeway; a negative value means none.
	Leeway time.Duration

	// MaxLifetime caps exp - iat and exp - nbf, bounding how long a leaked
	// token is useful. Zero means DefaultMaxLifetime.
	MaxLifetime time.Duration

	// CacheSize is the number of verified tokens kept so that their ES512
	// signature is not verified again on every request. Zero means
	// DefaultCacheSize; a negative value disables the cache.
	CacheSize int

	// Now is the clock Verify uses when it is given the zero time. Nil
	// means time.Now.
	Now func() time.Time

	// Logger, if set, gets one debug line per rejected token with the
	// precise reason (never the token). Nil means no logging.
	Logger *slog.Logger
}

// Verifier checks bearer tokens. It is safe for concurrent use.
type Verifier struct {
	keys        atomic.Pointer[KeySet]
	leeway      time.Duration
	maxLifetime time.Duration
	now         func() time.Time
	logger      *slog.Logger
	parser      *jwt.Parser
	cache       *lru // nil when disabled
}

// NewVerifier returns a Verifier for cfg.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.Keys == nil {
		return nil, errors.New("auth: Config.Keys is required")
	}
	if cfg.MaxLifetime < 0 {
		return nil, errors.New("auth: Config.MaxLifetime must not be negative")
	}
	v := &Verifier{
		leeway:      cfg.Leeway,
		maxLifetime: cfg.MaxLifetime,
		now:         cfg.Now,
		logger:      cfg.Logger,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{Algorithm}),
			jwt.WithStrictDecoding(),      // one encoding per token: no padding, no stray bits
			jwt.WithoutClaimsValidation(), // times are checked by checkTimes, also on cache hits
		),
	}
	switch {
	case v.leeway == 0:
		v.leeway = DefaultLeeway
	case v.leeway < 0:
		v.leeway = 0
	}
	if v.maxLifetime == 0 {
		v.maxLifetime = DefaultMaxLifetime
	}
	if v.now == nil {
		v.now = time.Now
	}
	switch {
	case cfg.CacheSize == 0:
		v.cache = newLRU(DefaultCacheSize)
	case cfg.CacheSize > 0:
		v.cache = newLRU(cfg.CacheSize)
	}
	v.keys.Store(cfg.Keys)
	return v, nil
}

// SetKeys replaces the accepted keys, for rotation and revocation. Tokens
// verified against the previous KeySet are no longer served from the cache.
func (v *Verifier) SetKeys(ks *KeySet) error {
	if ks == nil {
		return errors.New("auth: nil KeySet")
	}
	v.keys.Store(ks)
	if v.cache != nil {
		v.cache.purge()
	}
	return nil
}

// claims is the payload of a token.
type claims struct {
	jwt.RegisteredClaims
	Scopes             []string  `json:"scopes"`
	MerchantAccountIDs *[]string `json:"merchant_account_ids,omitempty"`
}

// Verify checks the value of an Authorization header ("Bearer <jwt>") at
// the instant now (the zero time means Config.Now) and returns the token's
// Principal. Every error is an *apierror.Error with status 401. ctx is
// reserved for key sources that need I/O; Verify does none today.
func (v *Verifier) Verify(ctx context.Context, authorization string, now time.Time) (*Principal, error) {
	return v.verifyHeader(ctx, authorization, now, false)
}

// VerifyBytes is Verify for a header value a server holds in its own
// buffer (fasthttp): a token the cache knows is checked without copying
// its ~600 bytes, which every authenticated request would otherwise pay
// for twice. The buffer is only read, and only during the call.
func (v *Verifier) VerifyBytes(ctx context.Context, authorization []byte, now time.Time) (*Principal, error) {
	return v.verifyHeader(ctx, unsafe.String(unsafe.SliceData(authorization), len(authorization)), now, true)
}

// verifyHeader is Verify; borrowed says authorization aliases a buffer the
// caller reuses, so it is copied before anything (the JWT parser, the
// Principal) could keep a part of it.
func (v *Verifier) verifyHeader(ctx context.Context, authorization string, now time.Time, borrowed bool) (*Principal, error) {
	_ = ctx
	if now.IsZero() {
		now = v.now()
	}
	if authorization == "" {
		return nil, errMissing
	}
	// The token's characters are checked only on a cache miss: a hit is a
	// token identical to one that passed every check.
	token, ok := bearerPart(authorization)
	if !ok {
		return nil, v.reject(errBadHeader, "authorization header is not a bearer token")
	}
	if len(token) > MaxTokenLen {
		return nil, v.reject(errInvalid, "token too long")
	}

	keys := v.keys.Load()
	if v.cache != nil {
		if p, ok := v.cache.get(token, keys); ok {
			if err := v.checkTimes(p, now); err != nil {
				if err == errExpired {
					v.cache.remove(token)
				}
				return nil, err
			}
			return p.clone(), nil
		}
	}

	if !tokenChars(token) {
		return nil, v.reject(errBadHeader, "authorization header is not a bearer token")
	}
	if borrowed {
		token = strings.Clone(token) // also the cache's key below
	}
	p, err := v.verify(token, keys)
	if err != nil {
		return nil, err
	}
	if err := v.checkTimes(p, now); err != nil {
		return nil, err
	}
	if v.cache != nil {
		v.cache.add(token, keys, p)
	}
	return p.clone(), nil
}

// verify checks the signature and the claims that do not depend on the
// time, and builds the Principal.
func (v *Verifier) verify(token string, keys *KeySet) (*Principal, error) {
	var key Key
	var c claims
	_, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("crit header not supported")
		}
		if typ, ok := t.Header["typ"]; ok {
			if s, _ := typ.(string); !strings.EqualFold(s, "JWT") {
				return nil, errors.New("typ is not JWT")
			}
		}
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("missing kid")
		}
		k, ok := keys.Lookup(kid)
		if !ok {
			return nil, errors.New("unknown kid")
		}
		key = k
		return k.Public, nil
	})
	if err != nil {
		return nil, v.reject(errInvalid, err.Error())
	}

	switch {
	case c.Issuer != key.Issuer:
		return nil, v.reject(errInvalid, "iss does not match the key's issuer", "kid", key.ID)
	case c.ExpiresAt == nil || c.IssuedAt == nil || c.NotBefore == nil:
		return nil, v.reject(errInvalid, "exp, iat and nbf are required", "kid", key.ID)
	case c.ID == "" || len(c.ID) > maxJTILen:
		return nil, v.reject(errInvalid, "jti missing or too long", "kid", key.ID)
	case !printableID(c.ID):
		// It names the caller in log lines and audit records.
		return nil, v.reject(errInvalid, "jti holds a control character or invalid UTF-8", "kid", key.ID)
	case c.Scopes == nil:
		return nil, v.reject(errInvalid, "scopes claim missing", "kid", key.ID)
	}
	exp, iat, nbf := c.ExpiresAt.Time, c.IssuedAt.Time, c.NotBefore.Time
	if !exp.After(iat) {
		return nil, v.reject(errInvalid, "exp not after iat", "kid", key.ID)
	}
	if exp.Sub(iat) > v.maxLifetime || exp.Sub(nbf) > v.maxLifetime {
		return nil, v.reject(errInvalid, "lifetime exceeds the maximum", "kid", key.ID, "jti", c.ID)
	}
	p := &Principal{
		KeyID:     key.ID,
		Issuer:    key.Issuer,
		TokenID:   c.ID,
		Scopes:    c.Scopes,
		IssuedAt:  iat,
		NotBefore: nbf,
		ExpiresAt: exp,
	}
	switch {
	case c.MerchantAccountIDs == nil:
		// A token without the claim names no account, and its requests
		// act in "default" unless their header says otherwise: without the
		// claim that header cannot take it anywhere else
		// (docs/api-conventions.md, "Tokens and merchant accounts").
		p.MerchantAccountIDs = []string{DefaultMerchantAccount}
	case len(*c.MerchantAccountIDs) == 0 || slices.Contains(*c.MerchantAccountIDs, ""):
		return nil, v.reject(errInvalid, "merchant_account_ids empty or holding an empty id", "kid", key.ID, "jti", c.ID)
	case slices.Equal(*c.MerchantAccountIDs, []string{AllMerchantAccounts}):
		p.AllMerchantAccounts = true
	case slices.Contains(*c.MerchantAccountIDs, AllMerchantAccounts):
		return nil, v.reject(errInvalid, `merchant_account_ids holds "*" with other ids`, "kid", key.ID, "jti", c.ID)
	default:
		p.MerchantAccountIDs = *c.MerchantAccountIDs
	}
	return p, nil
}

// checkTimes checks iat, nbf and exp against now with the leeway.
func (v *Verifier) checkTimes(p *Principal, now time.Time) error {
	if !now.Before(p.ExpiresAt.Add(v.leeway)) {
		return v.reject(errExpired, "token expired", "kid", p.KeyID, "jti", p.TokenID)
	}
	late := now.Add(v.leeway)
	if late.Before(p.NotBefore) || late.Before(p.IssuedAt) {
		return v.reject(errNotYetValid, "nbf or iat in the future", "kid", p.KeyID, "jti", p.TokenID)
	}
	return nil
}

// reject logs why a token was refused and returns the client's answer.
func (v *Verifier) reject(e *apierror.Error, reason string, attrs ...any) error {
	if v.logger != nil {
		v.logger.Debug("auth: token rejected", append([]any{"reason", reason}, attrs...)...)
	}
	return e
}

// Principal is who a verified token speaks for. Treat it as read-only.
type Principal struct {
	KeyID     string // kid: the thumbprint of the API key that signed the token
	Issuer    string
	TokenID   string // jti
	Scopes    []string
	IssuedAt  time.Time
	NotBefore time.Time
	ExpiresAt time.Time

	// MerchantAccountIDs are the merchant accounts the token may act in,
	// unless AllMerchantAccounts is set: its merchant_account_ids claim, or
	// DefaultMerchantAccount alone for a token without the claim. Empty
	// means none.
	MerchantAccountIDs []string
	// AllMerchantAccounts is set by the claim ["*"] (AllMerchantAccounts):
	// the token may act in every merchant account of the instance.
	AllMerchantAccounts bool
}

// AllMerchantAccounts, as the whole of a token's merchant_account_ids
// claim, lets it act in every merchant account: a grant made explicitly
// when the token is minted. It cannot be an account's id (those match
// [a-z0-9][a-z0-9_-]*).
const AllMerchantAccounts = "*"

// DefaultMerchantAccount is the one merchant account a token without a
// merchant_account_ids claim may act in: the account a request that names
// none acts in (docs/api-conventions.md).
const DefaultMerchantAccount = accountid.Default

// principalCopy is a Principal with room for its slices, so that the copy
// every Verify returns is a single allocation for the usual token, which
// carries a few scopes and merchant accounts.
type principalCopy struct {
	p   Principal
	buf [4]string
}

// clone returns a copy that shares no slice with p: a caller writing to it
// cannot reach the cached Principal.
func (p *Principal) clone() *Principal {
	c := &principalCopy{p: *p}
	buf := c.buf[:0]
	if n := len(p.Scopes) + len(p.MerchantAccountIDs); n > len(c.buf) {
		buf = make([]string, 0, n)
	}
	c.p.Scopes, buf = carve(buf, p.Scopes)
	c.p.MerchantAccountIDs, _ = carve(buf, p.MerchantAccountIDs)
	return &c.p
}

// carve appends s to buf and returns the copy, its capacity capped so that
// an append to it reallocates instead of overwriting what follows, and buf
// grown by it. A nil s stays nil.
func carve(buf, s []string) (copied, grown []string) {
	if s == nil {
		return nil, buf
	}
	n := len(buf)
	buf = append(buf, s...)
	return buf[n:len(buf):len(buf)], buf
}

// Require returns nil if the principal holds a scope allowing needed (see
// Match), else a 403 forbidden *apierror.Error. A nil principal is 401; a
// needed scope that is not a concrete `<resource>.read|write` is a
// programming error and answers 500, so it cannot go unnoticed.
func (p *Principal) Require(needed string) error {
	if p == nil {
		return errNoPrincipal
	}
	if res, _, ok := splitScope(needed); !ok || res == "*" {
		return apierror.Internal(fmt.Errorf("auth: Require(%q): not a concrete scope", needed))
	}
	if !Match(p.Scopes, needed) {
		return apierror.Forbidden("missing scope " + needed)
	}
	return nil
}

// CanAccessMerchant reports whether the token may act on merchant account
// id: one its claim lists, any with AllMerchantAccounts, and only
// DefaultMerchantAccount for a token without the claim.
func (p *Principal) CanAccessMerchant(id string) bool {
	if p == nil || id == "" {
		return false
	}
	return p.AllMerchantAccounts || slices.Contains(p.MerchantAccountIDs, id)
}

// printableID reports whether s is valid UTF-8 without control characters.
func printableID(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
