package transactions

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// DefaultQRExpiry is how long a pix QR code can be paid when the service
// sets none (Service.QRExpiry).
const DefaultQRExpiry = 15 * time.Minute

// ErrorCodeExpired is the error_code of a pix payment whose QR code was
// not paid before it expired.
const ErrorCodeExpired = "expired"

// QRConnector is what the service asks of a connector of instant bank
// transfers paid by QR code (connector.QRConnector implements it).
type QRConnector = connector.QRConnector

// QR is what pix payments need besides the store.
type QR struct {
	// BuiltIn is the built-in sandbox QR connector: what a pix payment
	// goes to when it names no payment service and its merchant account
	// has no default for pix; nil in production.
	BuiltIn QRConnector
	// NotificationBaseURL is core-api's public base URL, where processors
	// send notifications (/webhooks/{connector}/{merchant_account_id}).
	NotificationBaseURL string
	// Expiry is how long a QR code can be paid (0: DefaultQRExpiry).
	Expiry time.Duration
	// Unmatched counts the verified notifications that matched no
	// transaction.
	Unmatched atomic.Int64
}

func (q *QR) expiry() time.Duration {
	if q != nil && q.Expiry > 0 {
		return q.Expiry
	}
	return DefaultQRExpiry
}

// qrPayment reports whether t is paid by QR code.
func qrPayment(t *coreapi.Transaction) bool { return t.PaymentMethod.Method == coreapi.MethodPix }

// PayByQR creates a pix payment and asks its connector for a QR code: a
// sale (intent capture, whatever the request says) whose capture settles
// when the processor notifies that the buyer paid. The transaction is
// returned capture_pending with its QR code and expiry, or declined or
// failed as the connector answered; still processing when the outcome is
// unknown (a retry with the same Idempotency-Key, Resume, sends the same
// reference again).
func (s *Service) PayByQR(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	if n.PaymentMethodID != nil {
		return nil, invalid("/payment_method/id", "a pix payment has no stored payment method", "value_error.payment_method.pix")
	}
	if n.Store {
		return nil, invalid("/store", "a pix payment has no payment method to store", "value_error.payment_method.pix")
	}
	n.Intent = coreapi.IntentCapture
	if err := n.Validate(); err != nil {
		return nil, err
	}
	qrc, cfg, err := s.qrRoute(ctx, merchant, &n)
	if err != nil {
		return nil, err
	}
	t, err := s.Create(ctx, merchant, n)
	if err != nil {
		return nil, err
	}
	return s.sendQR(ctx, qrc, cfg, t)
}

// sendQR asks qrc for t's QR code, with t's id as the reference, and
// records the answer.
func (s *Service) sendQR(ctx context.Context, qrc QRConnector, cfg connector.Config, t *coreapi.Transaction) (*coreapi.Transaction, error) {
	res, err := qrc.CreateQR(ctx, connector.QRCharge{MerchantAccountID: t.MerchantAccountID, Reference: t.ID,
		Amount: t.Amount, Currency: t.Currency, NotificationURL: s.notificationURL(qrc.Name(), t.MerchantAccountID),
		ExpiresIn: s.QR.expiry(), CartItems: t.CartItems, Config: cfg})
	var sendErr error
	if err != nil && !errors.Is(err, connector.ErrOutcomeUnknown) {
		res = coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeConnector}
		sendErr = &coreapi.ConnectorError{Failed: "the QR connector could not send the request; it is recorded as failed", Err: err}
	}
	t, _, err = s.ApplyAuthorization(ctx, t.MerchantAccountID, t.ID, res)
	if err != nil {
		return nil, err
	}
	return t, sendErr
}

func (s *Service) notificationURL(name, merchant string) string {
	base := ""
	if s.QR != nil {
		base = s.QR.NotificationBaseURL
	}
	return strings.TrimSuffix(base, "/") + "/webhooks/" + name + "/" + merchant
}

// qrRoute chooses a pix payment's connector as route does a card's: the
// payment service n names, else the merchant account's default for pix,
// else, outside production, the built-in sandbox connector. The
// connector's entry of the connection options is checked against its
// schema.
func (s *Service) qrRoute(ctx context.Context, merchant string, n *coreapi.NewTransaction) (QRConnector, connector.Config, error) {
	var qrc QRConnector
	ps, cfg, err := s.PaymentServices.ForPayment(ctx, merchant, n.PaymentServiceID, coreapi.MethodPix)
	switch {
	case err != nil:
		return nil, cfg, err
	case ps != nil:
		c, err := s.Connectors.QRs(ps.Connector)
		if err != nil {
			return nil, cfg, coreapi.ErrPaymentServiceConnector
		}
		qrc, n.PaymentServiceID = c, &ps.ID
	case s.QR != nil && s.QR.BuiltIn != nil:
		qrc = s.QR.BuiltIn
	default:
		return nil, cfg, coreapi.ErrPaymentServiceUnavailable
	}
	var v coreapi.Problems
	if sc, err := s.Connectors.Schemas(qrc.Name()); err == nil {
		sc.ConnectionOptions.Validate("/connection_options/"+qrc.Name(), n.ConnectionOptions[qrc.Name()], &v)
	}
	return qrc, cfg, v.Err()
}

// qrOf is the connector and configuration of pix payment t.
func (s *Service) qrOf(ctx context.Context, t *coreapi.Transaction) (QRConnector, connector.Config, error) {
	if t.PaymentServiceID == nil {
		if s.QR == nil || s.QR.BuiltIn == nil {
			return nil, connector.Config{}, coreapi.ErrPaymentServiceUnavailable
		}
		return s.QR.BuiltIn, connector.Config{}, nil
	}
	ps, cfg, err := s.PaymentServices.ForOperation(ctx, t.MerchantAccountID, *t.PaymentServiceID)
	if err != nil {
		return nil, cfg, err
	}
	c, err := s.Connectors.QRs(ps.Connector)
	if err != nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	return c, cfg, nil
}

// Resume answers a retry of a request whose first run attached
// transaction id (an Idempotency-Key taken over): a pix payment whose QR
// code was never recorded asks for it again with the same reference (no
// money moves until the buyer pays, and the processor answers the same
// charge), as does a bank debit (resumeDebit); any other payment is
// synced (Sync).
func (s *Service) Resume(ctx context.Context, merchant, id string) (*coreapi.Transaction, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	if bankPayment(t) {
		if t.Status != coreapi.TransactionProcessing {
			return t, nil
		}
		return s.resumeDebit(ctx, t)
	}
	if !qrPayment(t) {
		return s.Sync(ctx, merchant, id)
	}
	if t.Status != coreapi.TransactionProcessing {
		return t, nil
	}
	qrc, cfg, err := s.qrOf(ctx, t)
	if err != nil {
		return nil, err
	}
	return s.sendQR(ctx, qrc, cfg, t)
}

// ExpireQR fails pix payment id when its QR code expired unpaid: the
// connector is told to end the charge (so that it can no longer be paid)
// and answers whether it was paid meanwhile, which then settles the
// capture instead. Anything else is returned as it is; a connector that
// cannot be reached changes nothing (*coreapi.ConnectorError).
func (s *Service) ExpireQR(ctx context.Context, merchant, id string, now time.Time) (*coreapi.Transaction, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	if !qrPayment(t) || t.Status != coreapi.TransactionCapturePending || t.ApprovalExpiresAt == nil || now.Before(*t.ApprovalExpiresAt) {
		return t, nil
	}
	c, err := s.saleCapture(ctx, t, "")
	if err != nil || c == nil {
		return t, err
	}
	qrc, cfg, err := s.qrOf(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := qrc.CancelQR(ctx, deref(c.PaymentServiceReference), cfg)
	if err != nil {
		return nil, &coreapi.ConnectorError{Failed: "the QR connector could not end the expired charge; nothing changed", Err: err}
	}
	switch res.Outcome {
	case coreapi.OutcomeSucceeded:
		t, _, err = s.SettleCapture(ctx, merchant, id, c.ID, res)
		return t, err
	case coreapi.OutcomeFailed:
	default:
		return t, nil
	}
	return s.apply(ctx, true, merchant, id, func(tx Tx, _ *coreapi.Transaction, now time.Time) (plan, error) {
		c, err := tx.Capture(ctx, merchant, id, c.ID)
		if err != nil {
			return plan{}, err
		}
		if c.Status != coreapi.OperationProcessing {
			return plan{unchanged: true}, nil
		}
		code := ErrorCodeExpired
		return plan{step: coreapi.Step{Operation: coreapi.OpSaleExpired, Amount: c.Amount, CaptureID: c.ID, Result: &res},
			record: func(tr *coreapi.Transition) {
				c.Settle(&res, now)
				tr.Capture, tr.Transaction.ErrorCode = c, &code
			}}, nil
	})
}

// saleCapture is the processing capture of pix payment t: the one the
// charge chargeID made, or with chargeID "" the first; nil when none.
func (s *Service) saleCapture(ctx context.Context, t *coreapi.Transaction, chargeID string) (*coreapi.Capture, error) {
	captures, _, err := s.Store.ProcessingOperations(ctx, t.MerchantAccountID, t.ID)
	if err != nil {
		return nil, err
	}
	for i := range captures {
		if chargeID == "" || deref(captures[i].PaymentServiceReference) == chargeID {
			return &captures[i], nil
		}
	}
	return nil, nil
}
