// Package paymentservices is the service of payment services: a merchant
// account's configurations of connectors (docs/payment-services.md), and
// the routing of a payment to one of them.
//
// Settings and credentials are checked against the connector's own
// schemas (connector.Schemas). Credentials are encrypted before they
// reach the store (Crypter, bound to the record's merchant account and
// id) and decrypted only to hand a connector its configuration for a
// call; no answer carries them, only the names of the fields set.
package paymentservices

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/pagination"
)

// Store is the core database as this service uses it. Every call is
// scoped to a merchant account; another account's payment service, and a
// deleted one where the doc says so, is coreapi.ErrNotFound.
type Store interface {
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// PaymentService reads a payment service that is not deleted.
	PaymentService(ctx context.Context, merchant, id string) (*coreapi.PaymentService, error)
	// ListPaymentServices returns up to page.FetchLimit() payment
	// services that are not deleted, in the page's query order.
	ListPaymentServices(ctx context.Context, merchant string, page pagination.Page) ([]coreapi.PaymentService, error)
	// PaymentServiceCredentials reads a payment service with its
	// credentials' ciphertext; a deleted one only with withDeleted (what
	// transactions it authorized are captured, voided and refunded with).
	PaymentServiceCredentials(ctx context.Context, merchant, id string, withDeleted bool) (*coreapi.PaymentService, string, error)
	// DefaultPaymentService reads the merchant account's default for
	// method with its credentials' ciphertext; none is coreapi.ErrNotFound.
	DefaultPaymentService(ctx context.Context, merchant, method string) (*coreapi.PaymentService, string, error)
}

// Tx is the core database within one transaction.
type Tx interface {
	// LockPaymentService reads a payment service that is not deleted and
	// holds its row's lock until the transaction ends.
	LockPaymentService(ctx context.Context, merchant, id string) (*coreapi.PaymentService, error)
	// LockPaymentServiceCredentials is LockPaymentService with the
	// credentials' ciphertext.
	LockPaymentServiceCredentials(ctx context.Context, merchant, id string) (*coreapi.PaymentService, string, error)
	// ClearDefault makes no payment service of the merchant account the
	// default for method but except; it serializes the moves of one
	// account's default for a method.
	ClearDefault(ctx context.Context, merchant, method, except string) error
	// InsertPaymentService stores ps (its id set) with its credentials'
	// ciphertext and sets its times.
	InsertPaymentService(ctx context.Context, ps *coreapi.PaymentService, ciphertext string) error
	// UpdatePaymentService writes ps's display name, active, default and
	// settings, and the ciphertext unless it is "" (kept); it sets
	// UpdatedAt.
	UpdatePaymentService(ctx context.Context, ps *coreapi.PaymentService, ciphertext string) error
	// DeletePaymentService marks a payment service deleted (and no longer
	// the default).
	DeletePaymentService(ctx context.Context, merchant, id string) error
}

// Crypter encrypts credentials at rest (vaulttransit.Client): a
// ciphertext decrypts with the binding it was made with only.
type Crypter interface {
	Encrypt(ctx context.Context, binding string, plaintext []byte) (string, error)
	Decrypt(ctx context.Context, binding, ciphertext string) ([]byte, error)
}

// Connectors are the environment's connectors (connector.Registry).
type Connectors interface {
	Schemas(name string) (connector.Schemas, error)
	Configurable() []string
}

// Service manages payment services.
type Service struct {
	Store      Store
	Connectors Connectors
	Crypter    Crypter
}

// binding is the derivation context of a payment service's credentials.
func binding(merchant, id string) string {
	return "payment-service\x00" + merchant + "\x00" + id
}

// Create validates f against its connector's schemas and stores a
// payment service, its credentials encrypted; one made the default takes
// that place from the previous default in the same transaction.
func (s *Service) Create(ctx context.Context, merchant string, f coreapi.PaymentServiceFields) (*coreapi.PaymentService, error) {
	if err := f.Validate(true); err != nil {
		return nil, err
	}
	var v coreapi.Problems
	sc, err := s.Connectors.Schemas(f.Connector)
	if errors.Is(err, connector.ErrUnknown) {
		v.Add("/connector", "is not a connector of this environment; one of: "+strings.Join(s.Connectors.Configurable(), ", "), "value_error.connector.unknown")
		return nil, v.Err()
	}
	if err != nil {
		return nil, err
	}
	ps := &coreapi.PaymentService{
		ID: uuid.NewString(), MerchantAccountID: merchant, Connector: f.Connector, Method: f.Method,
		DisplayName: f.DisplayName.Ptr(), Active: true,
	}
	if ps.Method == "" {
		ps.Method = sc.Methods[0]
	} else if !slices.Contains(sc.Methods, ps.Method) {
		v.Add("/method", "is not a payment method of "+f.Connector+": one of "+strings.Join(sc.Methods, ", "), "value_error.method")
	}
	if p := f.Active.Ptr(); p != nil {
		ps.Active = *p
	}
	if p := f.Default.Ptr(); p != nil {
		ps.Default = *p
	}
	settings := sc.Settings.Validate("/settings", f.Settings, &v)
	creds := sc.Credentials.ValidateSecrets("/credentials", f.Credentials, &v)
	checkDefault(&v, ps, f)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if ps.Settings, err = json.Marshal(settings); err != nil {
		return nil, err
	}
	ct, err := s.seal(ctx, ps, creds)
	if err != nil {
		return nil, err
	}
	ps.CredentialsSet = creds.Names()
	err = s.Store.InTx(ctx, func(tx Tx) error {
		if ps.Default {
			if err := tx.ClearDefault(ctx, merchant, ps.Method, ps.ID); err != nil {
				return err
			}
		}
		return tx.InsertPaymentService(ctx, ps, ct)
	})
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// checkDefault refuses a default that could not be used.
func checkDefault(v *coreapi.Problems, ps *coreapi.PaymentService, f coreapi.PaymentServiceFields) {
	if ps.Default && !ps.Active {
		p := "/default"
		if !f.Default.Set {
			p = "/active"
		}
		v.Add(p, "an inactive payment service cannot be its method's default; set default to false with active false", "value_error.default_inactive")
	}
}

// seal encrypts credentials as a JSON object, bound to ps.
func (s *Service) seal(ctx context.Context, ps *coreapi.PaymentService, creds connector.Secrets) (string, error) {
	plain := make(map[string]string, len(creds))
	for k, c := range creds {
		plain[k] = c.Reveal()
	}
	raw, err := json.Marshal(plain)
	if err != nil {
		return "", err
	}
	defer clear(raw)
	return s.Crypter.Encrypt(ctx, binding(ps.MerchantAccountID, ps.ID), raw)
}

// Get returns payment service id of the merchant account.
func (s *Service) Get(ctx context.Context, merchant, id string) (*coreapi.PaymentService, error) {
	return s.Store.PaymentService(ctx, merchant, id)
}

// List returns a page of the merchant account's payment services.
func (s *Service) List(ctx context.Context, merchant string, page pagination.Page) ([]coreapi.PaymentService, error) {
	return s.Store.ListPaymentServices(ctx, merchant, page)
}

// Update applies a partial update to payment service id: absent fields
// keep their value; settings, when given, are validated and replace the
// stored ones as a whole. Credentials, when given, are merged into the
// stored ones: each one named replaces its value, null drops it, those
// not named are kept; the result is validated against the connector's
// schema (an unknown name, or a required one dropped, is a problem).
func (s *Service) Update(ctx context.Context, merchant, id string, f coreapi.PaymentServiceFields) (*coreapi.PaymentService, error) {
	if err := f.Validate(false); err != nil {
		return nil, err
	}
	cur, err := s.Store.PaymentService(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	var v coreapi.Problems
	var settings json.RawMessage
	var sc connector.Schemas
	if f.Settings != nil || f.Credentials != nil {
		if sc, err = s.Connectors.Schemas(cur.Connector); errors.Is(err, connector.ErrUnknown) {
			return nil, coreapi.ErrPaymentServiceConnector
		} else if err != nil {
			return nil, err
		}
		if f.Settings != nil {
			if settings, err = json.Marshal(sc.Settings.Validate("/settings", f.Settings, &v)); err != nil {
				return nil, err
			}
		}
	}
	var given map[string]json.RawMessage
	if f.Credentials != nil && json.Unmarshal(f.Credentials, &given) != nil {
		v.Add("/credentials", "must be an object", "type_error.dict")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	var ps *coreapi.PaymentService
	err = s.Store.InTx(ctx, func(tx Tx) error {
		ct := ""
		if f.Credentials != nil {
			// The stored credentials are read, merged and sealed again under
			// the row's lock, so two partial replacements at once both
			// count.
			var stored string
			if ps, stored, err = tx.LockPaymentServiceCredentials(ctx, merchant, id); err != nil {
				return err
			}
			creds, err := s.merge(ctx, ps, stored, given, sc.Credentials)
			if err != nil {
				return err
			}
			if ct, err = s.seal(ctx, ps, creds); err != nil {
				return err
			}
			ps.CredentialsSet = creds.Names()
		} else if ps, err = tx.LockPaymentService(ctx, merchant, id); err != nil {
			return err
		}
		wasDefault := ps.Default
		if f.DisplayName.Set {
			ps.DisplayName = f.DisplayName.Ptr()
		}
		if p := f.Active.Ptr(); p != nil {
			ps.Active = *p
		}
		if p := f.Default.Ptr(); p != nil {
			ps.Default = *p
		}
		if settings != nil {
			ps.Settings = settings
		}
		var v coreapi.Problems
		if checkDefault(&v, ps, f); len(v) > 0 {
			return v.Err()
		}
		if ps.Default && !wasDefault {
			if err := tx.ClearDefault(ctx, merchant, ps.Method, ps.ID); err != nil {
				return err
			}
		}
		return tx.UpdatePaymentService(ctx, ps, ct)
	})
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// merge unseals ps's stored credentials and applies given over them (a
// value replaces, null drops), then validates the result against schema:
// problems point at /credentials/<name>. A stored credential the schema
// no longer has is dropped rather than kept against it. The values stay
// in memory only as long as this takes.
func (s *Service) merge(ctx context.Context, ps *coreapi.PaymentService, stored string, given map[string]json.RawMessage, schema connector.Schema) (connector.Secrets, error) {
	raw, err := s.Crypter.Decrypt(ctx, binding(ps.MerchantAccountID, ps.ID), stored)
	if err != nil {
		return nil, err
	}
	defer clear(raw)
	merged := map[string]json.RawMessage{}
	defer func() {
		for _, v := range merged {
			clear(v)
		}
	}()
	if err := json.Unmarshal(raw, &merged); err != nil {
		return nil, ErrStoredConfig
	}
	known := func(name string) bool {
		return slices.ContainsFunc(schema, func(f connector.Field) bool { return f.Name == name })
	}
	for k := range merged {
		if !known(k) {
			delete(merged, k)
		}
	}
	for k, val := range given {
		if known(k) && isNull(val) {
			delete(merged, k)
		} else {
			merged[k] = val
		}
	}
	body, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	defer clear(body)
	var v coreapi.Problems
	creds := schema.ValidateSecrets("/credentials", body, &v)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return creds, nil
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// Delete marks payment service id deleted: gone from reads and routing,
// kept for the transactions it authorized (their captures, voids and
// refunds still go through it).
func (s *Service) Delete(ctx context.Context, merchant, id string) error {
	return s.Store.InTx(ctx, func(tx Tx) error {
		if _, err := tx.LockPaymentService(ctx, merchant, id); err != nil {
			return err
		}
		return tx.DeletePaymentService(ctx, merchant, id)
	})
}

// ForPayment is the payment service a new payment of method goes to, with
// its configuration: the one named by id (which must be the merchant
// account's, active and for method: else a *coreapi.PaymentServiceError),
// or without id the account's default for method. Neither: nil and no
// error (the caller decides what the environment does then).
func (s *Service) ForPayment(ctx context.Context, merchant string, id *string, method string) (*coreapi.PaymentService, connector.Config, error) {
	var ps *coreapi.PaymentService
	var ct string
	var err error
	if id != nil {
		ps, ct, err = s.Store.PaymentServiceCredentials(ctx, merchant, *id, false)
		if errors.Is(err, coreapi.ErrNotFound) {
			return nil, connector.Config{}, coreapi.ErrPaymentServiceNotFound
		}
	} else {
		ps, ct, err = s.Store.DefaultPaymentService(ctx, merchant, method)
		if errors.Is(err, coreapi.ErrNotFound) {
			return nil, connector.Config{}, nil
		}
	}
	if err != nil {
		return nil, connector.Config{}, err
	}
	switch {
	case !ps.Active:
		return nil, connector.Config{}, coreapi.ErrPaymentServiceInactive
	case ps.Method != method:
		return nil, connector.Config{}, coreapi.ErrPaymentServiceMethod
	}
	cfg, err := s.config(ctx, ps, ct)
	return ps, cfg, err
}

// ForOperation is payment service id, deleted or inactive alike, with its
// configuration: what a capture, void, refund or lookup of a payment it
// authorized is sent with.
func (s *Service) ForOperation(ctx context.Context, merchant, id string) (*coreapi.PaymentService, connector.Config, error) {
	ps, ct, err := s.Store.PaymentServiceCredentials(ctx, merchant, id, true)
	if err != nil {
		return nil, connector.Config{}, err
	}
	cfg, err := s.config(ctx, ps, ct)
	return ps, cfg, err
}

// ErrStoredConfig is a stored configuration its connector no longer
// takes (a connector's schema changed under it): a server error, to fix
// by updating the payment service.
var ErrStoredConfig = errors.New("paymentservices: the stored configuration does not match the connector's schema")

// config decrypts ps's credentials and reads its settings, both checked
// against the connector's schemas again.
func (s *Service) config(ctx context.Context, ps *coreapi.PaymentService, ciphertext string) (connector.Config, error) {
	sc, err := s.Connectors.Schemas(ps.Connector)
	if errors.Is(err, connector.ErrUnknown) {
		return connector.Config{}, coreapi.ErrPaymentServiceConnector
	}
	if err != nil {
		return connector.Config{}, err
	}
	raw, err := s.Crypter.Decrypt(ctx, binding(ps.MerchantAccountID, ps.ID), ciphertext)
	if err != nil {
		return connector.Config{}, err
	}
	defer clear(raw)
	var v coreapi.Problems
	cfg := connector.Config{
		Settings:    sc.Settings.Validate("/settings", ps.Settings, &v),
		Credentials: sc.Credentials.ValidateSecrets("/credentials", raw, &v),
	}
	if len(v) > 0 {
		return connector.Config{}, ErrStoredConfig
	}
	return cfg, nil
}
