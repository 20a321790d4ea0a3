// Package forwardconfig is the domain and service of vault forward
// destinations: per merchant account, forwarding configs list the hosts
// POST /vault-forward may reach and carry the advanced authentication
// methods (signature, mtls, mle) a forward may name.
//
// Credentials are stored exactly as entered (not validated, extra spaces
// and new lines kept: docs/vault-forward-authentication.md) and only
// sealed, with the same envelope encryption as cards and associated data
// binding merchant account and method id. They are opened only for a forward that names the
// method; responses list every field key but carry values only for
// non-secret keys. One safety check is made, not a validation: a
// non-secret field (kept in clear and returned) refuses a private key.
package forwardconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/pgtext"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/outbound"
)

// Kinds of authentication method.
const (
	KindSignature = "signature"
	KindMTLS      = "mtls"
	KindMLE       = "mle"
)

// Limits.
const (
	MaxHosts          = 100
	MaxMethods        = 20 // per config
	MaxFieldValueLen  = 64 << 10
	MaxDisplayNameLen = 200
)

// fieldSpec is one field key a kind accepts.
type fieldSpec struct {
	secret   bool
	required bool
}

// kinds lists the field keys of each kind
// (docs/vault-forward-authentication.md). Only key
// and private_key are secret; certificates, public keys and algorithm names
// are returned.
var kinds = map[string]map[string]fieldSpec{
	KindSignature: {
		"algorithm": {required: true}, "key_id": {}, "key": {secret: true, required: true},
		"covered_components": {}, "label": {}, "expires_in": {},
	},
	KindMTLS: {
		"certificate": {required: true}, "private_key": {secret: true, required: true}, "ca_certificate": {},
	},
	KindMLE: {
		"public_key": {required: true}, "key_id": {}, "algorithm": {}, "encryption": {},
	},
}

// IsSecret reports whether a field of kind is secret (never returned).
// Unknown keys count as secret.
func IsSecret(kind, key string) bool {
	spec, ok := kinds[kind][key]
	return !ok || spec.secret
}

// Config is one forwarding config.
type Config struct {
	ID                uuid.UUID
	MerchantAccountID string
	DisplayName       string
	Hosts             []string // normalised: lower case, "host" or "host:port"
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Field is one key/value pair of an authentication method.
type Field struct {
	Key   string
	Value string
}

// AuthMethod is a stored authentication method. PublicFields holds the
// values of non-secret keys only; the rest is in Sealed.
type AuthMethod struct {
	ID                uuid.UUID
	ConfigID          uuid.UUID
	MerchantAccountID string
	Kind              string
	DisplayName       string
	FieldKeys         []string // every key, in the order entered
	PublicFields      map[string]string
	Sealed            envelope.Sealed
	CreatedAt         time.Time
}

// Opened is an authentication method opened for one forward.
type Opened struct {
	ID     uuid.UUID
	Kind   string
	Fields map[string]string // exactly as entered
	Hosts  []string          // the hosts of the method's config
}

// Store persists configs and methods. Every call is scoped to a merchant
// account; another account's record is vaultproxy.ErrNotFound.
type Store interface {
	InsertConfig(ctx context.Context, c *Config) error
	ForwardConfigs(ctx context.Context, merchantAccountID string, page pagination.Page) ([]*Config, error)
	ForwardConfig(ctx context.Context, merchantAccountID string, id uuid.UUID) (*Config, error)
	// UpdateConfig applies change to the config under its row lock and
	// stores the result, in one transaction; change's error is returned.
	UpdateConfig(ctx context.Context, merchantAccountID string, id uuid.UUID, change func(*Config) error) (*Config, error)
	// DeleteConfig removes the config and its methods, returning the
	// methods' sealed records so their cached keys can be forgotten.
	DeleteConfig(ctx context.Context, merchantAccountID string, id uuid.UUID) ([]envelope.Sealed, error)
	ForwardHosts(ctx context.Context, merchantAccountID string) ([]string, error)

	InsertAuthMethod(ctx context.Context, m *AuthMethod, maxPerConfig int) error
	AuthMethods(ctx context.Context, merchantAccountID string, configID uuid.UUID) ([]*AuthMethod, error)
	// AuthMethodsByID returns the merchant's methods for ids, in order,
	// with their configs' hosts.
	AuthMethodsByID(ctx context.Context, merchantAccountID string, ids []uuid.UUID) ([]*AuthMethod, [][]string, error)
	DeleteAuthMethod(ctx context.Context, merchantAccountID string, configID, id uuid.UUID) (envelope.Sealed, error)
}

// ErrNotFound is a config or method that is not the merchant's.
var ErrNotFound = vaultproxy.ErrNotFound

// ErrTooMany is returned when a config already has MaxMethods methods.
var ErrTooMany = errors.New("forwarding: too many authentication methods on this config")

// FieldError is one invalid input field; Pointer is a JSON pointer.
type FieldError struct {
	Pointer string
	Message string
	Type    string
}

// FieldErrors is a validation failure.
type FieldErrors []FieldError

func (f FieldErrors) Error() string { return fmt.Sprintf("forwarding: %d invalid field(s)", len(f)) }

// Service manages configs and methods.
type Service struct {
	Store  Store
	Sealer *envelope.Sealer
	Now    func() time.Time

	// hosts caches each merchant's allowed hosts for the forward hot path.
	// This instance drops an entry when a config changes; other instances
	// within HostCacheTTL. hostsMu and hostsGen keep a read that began
	// before a change from caching what it read after the change dropped
	// the entry (see Hosts).
	hostsOnce sync.Once
	hosts     *expirable.LRU[string, []string]
	hostsMu   sync.Mutex
	hostsGen  uint64 // changes so far; under hostsMu
}

// HostCacheTTL bounds how long another instance may use a merchant's old
// host list after a config change.
const HostCacheTTL = 10 * time.Second

func (s *Service) hostCache() *expirable.LRU[string, []string] {
	s.hostsOnce.Do(func() { s.hosts = expirable.NewLRU[string, []string](10_000, nil, HostCacheTTL) })
	return s.hosts
}

// hostsChanged drops the merchant's cached hosts once a change to its
// configs has been stored (or may have been).
func (s *Service) hostsChanged(merchantAccountID string) {
	s.hostsMu.Lock()
	defer s.hostsMu.Unlock()
	s.hostsGen++
	s.hostCache().Remove(merchantAccountID)
}

// ConfigInput is a create or partial update; nil means absent.
type ConfigInput struct {
	DisplayName *string
	Hosts       *[]string
}

// CreateConfig validates and stores a config.
func (s *Service) CreateConfig(ctx context.Context, merchantAccountID string, in ConfigInput) (*Config, error) {
	var errs FieldErrors
	if in.DisplayName == nil {
		errs = append(errs, FieldError{"/display_name", "display_name is required", "value_error.missing"})
	}
	if in.Hosts == nil {
		errs = append(errs, FieldError{"/hosts", "hosts is required", "value_error.missing"})
	}
	c := &Config{MerchantAccountID: merchantAccountID}
	errs = append(errs, apply(c, in)...)
	if len(errs) > 0 {
		return nil, errs
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	c.ID = id
	err = s.Store.InsertConfig(ctx, c)
	s.hostsChanged(merchantAccountID) // an error may follow a commit
	if err != nil {
		return nil, err
	}
	return c, nil
}

// UpdateConfig changes the fields given; omitted ones stay, whatever a
// concurrent update changes.
func (s *Service) UpdateConfig(ctx context.Context, merchantAccountID string, id uuid.UUID, in ConfigInput) (*Config, error) {
	c, err := s.Store.UpdateConfig(ctx, merchantAccountID, id, func(c *Config) error {
		if errs := apply(c, in); len(errs) > 0 {
			return errs
		}
		return nil
	})
	s.hostsChanged(merchantAccountID) // an error may follow a commit
	if err != nil {
		return nil, err
	}
	return c, nil
}

func apply(c *Config, in ConfigInput) FieldErrors {
	var errs FieldErrors
	if in.DisplayName != nil {
		if e := checkDisplayName("/display_name", *in.DisplayName); e != nil {
			errs = append(errs, *e)
		} else {
			c.DisplayName = *in.DisplayName
		}
	}
	if in.Hosts != nil {
		hosts, herrs := NormalizeHosts(*in.Hosts)
		errs = append(errs, herrs...)
		c.Hosts = hosts
	}
	return errs
}

func checkDisplayName(pointer, s string) *FieldError {
	if n := utf8.RuneCountInString(s); n < 1 || n > MaxDisplayNameLen || strings.TrimSpace(s) == "" {
		return &FieldError{pointer, "must be 1 to 200 characters", "value_error.any_str.length"}
	}
	// A name is stored as PostgreSQL text, which holds neither. (Credential
	// values are not checked: they are used exactly as entered.)
	if !pgtext.Storable(s) {
		return &FieldError{pointer, "must be valid UTF-8 without the NUL character (U+0000)", "value_error.str.encoding"}
	}
	return nil
}

// NormalizeHosts validates a config's host list: 1..MaxHosts entries, each
// a host with an optional port, no scheme, no path, no user information;
// returned lower-cased and canonical, duplicates dropped.
func NormalizeHosts(in []string) ([]string, FieldErrors) {
	var errs FieldErrors
	if len(in) == 0 || len(in) > MaxHosts {
		return nil, FieldErrors{{"/hosts", fmt.Sprintf("must list 1 to %d hosts", MaxHosts), "value_error.list.length"}}
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for i, h := range in {
		p := fmt.Sprintf("/hosts/%d", i)
		switch {
		case strings.Contains(h, "://"):
			errs = append(errs, FieldError{p, "must be a host with an optional port, without a scheme", "value_error.host.scheme"})
			continue
		case strings.ContainsAny(h, "/?#"):
			errs = append(errs, FieldError{p, "must be a host with an optional port, without a path", "value_error.host.path"})
			continue
		case strings.Contains(h, "@"):
			errs = append(errs, FieldError{p, "must not contain user information", "value_error.host.userinfo"})
			continue
		}
		n, err := outbound.NormalizeHost(h)
		if err != nil {
			errs = append(errs, FieldError{p, "is not a valid host or host:port", "value_error.host"})
			continue
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, errs
}

// Configs reads one page of the merchant's configs, oldest first, as the
// store returns it (see pagination.Build).
func (s *Service) Configs(ctx context.Context, merchantAccountID string, page pagination.Page) ([]*Config, error) {
	return s.Store.ForwardConfigs(ctx, merchantAccountID, page)
}

// Config returns one config.
func (s *Service) Config(ctx context.Context, merchantAccountID string, id uuid.UUID) (*Config, error) {
	return s.Store.ForwardConfig(ctx, merchantAccountID, id)
}

// DeleteConfig removes a config and its methods.
func (s *Service) DeleteConfig(ctx context.Context, merchantAccountID string, id uuid.UUID) error {
	sealed, err := s.Store.DeleteConfig(ctx, merchantAccountID, id)
	s.hostsChanged(merchantAccountID)
	if err != nil {
		return err
	}
	for _, r := range sealed {
		s.Sealer.Forget(r)
	}
	return nil
}

// Hosts returns every host listed by the merchant's configs. A read that
// a change overtook (a change stored after the read's snapshot, whose
// hostsChanged ran before this read could cache) returns what it read but
// does not cache it: a host removed from a config is refused on this
// instance from the moment the change is answered.
func (s *Service) Hosts(ctx context.Context, merchantAccountID string) ([]string, error) {
	if h, ok := s.hostCache().Get(merchantAccountID); ok {
		return h, nil
	}
	s.hostsMu.Lock()
	gen := s.hostsGen
	s.hostsMu.Unlock()
	h, err := s.Store.ForwardHosts(ctx, merchantAccountID)
	if err != nil {
		return nil, err
	}
	s.hostsMu.Lock()
	if s.hostsGen == gen {
		s.hostCache().Add(merchantAccountID, h)
	}
	s.hostsMu.Unlock()
	return h, nil
}

// AuthInput is a new authentication method.
type AuthInput struct {
	Kind        string
	DisplayName string
	Fields      []Field
}

// AAD binds a method's ciphertext to its merchant account and id.
func AAD(merchantAccountID string, id uuid.UUID) []byte {
	return []byte("payorch/forward-auth/v1|" + merchantAccountID + "|" + id.String())
}

// AddAuthMethod validates the shape (kind, known and required keys; the
// values are not validated, except that a non-secret field may not hold a
// private key), seals the fields and stores the method on the merchant's
// config.
func (s *Service) AddAuthMethod(ctx context.Context, merchantAccountID string, configID uuid.UUID, in AuthInput) (*AuthMethod, error) {
	if _, err := s.Store.ForwardConfig(ctx, merchantAccountID, configID); err != nil {
		return nil, err
	}
	var errs FieldErrors
	spec, ok := kinds[in.Kind]
	if !ok {
		errs = append(errs, FieldError{"/kind", "must be one of signature, mtls, mle", "value_error.enum"})
	}
	if e := checkDisplayName("/display_name", in.DisplayName); e != nil {
		errs = append(errs, *e)
	}
	m := &AuthMethod{ID: uuid.New(), ConfigID: configID, MerchantAccountID: merchantAccountID, Kind: in.Kind,
		DisplayName: in.DisplayName, PublicFields: map[string]string{}}
	values := make(map[string]string, len(in.Fields))
	if len(in.Fields) == 0 {
		errs = append(errs, FieldError{"/fields", "must list the method's fields", "value_error.missing"})
	}
	for i, f := range in.Fields {
		p := fmt.Sprintf("/fields/%d", i)
		if _, dup := values[f.Key]; dup {
			errs = append(errs, FieldError{p + "/key", "duplicate key " + f.Key, "value_error.duplicate"})
			continue
		}
		if ok {
			if _, known := spec[f.Key]; !known {
				errs = append(errs, FieldError{p + "/key", "unknown key for kind " + in.Kind, "value_error.extra"})
				continue
			}
		}
		// Kept even when refused below, so that the key counts as given
		// (a refused value is not also a missing key); nothing is stored
		// once there is an error.
		values[f.Key] = f.Value
		m.FieldKeys = append(m.FieldKeys, f.Key)
		switch secret := IsSecret(in.Kind, f.Key); {
		case len(f.Value) > MaxFieldValueLen:
			errs = append(errs, FieldError{p + "/value", "is too long", "value_error.any_str.max_length"})
		case !secret && HoldsPrivateKey(f.Value):
			// A field that is not secret is stored beside the sealed
			// record and returned in every response: a private key pasted
			// into it (a private JWK as mle public_key, a certificate
			// bundled with its key) would be kept and shown in clear.
			errs = append(errs, FieldError{p + "/value", f.Key + " holds a private key (a PEM PRIVATE KEY block or a JWK with private members); " +
				f.Key + " is not secret and is returned in responses, so it takes only the public key or certificate", "value_error.private_key"})
		case !secret:
			m.PublicFields[f.Key] = f.Value
		}
	}
	if ok {
		for k, fs := range spec {
			if _, there := values[k]; fs.required && !there {
				errs = append(errs, FieldError{"/fields", "missing required key " + k, "value_error.missing"})
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// Values exactly as entered: no trimming, no repair.
	plain, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	if m.Sealed, err = s.Sealer.Seal(ctx, plain, AAD(merchantAccountID, m.ID)); err != nil {
		return nil, err
	}
	if err := s.Store.InsertAuthMethod(ctx, m, MaxMethods); err != nil {
		return nil, err
	}
	return m, nil
}

// AuthMethods lists a config's methods (without secrets).
func (s *Service) AuthMethods(ctx context.Context, merchantAccountID string, configID uuid.UUID) ([]*AuthMethod, error) {
	if _, err := s.Store.ForwardConfig(ctx, merchantAccountID, configID); err != nil {
		return nil, err
	}
	return s.Store.AuthMethods(ctx, merchantAccountID, configID)
}

// DeleteAuthMethod removes one method of a config.
func (s *Service) DeleteAuthMethod(ctx context.Context, merchantAccountID string, configID, id uuid.UUID) error {
	sealed, err := s.Store.DeleteAuthMethod(ctx, merchantAccountID, configID, id)
	if err != nil {
		return err
	}
	s.Sealer.Forget(sealed)
	return nil
}

// Open opens the merchant's methods named by ids, in that order. An id that
// is not the merchant's is ErrNotFound. An Open that read a method before
// it was deleted may still return it, but leaves its record key uncached.
func (s *Service) Open(ctx context.Context, merchantAccountID string, ids []uuid.UUID) ([]*Opened, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	since := s.Sealer.Drops() // before the rows: see envelope.Sealer.OpenSince
	methods, hosts, err := s.Store.AuthMethodsByID(ctx, merchantAccountID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*Opened, len(methods))
	for i, m := range methods {
		plain, err := s.Sealer.OpenSince(ctx, m.Sealed, AAD(merchantAccountID, m.ID), since)
		if err != nil {
			return nil, err
		}
		fields := map[string]string{}
		err = json.Unmarshal(plain, &fields)
		clear(plain)
		if err != nil {
			return nil, err
		}
		out[i] = &Opened{ID: m.ID, Kind: m.Kind, Fields: fields, Hosts: hosts[i]}
	}
	return out, nil
}
