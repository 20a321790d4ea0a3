// Package paymentmethods is the service of payment methods: tokens that
// vault-proxy issued (cards, gift cards, bank accounts), stored with their
// display data, which comes from vault-proxy by token and never from the
// request; a bank account's debit mandate, set up through a connector; and
// a card's expiry, of which vault-proxy keeps a copy for the expiry
// placeholders of forwards.
package paymentmethods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/zone"
)

// Store is the core database as this service uses it. Every call is scoped
// to a merchant account; another account's record is coreapi.ErrNotFound.
type Store interface {
	// InTx runs fn in one database transaction: committed when fn returns
	// nil (or by fn itself, Tx.Commit), rolled back otherwise.
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// CallTurn waits until a transaction that holds its connection across
	// a call to vault-proxy may take one, for the record key: such
	// transactions take turns, and a few at most hold connections at once.
	// release lets the next one in.
	CallTurn(ctx context.Context, key string) (release func(), err error)

	PaymentMethod(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error)
	// ListPaymentMethods returns up to page.FetchLimit() payment methods in
	// the page's query order.
	ListPaymentMethods(ctx context.Context, merchant string, f coreapi.PaymentMethodFilter, page pagination.Page) ([]coreapi.PaymentMethod, error)
	// BuyerPaymentMethods returns a buyer's payment methods of the given
	// method ("" for all), most recently used first.
	BuyerPaymentMethods(ctx context.Context, merchant, buyerID, method string) ([]coreapi.PaymentMethod, error)
	// GiftCards returns a buyer's gift cards sorted by sortBy (one of
	// coreapi.GiftCardSorts).
	GiftCards(ctx context.Context, merchant, buyerID, sortBy string) ([]coreapi.PaymentMethod, error)
	// ResolveBuyer resolves a buyer by id, external identifier or
	// both (which must then name the same buyer): its id and external
	// identifier, or coreapi.ErrNotFound.
	ResolveBuyer(ctx context.Context, merchant, id, externalIdentifier string) (string, string, error)
	// CreatePaymentMethod stores pm and, when not nil, its mandate, in one
	// transaction; a buyer deleted meanwhile is coreapi.ErrBuyerNotFound.
	CreatePaymentMethod(ctx context.Context, pm *coreapi.PaymentMethod, mandate *coreapi.Mandate) error
	// UpdatePaymentMethod applies u to the row in one statement. An
	// expiry must reach vault-proxy first: see Service.Update.
	UpdatePaymentMethod(ctx context.Context, merchant, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error)
	DeletePaymentMethod(ctx context.Context, merchant, id string) error
	// ListMandateEvents returns up to page.FetchLimit() events of a
	// mandate of the merchant account in the page's query order
	// (coreapi.ErrNotFound for a mandate it does not have).
	ListMandateEvents(ctx context.Context, merchant, id string, page pagination.Page) ([]coreapi.MandateEvent, error)
	// Mandate is one mandate of the merchant account, by the
	// connector's id (coreapi.ErrNotFound).
	Mandate(ctx context.Context, merchant, id string) (*coreapi.Mandate, error)
	// ChangeMandate changes a mandate under its row lock and records the
	// change as an event (nt nil: core-api asked for it); change
	// returning the name "" writes nothing.
	ChangeMandate(ctx context.Context, merchant, id string, nt *coreapi.Notification,
		change func(m coreapi.Mandate, now time.Time) (coreapi.Mandate, string)) (ev *coreapi.MandateEvent, dup bool, err error)
}

// Tx is the core database within one transaction.
type Tx interface {
	// LockPaymentMethod reads a payment method and holds its row's lock
	// until the transaction ends.
	LockPaymentMethod(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error)
	UpdatePaymentMethod(ctx context.Context, merchant, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error)
	// Commit commits under ctx, before InTx's fn returns.
	Commit(ctx context.Context) error
}

// VaultProxy is vault-proxy's internal API for vaulted payment methods, by
// token. Its errors match coreapi.ErrVaultProxyNotFound for a token the
// merchant account does not have.
type VaultProxy interface {
	Card(ctx context.Context, merchant, token string) (*zone.CardMetadata, error)
	UpdateExpiry(ctx context.Context, merchant, actor, token, expiry string) error
	Delete(ctx context.Context, merchant, actor, token string) error
}

// Connectors are the processors' connectors by name.
type Connectors interface {
	Mandates(name string) (connector.MandateConnector, error)
}

// Mandates sets up the mandate of a bank account stored with
// mandate.recurring where a debit of the account would set it up, through
// the merchant account's payment service for bank
// (transactions.Service.NewMandate): the mandate names the payment service,
// and is not recorded.
type Mandates interface {
	NewMandate(ctx context.Context, pm *coreapi.PaymentMethod) (*coreapi.Mandate, error)
}

// PaymentServices gives the configuration of the payment service a
// mandate was set up through (paymentservices.Service), which its
// revocation is sent with.
type PaymentServices interface {
	ForOperation(ctx context.Context, merchant, id string) (*coreapi.PaymentService, connector.Config, error)
}

// Service manages payment methods.
type Service struct {
	Store      Store
	VaultProxy VaultProxy
	// Connectors revoke bank mandates, each at the connector it was set
	// up with.
	Connectors Connectors
	// Mandates set up the mandates of bank accounts stored with
	// mandate.recurring (nil: they are refused,
	// coreapi.ErrMandatesUnavailable).
	Mandates Mandates
	// PaymentServices configure the mandates set up through a payment
	// service (nil: every mandate is the built-in connector's).
	PaymentServices PaymentServices
	Now             func() time.Time
	Log             *slog.Logger
}

// Create validates in and stores the payment method of token *in.ID in the
// merchant account: its display data from vault-proxy, its buyer (one the
// account does not have is coreapi.ErrBuyerNotFound), and for a bank
// account with mandate.recurring a mandate set up where a debit of it
// would go (Mandates: the account's payment service for bank, else the
// built-in one), revoked again if the payment method cannot be stored:
// a mandate that cannot be routed or set up stores nothing. A token
// vault-proxy did not vault in this account, or that holds another kind or
// scheme, is a *coreapi.ValidationError on the field that named it.
func (s *Service) Create(ctx context.Context, merchant string, in coreapi.NewPaymentMethod) (*coreapi.PaymentMethod, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	pm := &coreapi.PaymentMethod{ID: *in.ID, MerchantAccountID: merchant, Method: *in.Method, Status: coreapi.StatusSucceeded,
		ExternalIdentifier: in.ExternalIdentifier, SinglePayment: in.Stored != nil && !*in.Stored}

	if in.BuyerID != nil || in.BuyerExternalIdentifier != nil {
		id, ext, err := s.Store.ResolveBuyer(ctx, merchant, deref(in.BuyerID), deref(in.BuyerExternalIdentifier))
		if errors.Is(err, coreapi.ErrNotFound) {
			return nil, coreapi.ErrBuyerNotFound
		}
		if err != nil {
			return nil, err
		}
		pm.BuyerID, pm.BuyerExternalIdentifier = id, ext
	}

	// The authoritative display data comes from vault-proxy, by token.
	meta, err := s.VaultProxy.Card(ctx, merchant, pm.ID)
	if errors.Is(err, coreapi.ErrVaultProxyNotFound) || err == nil && meta.MerchantAccountID != merchant {
		return nil, errTokenNotVaulted()
	}
	if err != nil {
		return nil, &coreapi.VaultProxyError{Err: err}
	}
	if meta.Kind != coreapi.VaultProxyKind(pm.Method) {
		return nil, invalid("/method", "the token holds a "+meta.Kind+", not a "+coreapi.VaultProxyKind(pm.Method), "value_error.token.kind")
	}
	pm.Scheme, pm.Label, pm.Fingerprint = meta.Scheme, meta.Label, meta.Fingerprint
	var mandate *coreapi.Mandate
	switch pm.Method {
	case coreapi.MethodCard, coreapi.MethodGiftCard:
		pm.BIN, pm.CardType, pm.ExpirationDate = meta.BIN, meta.CardType, meta.ExpirationDate
	case coreapi.MethodBank:
		if meta.Scheme != "" && meta.Scheme != *in.Scheme {
			return nil, invalid("/scheme", "the token holds a "+meta.Scheme+" account", "value_error.token.scheme")
		}
		pm.Scheme, pm.Country, pm.Currency, pm.Bank = *in.Scheme, *in.Country, *in.Currency, in.BankDetails()
		if in.Mandate != nil && in.Mandate.Recurring {
			// Refuse a duplicate before a mandate is set up for it.
			if _, err := s.Store.PaymentMethod(ctx, merchant, pm.ID); err == nil {
				return nil, &coreapi.DuplicateError{Resource: "payment method", Field: "id", ExistingID: pm.ID}
			}
			if mandate, err = s.createMandate(ctx, pm); err != nil {
				return nil, err
			}
		}
	}
	if err := s.Store.CreatePaymentMethod(ctx, pm, mandate); err != nil {
		var dup *coreapi.DuplicateError
		// A request racing this one stored the account, with this very
		// mandate (the token is its reference): it stays the account's.
		if mandate != nil && !errors.As(err, &dup) {
			s.revokeQuietly(pm, mandate)
		}
		if errors.Is(err, coreapi.ErrTokenGivenUp) {
			// The vault reconciliation shreds its record: as if never vaulted.
			return nil, errTokenNotVaulted()
		}
		return nil, err
	}
	pm.Mandate = mandate
	return pm, nil
}

// errTokenNotVaulted is a token vault-proxy does not hold for the
// merchant account.
func errTokenNotVaulted() error {
	return invalid("/id", "no payment method with this token was vaulted in this merchant account", "value_error.token.not_found")
}

// invalid is a *coreapi.ValidationError with one problem.
func invalid(pointer, message, typ string) error {
	var v coreapi.Problems
	v.Add(pointer, message, typ)
	return v.Err()
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// createMandate sets up a recurring debit mandate for bank account pm
// (Mandates): coreapi.ErrMandatesUnavailable without a way to, the
// routing's error without a payment service for bank,
// coreapi.ErrMandateDeclined when the bank says no.
func (s *Service) createMandate(ctx context.Context, pm *coreapi.PaymentMethod) (*coreapi.Mandate, error) {
	if s.Mandates == nil {
		return nil, coreapi.ErrMandatesUnavailable
	}
	return s.Mandates.NewMandate(ctx, pm)
}

// revokeQuietly undoes a mandate whose payment method could not be
// stored, where it was set up.
func (s *Service) revokeQuietly(pm *coreapi.PaymentMethod, mandate *coreapi.Mandate) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, cfg, err := s.mandateConnector(ctx, pm.MerchantAccountID, mandate)
	if err == nil {
		_, err = conn.RevokeMandate(ctx, pm.MerchantAccountID, mandate.ID, cfg)
	}
	if err != nil {
		s.Log.Error("revoking the mandate of a payment method that was not stored failed", "mandate", mandate.ID, "err", err)
	}
}

// MandateEvents returns a page of the events of mandate id (the
// connector's reference): its creation, and each change its connector
// notified or core-api asked for (docs/notifications.md). They outlive
// the payment method.
func (s *Service) MandateEvents(ctx context.Context, merchant, id string, page pagination.Page) ([]coreapi.MandateEvent, error) {
	return s.Store.ListMandateEvents(ctx, merchant, id, page)
}

// Mandate returns mandate id (the connector's reference) of the merchant
// account, whether or not its payment method is still there.
func (s *Service) Mandate(ctx context.Context, merchant, id string) (*coreapi.Mandate, error) {
	return s.Store.Mandate(ctx, merchant, id)
}

// Get returns payment method id of the merchant account.
func (s *Service) Get(ctx context.Context, merchant, id string) (*coreapi.PaymentMethod, error) {
	return s.Store.PaymentMethod(ctx, merchant, id)
}

// List returns a page of the merchant account's payment methods matching f.
func (s *Service) List(ctx context.Context, merchant string, f coreapi.PaymentMethodFilter, page pagination.Page) ([]coreapi.PaymentMethod, error) {
	return s.Store.ListPaymentMethods(ctx, merchant, f, page)
}

// BuyerPaymentMethods returns the payment methods of the buyer named by id,
// external identifier or both (coreapi.ErrBuyerNotFound if the merchant
// account has no such buyer), most recently used first.
func (s *Service) BuyerPaymentMethods(ctx context.Context, merchant, buyerID, buyerExternalIdentifier string) ([]coreapi.PaymentMethod, error) {
	buyer, err := s.buyer(ctx, merchant, buyerID, buyerExternalIdentifier)
	if err != nil {
		return nil, err
	}
	return s.Store.BuyerPaymentMethods(ctx, merchant, buyer, "")
}

// GiftCards returns the gift cards of the buyer named as for
// BuyerPaymentMethods, sorted by sortBy (one of coreapi.GiftCardSorts).
func (s *Service) GiftCards(ctx context.Context, merchant, buyerID, buyerExternalIdentifier, sortBy string) ([]coreapi.PaymentMethod, error) {
	buyer, err := s.buyer(ctx, merchant, buyerID, buyerExternalIdentifier)
	if err != nil {
		return nil, err
	}
	return s.Store.GiftCards(ctx, merchant, buyer, sortBy)
}

// buyer resolves a buyer named by id, external identifier or both.
func (s *Service) buyer(ctx context.Context, merchant, id, externalIdentifier string) (string, error) {
	bid, _, err := s.Store.ResolveBuyer(ctx, merchant, id, externalIdentifier)
	if errors.Is(err, coreapi.ErrNotFound) {
		return "", coreapi.ErrBuyerNotFound
	}
	return bid, err
}

// Update validates u and applies it to payment method id, for actor (who
// in core-api asked, for vault-proxy's audit log).
//
//   - With no field set it only reads: `{}` changes nothing, updated_at
//     included (docs/api-conventions.md).
//   - Without an expiration date it is a single write of the row: those
//     fields live only in core-api, so the row lock the write takes is all
//     the ordering concurrent updates need, and the last to commit wins.
//   - With one, vault-proxy's copy changes first (so a forward right after
//     the answer uses it), then the row: see updateExpiry.
func (s *Service) Update(ctx context.Context, merchant, actor, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error) {
	if err := u.Validate(s.Now()); err != nil {
		return nil, err
	}
	switch {
	case u.Empty():
		return s.Store.PaymentMethod(ctx, merchant, id)
	case !u.ExpirationDate.Set:
		return s.Store.UpdatePaymentMethod(ctx, merchant, id, u)
	}
	return s.updateExpiry(ctx, merchant, actor, id, u)
}

// vaultProxyWriteTimeout bounds a write to vault-proxy and the core write
// that follows it, and again a write-back. It is longer than vault-proxy's
// own deadline for an internal request (30 s, vault-proxy/httpapi
// internalTarget), so a write this side gives up on has been given up on
// there too, and cannot land after the next one. It ignores the request's
// deadline (httpapi/deadline.go) on purpose: stopping between
// vault-proxy's write and the row's would leave the two apart.
const vaultProxyWriteTimeout = 40 * time.Second

// updateExpiry changes the expiry in vault-proxy, then in the row, so that
// once every update of a card has ended vault-proxy holds the expiry the
// row holds, whatever the interleaving and whichever of them failed:
//
//   - Every write to vault-proxy of a card's expiry is made inside a
//     transaction holding the card's row lock, and is over (applied or
//     refused, vaultProxyWriteTimeout) before the lock is let go, so
//     vault-proxy sees the writes in the order the row does.
//   - A write that succeeds in vault-proxy commits the same value in the
//     same transaction; from that write on, the request runs to its end
//     whether or not the client still waits for it.
//   - Any failure after the write to vault-proxy started (vault-proxy's,
//     the row's, the commit's, a timeout) rolls back, then writes back to
//     vault-proxy what the row holds, under the row lock again
//     (restoreExpiry). Another update that took the lock in between wrote
//     both copies itself, and the write-back copies the row as it then is.
//
// The transaction holds a pooled connection across the call to
// vault-proxy, so the update takes its turn first (Store.CallTurn), and
// keeps it through the write-back. The client's context bounds only the
// waits for a turn, a connection and the row lock: a client gone while
// waiting leaves having written nothing.
func (s *Service) updateExpiry(ctx context.Context, merchant, actor, id string, u coreapi.PaymentMethodUpdate) (*coreapi.PaymentMethod, error) {
	release, err := s.Store.CallTurn(ctx, merchant+"/"+id)
	if err != nil {
		return nil, err
	}
	defer release()
	var after *coreapi.PaymentMethod
	written := false // the write to vault-proxy has started
	err = s.Store.InTx(ctx, func(tx Tx) error {
		before, err := tx.LockPaymentMethod(ctx, merchant, id)
		if err != nil {
			return err
		}
		if before.Method == coreapi.MethodBank {
			return invalid("/expiration_date", "a bank account has no expiration date", "value_error.expiration_date.not_applicable")
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultProxyWriteTimeout)
		defer cancel()
		written = true
		// Sent even when the row holds this value already: it costs one
		// call and mends a vault-proxy that an earlier failure left behind.
		if err := s.setExpiry(wctx, before, actor, u.ExpirationDate.Value); err != nil {
			return err
		}
		if after, err = tx.UpdatePaymentMethod(wctx, merchant, id, u); err != nil {
			return err
		}
		return tx.Commit(wctx)
	})
	switch {
	case err == nil:
		return after, nil
	case !written:
		return nil, err
	}
	// InTx has rolled back: the write-back takes a connection of its own.
	if rerr := s.restoreExpiry(ctx, merchant, actor, id); rerr != nil {
		if !errors.Is(rerr, errNotInVaultProxy) { // shredded by a DELETE: nothing left to differ
			s.Log.ErrorContext(ctx, "a failed expiry update may have left the vault's expiry unlike core's until the next one",
				"payment_method", id, "err", rerr)
		}
		return nil, &coreapi.VaultProxyExpiryError{PaymentMethodID: id, Err: err, Restore: rerr}
	}
	return nil, err
}

// errNotInVaultProxy is a card vault-proxy does not have (any more): to the
// client, the payment method is not found.
var errNotInVaultProxy = fmt.Errorf("payment method: %w in vault-proxy", coreapi.ErrNotFound)

// setExpiry has vault-proxy record a card's expiry, for actor.
func (s *Service) setExpiry(ctx context.Context, pm *coreapi.PaymentMethod, actor, expiry string) error {
	err := s.VaultProxy.UpdateExpiry(ctx, pm.MerchantAccountID, actor, pm.ID, expiry)
	if errors.Is(err, coreapi.ErrVaultProxyNotFound) {
		return errNotInVaultProxy
	}
	if err != nil {
		return &coreapi.VaultProxyError{Err: err}
	}
	return nil
}

// restoreExpiry writes the row's committed expiry to vault-proxy, under the
// row lock like any other write of it, after an update that may have
// reached vault-proxy failed. It runs whether or not the client still
// waits, within vaultProxyWriteTimeout. A row deleted meanwhile needs
// nothing: its card in vault-proxy is shredded first.
func (s *Service) restoreExpiry(ctx context.Context, merchant, actor, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultProxyWriteTimeout)
	defer cancel()
	return s.Store.InTx(ctx, func(tx Tx) error {
		pm, err := tx.LockPaymentMethod(ctx, merchant, id)
		if errors.Is(err, coreapi.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.setExpiry(ctx, pm, actor, pm.ExpirationDate)
	})
}

// Delete removes a payment method, for actor: the mandate is revoked first
// (a bank account with an active or pending mandate) at its connector,
// and recorded revoked with a mandate-revoked event (GET
// /mandates/{id}/events, which outlives the payment method), then
// vault-proxy shreds the data, then the core record goes. Each step is
// safe to repeat: a retried delete after a partial failure finds the
// mandate revoked and the card gone from vault-proxy (not found there
// means done) and finishes the job.
func (s *Service) Delete(ctx context.Context, merchant, actor, id string) error {
	pm, err := s.Store.PaymentMethod(ctx, merchant, id)
	if err != nil {
		return err
	}
	if pm.Mandate.Active() {
		conn, cfg, err := s.mandateConnector(ctx, merchant, pm.Mandate)
		if errors.Is(err, connector.ErrUnknown) {
			return &coreapi.ConnectorError{Failed: "the mandate's connector is not available; nothing was deleted", Err: err}
		}
		if err != nil {
			return err
		}
		if _, err := conn.RevokeMandate(ctx, merchant, pm.Mandate.ID, cfg); err != nil {
			return &coreapi.ConnectorError{Failed: "the mandate could not be revoked; nothing was deleted", Err: err}
		}
		if _, _, err := s.Store.ChangeMandate(ctx, merchant, pm.Mandate.ID, nil, revoked); err != nil {
			return err
		}
	}
	if err := s.VaultProxy.Delete(ctx, merchant, actor, pm.ID); err != nil && !errors.Is(err, coreapi.ErrVaultProxyNotFound) {
		return &coreapi.VaultProxyError{Err: err}
	}
	return s.Store.DeletePaymentMethod(ctx, merchant, pm.ID)
}

// mandateConnector is the connector mandate m was set up with and the
// configuration of its payment service (none for the built-in one's):
// where it is revoked. A connector not registered is connector.ErrUnknown.
func (s *Service) mandateConnector(ctx context.Context, merchant string, m *coreapi.Mandate) (connector.MandateConnector, connector.Config, error) {
	var cfg connector.Config
	conn, err := s.Connectors.Mandates(m.Connector)
	if err != nil {
		return nil, cfg, err
	}
	if ps := m.PaymentServiceID; ps != nil && s.PaymentServices != nil {
		if _, cfg, err = s.PaymentServices.ForOperation(ctx, merchant, *ps); err != nil {
			return nil, cfg, err
		}
	}
	return conn, cfg, nil
}

// revoked is the change of a mandate revoked at its connector: nothing
// when it already stands revoked (a notification came first).
func revoked(m coreapi.Mandate, now time.Time) (coreapi.Mandate, string) {
	if m.Status == coreapi.MandateRevoked || m.Status == coreapi.MandateFailed {
		return m, ""
	}
	m.Status, m.RevokedAt, m.UpdatedAt = coreapi.MandateRevoked, &now, now
	return m, coreapi.MandateEventRevoked
}
