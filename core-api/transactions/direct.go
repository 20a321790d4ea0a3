package transactions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// Direct integrations (docs/transactions.md, "Direct integrations"): the
// transaction opens an order at the wallet (approval-requested: buyer
// approval pending) and answers a session token; the merchant's server
// exchanges it once for the session data and a completion URL; once the
// buyer approved in the wallet's SDK, a GET on that URL completes the
// order by the transaction's intent and records the answer as the
// authorization's.

// DirectConnectors are the environment's direct-integration connectors
// by name (connector.Registry).
type DirectConnectors interface {
	Directs(name string) (connector.DirectConnector, error)
}

// SessionStore keeps the sessions of direct integrations
// (postgres.TransactionsStore).
type SessionStore interface {
	CreateDirectSession(ctx context.Context, merchant, id, client string, tokenHash []byte) error
	// ExchangeDirectSession marks the session exchanged, once, if
	// tokenHash is its token's: ok false otherwise.
	ExchangeDirectSession(ctx context.Context, merchant, id string, tokenHash []byte) (client string, ok bool, err error)
}

// Direct is what the service needs for direct integrations; a zero
// Direct refuses them (coreapi.ErrDirectUnavailable).
type Direct struct {
	// BuiltIn is the sandbox's direct connector (mock-direct): what a
	// payment that names no payment service goes to when the merchant
	// account has no default; nil in production.
	BuiltIn    connector.DirectConnector
	Connectors DirectConnectors
	Sessions   SessionStore
	// CompletionKey signs completion tokens (at least 32 bytes).
	CompletionKey []byte
	// PublicURL is the base of completion URLs: where core-api's routes
	// are reached from the buyer's client.
	PublicURL string
	// CompletionTTL is how long a completion URL is valid (0:
	// DefaultCompletionTTL).
	CompletionTTL time.Duration
	Now           func() time.Time // nil: time.Now
}

// DefaultCompletionTTL is a completion URL's validity: the buyer's time
// in the wallet, with room to spare.
const DefaultCompletionTTL = time.Hour

func (d *Direct) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// PayDirect creates a transaction paid through a direct integration
// (n.Method one of coreapi.DirectMethods, n.IntegrationClient set): Create
// in processing with its session, CreateOrder with the transaction's id as
// the reference, and ApplyAuthorization of the answer: buyer approval
// pending, with the order's id and approval URL, and the session token
// (given this once). A call the connector could not send leaves it
// authorization_failed and is a *coreapi.ConnectorError.
func (s *Service) PayDirect(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.Method == nil || !slices.Contains(coreapi.DirectMethods, *n.Method) {
		return nil, invalid("/payment_method/method", "is not a method of a direct integration", "value_error.payment_method.direct")
	}
	dc, cfg, err := s.routeDirect(ctx, merchant, &n)
	if err != nil {
		return nil, err
	}
	token, hash := newSessionToken()
	t, err := s.create(ctx, merchant, n, nil)
	if err != nil {
		return nil, err
	}
	if err := s.Direct.Sessions.CreateDirectSession(ctx, merchant, t.ID, *n.IntegrationClient, hash); err != nil {
		return nil, err // the transaction stays processing, never sent: the sweep fails it
	}
	res, err := dc.CreateOrder(ctx, connector.DirectOrder{MerchantAccountID: merchant, Reference: t.ID,
		Amount: t.Amount, Currency: t.Currency, Intent: t.Intent, CartItems: t.CartItems, Config: cfg})
	res, sendErr := sent(res, err)
	if t, _, err = s.ApplyAuthorization(ctx, merchant, t.ID, res); err != nil {
		return nil, err
	}
	if t.Status == coreapi.TransactionBuyerApprovalPending {
		t.SessionToken = &token
	}
	return t, sendErr
}

// routeDirect chooses the direct connector of a new payment as route
// chooses a card connector: the payment service n names, else the
// account's default for the method, else the built-in sandbox one.
func (s *Service) routeDirect(ctx context.Context, merchant string, n *coreapi.NewTransaction) (connector.DirectConnector, connector.Config, error) {
	ps, cfg, err := s.PaymentServices.ForPayment(ctx, merchant, n.PaymentServiceID, *n.Method)
	switch {
	case err != nil:
		return nil, cfg, err
	case ps != nil:
		if s.Direct.Connectors == nil {
			return nil, cfg, coreapi.ErrPaymentServiceConnector
		}
		dc, err := s.Direct.Connectors.Directs(ps.Connector)
		if err != nil {
			return nil, cfg, coreapi.ErrPaymentServiceConnector
		}
		n.PaymentServiceID = &ps.ID
		return dc, cfg, nil
	case s.Direct.BuiltIn != nil:
		return s.Direct.BuiltIn, cfg, nil
	}
	return nil, cfg, coreapi.ErrDirectUnavailable
}

// directOf is the connector and configuration of direct transaction t.
func (s *Service) directOf(ctx context.Context, t *coreapi.Transaction) (connector.DirectConnector, connector.Config, error) {
	if t.PaymentServiceID == nil {
		if s.Direct.BuiltIn == nil {
			return nil, connector.Config{}, coreapi.ErrDirectUnavailable
		}
		return s.Direct.BuiltIn, connector.Config{}, nil
	}
	ps, cfg, err := s.PaymentServices.ForOperation(ctx, t.MerchantAccountID, *t.PaymentServiceID)
	if err != nil {
		return nil, cfg, err
	}
	if s.Direct.Connectors == nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	dc, err := s.Direct.Connectors.Directs(ps.Connector)
	if err != nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	return dc, cfg, nil
}

// directPayment reports whether t is paid through a direct integration.
func directPayment(t *coreapi.Transaction) bool {
	return t.PaymentMethod.ID == nil && slices.Contains(coreapi.DirectMethods, t.PaymentMethod.Method)
}

// ExchangeSession exchanges transaction id's session token, once, for
// the session data. A wrong or used token, or a transaction with no
// session waiting for the buyer, is coreapi.ErrSessionUnavailable.
func (s *Service) ExchangeSession(ctx context.Context, merchant, id, token string) (*coreapi.DirectSession, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	if !directPayment(t) || t.Status != coreapi.TransactionBuyerApprovalPending || t.PaymentServiceTransactionID == nil || s.Direct.Sessions == nil {
		return nil, coreapi.ErrSessionUnavailable
	}
	dc, cfg, err := s.directOf(ctx, t)
	if err != nil {
		return nil, err
	}
	client, ok, err := s.Direct.Sessions.ExchangeDirectSession(ctx, merchant, id, tokenHash(token))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, coreapi.ErrSessionUnavailable
	}
	c := dc.Client(cfg)
	return &coreapi.DirectSession{OrderID: *t.PaymentServiceTransactionID, ClientID: c.ClientID, MerchantID: c.MerchantID,
		Currency: t.Currency, Intent: t.Intent, FundingSource: c.FundingSource, IntegrationClient: client,
		CompletionURL: s.CompletionURL(merchant, id, s.Direct.now().Add(s.completionTTL()))}, nil
}

// CompleteDirect completes the direct transaction id with completion
// token: verified (a *coreapi.CompletionTokenError when forged,
// malformed, expired, for another transaction, or used: the transaction
// is no longer waiting for the buyer), then the order completed at the
// connector by the transaction's intent and the answer applied as the
// authorization's. Before the buyer decided it is
// coreapi.ErrBuyerApprovalPending and nothing changes.
func (s *Service) CompleteDirect(ctx context.Context, id, token string) (*coreapi.Transaction, error) {
	merchant, err := s.verifyCompletion(id, token)
	if err != nil {
		return nil, err
	}
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	if !directPayment(t) || t.PaymentServiceTransactionID == nil {
		return nil, &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenInvalid}
	}
	if t.Status != coreapi.TransactionBuyerApprovalPending {
		return nil, &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenUsed}
	}
	dc, cfg, err := s.directOf(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := dc.Complete(ctx, connector.DirectCompletion{MerchantAccountID: merchant, OrderID: *t.PaymentServiceTransactionID,
		Reference: t.ID, Intent: t.Intent, Config: cfg})
	if errors.Is(err, connector.ErrNotApproved) {
		return nil, coreapi.ErrBuyerApprovalPending
	}
	res, sendErr := sent(res, err)
	if t, _, err = s.ApplyAuthorization(ctx, merchant, id, res); err != nil {
		return nil, err
	}
	return t, sendErr
}

// syncDirect settles a direct transaction waiting for its buyer by the
// order's state: completed (a completion whose answer was lost) or
// declined by the buyer; otherwise it is left as it is. An authorized
// one's captures, refunds and void in flight are settled by the order's
// record of them (syncDirectOperations).
func (s *Service) syncDirect(ctx context.Context, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	if t.PaymentServiceTransactionID == nil {
		return t, nil
	}
	if t.Status != coreapi.TransactionBuyerApprovalPending {
		return s.syncDirectOperations(ctx, t)
	}
	dc, cfg, err := s.directOf(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := dc.LookupOrder(ctx, connector.DirectCompletion{MerchantAccountID: t.MerchantAccountID,
		OrderID: *t.PaymentServiceTransactionID, Reference: t.ID, Intent: t.Intent, Config: cfg})
	if err != nil {
		return nil, &coreapi.ConnectorError{Failed: "the direct connector could not tell what became of the order; nothing changed", Err: err}
	}
	if res.Outcome != coreapi.OutcomeSucceeded && res.Outcome != coreapi.OutcomeDeclined {
		return t, nil
	}
	t, _, err = s.ApplyAuthorization(ctx, t.MerchantAccountID, t.ID, res)
	return t, err
}

// syncDirectOperations settles the captures, refunds and void in flight
// on direct transaction t by the order's record of them
// (syncHeldOperations).
func (s *Service) syncDirectOperations(ctx context.Context, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	return s.syncHeldOperations(ctx, t, func() (connector.DirectState, error) {
		dc, cfg, err := s.directOf(ctx, t)
		if err != nil {
			return connector.DirectState{}, err
		}
		st, err := dc.LookupOperations(ctx, connector.DirectCompletion{MerchantAccountID: t.MerchantAccountID,
			OrderID: *t.PaymentServiceTransactionID, Reference: t.ID, Intent: t.Intent, Config: cfg})
		if err != nil {
			return st, operationsLookupFailed(err)
		}
		return st, nil
	})
}

// newSessionToken is a new session token and its digest, which alone is
// stored.
func newSessionToken() (string, []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := "st_" + base64.RawURLEncoding.EncodeToString(b)
	return tok, tokenHash(tok)
}

func tokenHash(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

func (s *Service) completionTTL() time.Duration {
	if s.Direct.CompletionTTL == 0 {
		return DefaultCompletionTTL
	}
	return s.Direct.CompletionTTL
}

// CompletionURL is a completion URL of transaction id valid until
// expires: its token is "ct1." + base64url(merchant|id|expiry) + "." +
// base64url(HMAC-SHA256 under the completion key) (signedToken). Only a
// session exchange gives one out.
func (s *Service) CompletionURL(merchant, id string, expires time.Time) string {
	tok := s.completionTokens().issue(merchant, id, expires)
	return strings.TrimRight(s.Direct.PublicURL, "/") + "/transactions/" + id + "/complete?token=" + url.QueryEscape(tok)
}

func (s *Service) completionTokens() signedToken {
	return signedToken{prefix: "ct1", context: "payorch completion token\x00", key: s.Direct.CompletionKey}
}

// verifyCompletion checks a completion token for transaction id: the
// merchant account it was signed for.
func (s *Service) verifyCompletion(id, tok string) (string, error) {
	return s.completionTokens().verify(id, tok, s.Direct.now())
}
