package transactions

import (
	"context"
	"errors"
	"slices"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// Redirect payments (docs/transactions.md, "Redirect payments"): the
// transaction asks its connector for a push payment with an expiring
// reference (approval-requested: buyer_approval_pending, with the
// approval_url the buyer is sent to and approval_expires_at); the buyer
// approves or declines at the processor, which sends them back to the
// merchant's redirect_url and, independently of the browser, notifies
// core-api, whose notification settles the authorization by the
// transaction's intent. The sweep ends a reference that expired
// undecided (ExpireRedirect).

// RedirectConnectors are the environment's redirect connectors by name
// (connector.Registry).
type RedirectConnectors interface {
	Redirects(name string) (connector.RedirectConnector, error)
}

// Redirect is what redirect payments need; nil refuses them
// (coreapi.ErrPaymentServiceUnavailable).
type Redirect struct {
	// BuiltIn is the sandbox's redirect connector (mock-redirect): what a
	// payment that names no payment service goes to when its merchant
	// account has no default for the method; nil in production.
	BuiltIn    connector.RedirectConnector
	Connectors RedirectConnectors
	Now        func() time.Time // nil: time.Now
}

func (r *Redirect) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// redirectPayment reports whether t is paid by a redirect.
func redirectPayment(t *coreapi.Transaction) bool {
	return t.PaymentMethod.ID == nil && slices.Contains(coreapi.RedirectMethods, t.PaymentMethod.Method)
}

// PayRedirect creates a redirect payment (n.Method one of
// coreapi.RedirectMethods): its connector is routed as a card's, its
// reference's expiry chosen (coreapi.ApprovalExpiry: the connector's
// entry of connection_options, else approval_expires_at, else the
// configuration's default window; in the future and within the
// connector's maximum window), then Create in processing, CreatePayment
// with the transaction's id as the reference, and ApplyAuthorization of
// the answer: buyer_approval_pending with the approval URL, or declined
// or failed as the connector answered; still processing when the outcome
// is unknown (Sync finds it by the reference).
func (s *Service) PayRedirect(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.Method == nil || !slices.Contains(coreapi.RedirectMethods, *n.Method) {
		return nil, invalid("/payment_method/method", "is not a method of a redirect payment", "value_error.payment_method.redirect")
	}
	if n.RedirectURL == nil {
		return nil, coreapi.ErrMissingRedirectURL
	}
	rc, cfg, options, err := s.routeRedirect(ctx, merchant, &n)
	if err != nil {
		return nil, err
	}
	w := rc.Windows(cfg)
	expires, err := coreapi.ApprovalExpiry(n.ApprovalExpiresAt, rc.ApprovalOverride(options),
		"/connection_options/"+rc.Name()+"/approval_expires_at", w.Default, w.Max, s.Redirect.now())
	if err != nil {
		return nil, err
	}
	t, err := s.create(ctx, merchant, n, nil)
	if err != nil {
		return nil, err
	}
	res, err := rc.CreatePayment(ctx, connector.RedirectPayment{MerchantAccountID: merchant, Reference: t.ID,
		Method: t.PaymentMethod.Method, Intent: t.Intent, Amount: t.Amount, Currency: t.Currency, RedirectURL: *n.RedirectURL,
		NotificationURL: s.notificationURL(rc.Name(), merchant), ExpiresAt: expires, CartItems: t.CartItems, Config: cfg})
	res, sendErr := sent(res, err)
	if t, _, err = s.ApplyAuthorization(ctx, merchant, t.ID, res); err != nil {
		return nil, err
	}
	return t, sendErr
}

// routeRedirect chooses a redirect payment's connector as route does a
// card's, and checks its entry of the connection options against its
// schema: the values it holds.
func (s *Service) routeRedirect(ctx context.Context, merchant string, n *coreapi.NewTransaction) (connector.RedirectConnector, connector.Config, connector.Values, error) {
	if s.Redirect == nil {
		return nil, connector.Config{}, nil, coreapi.ErrPaymentServiceUnavailable
	}
	var rc connector.RedirectConnector
	ps, cfg, err := s.PaymentServices.ForPayment(ctx, merchant, n.PaymentServiceID, *n.Method)
	switch {
	case err != nil:
		return nil, cfg, nil, err
	case ps != nil:
		if s.Redirect.Connectors == nil {
			return nil, cfg, nil, coreapi.ErrPaymentServiceConnector
		}
		c, err := s.Redirect.Connectors.Redirects(ps.Connector)
		if err != nil {
			return nil, cfg, nil, coreapi.ErrPaymentServiceConnector
		}
		rc, n.PaymentServiceID = c, &ps.ID
	case s.Redirect.BuiltIn != nil:
		rc = s.Redirect.BuiltIn
	default:
		return nil, cfg, nil, coreapi.ErrPaymentServiceUnavailable
	}
	var v coreapi.Problems
	var options connector.Values
	if sc, err := s.Connectors.Schemas(rc.Name()); err == nil {
		options = sc.ConnectionOptions.Validate("/connection_options/"+rc.Name(), n.ConnectionOptions[rc.Name()], &v)
	}
	return rc, cfg, options, v.Err()
}

// redirectOf is the connector and configuration of redirect payment t.
func (s *Service) redirectOf(ctx context.Context, t *coreapi.Transaction) (connector.RedirectConnector, connector.Config, error) {
	if s.Redirect == nil {
		return nil, connector.Config{}, coreapi.ErrPaymentServiceUnavailable
	}
	if t.PaymentServiceID == nil {
		if s.Redirect.BuiltIn == nil {
			return nil, connector.Config{}, coreapi.ErrPaymentServiceUnavailable
		}
		return s.Redirect.BuiltIn, connector.Config{}, nil
	}
	ps, cfg, err := s.PaymentServices.ForOperation(ctx, t.MerchantAccountID, *t.PaymentServiceID)
	if err != nil {
		return nil, cfg, err
	}
	if s.Redirect.Connectors == nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	rc, err := s.Redirect.Connectors.Redirects(ps.Connector)
	if err != nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	return rc, cfg, nil
}

// syncRedirect settles a redirect payment whose authorization is in
// flight (processing: the create's answer was lost; buyer approval
// pending: the notification was lost) by the processor's record of the
// payment, found by the transaction's id. One the processor has no
// record of is left processing while it may be on its way, and failed
// (ErrorCodeNotReceived) once SyncMinAge has passed. An approved
// payment's captures, refunds and void in flight are settled by the
// payment's record of them (syncHeldOperations).
func (s *Service) syncRedirect(ctx context.Context, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	if t.Status != coreapi.TransactionProcessing && t.Status != coreapi.TransactionBuyerApprovalPending {
		if t.PaymentServiceTransactionID == nil {
			return t, nil
		}
		return s.syncHeldOperations(ctx, t, func() (connector.DirectState, error) {
			rc, cfg, err := s.redirectOf(ctx, t)
			if err != nil {
				return connector.DirectState{}, err
			}
			st, err := rc.LookupOperations(ctx, *t.PaymentServiceTransactionID, cfg)
			if err != nil {
				return st, operationsLookupFailed(err)
			}
			return st, nil
		})
	}
	rc, cfg, err := s.redirectOf(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := rc.LookupPayment(ctx, t.ID, cfg)
	switch {
	case errors.Is(err, connector.ErrNotFound) && t.Status == coreapi.TransactionProcessing:
		if time.Since(t.CreatedAt) < s.syncMinAge() {
			return t, nil
		}
		res = notReceived
	case err != nil:
		return nil, &coreapi.ConnectorError{Failed: "the redirect connector could not tell what became of the payment; nothing changed", Err: err}
	case res.Outcome == coreapi.OutcomeApprovalRequired && t.Status != coreapi.TransactionProcessing:
		return t, nil
	}
	t, _, err = s.ApplyAuthorization(ctx, t.MerchantAccountID, t.ID, res)
	return t, err
}

// ExpireRedirect fails redirect payment id when its reference expired
// with the buyer undecided: the connector is told to end the payment (so
// that it can no longer be approved) and answers whether the buyer
// decided meanwhile, which then settles it instead. The failure is an
// authorization-failed event with error_code expired. Anything else is
// returned as it is; a connector that cannot be reached changes nothing
// (*coreapi.ConnectorError).
func (s *Service) ExpireRedirect(ctx context.Context, merchant, id string, now time.Time) (*coreapi.Transaction, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	if !redirectPayment(t) || t.Status != coreapi.TransactionBuyerApprovalPending || t.ApprovalExpiresAt == nil || now.Before(*t.ApprovalExpiresAt) {
		return t, nil
	}
	rc, cfg, err := s.redirectOf(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := rc.CancelPayment(ctx, deref(t.PaymentServiceTransactionID), cfg)
	if err != nil {
		return nil, &coreapi.ConnectorError{Failed: "the redirect connector could not end the expired payment; nothing changed", Err: err}
	}
	if res.Outcome == coreapi.OutcomeApprovalRequired {
		return t, nil // the processor's clock is behind: the next sweep asks again
	}
	if res.Outcome == coreapi.OutcomeFailed {
		res.ErrorCode = ErrorCodeExpired
	}
	t, _, err = s.ApplyAuthorization(ctx, merchant, id, res)
	return t, err
}
