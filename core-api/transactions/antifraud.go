package transactions

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// antiFraudConnector is the screening connector a payment service names
// (connector.Registry.AntiFraud).
type antiFraudConnectors interface {
	AntiFraud(name string) (connector.AntiFraudConnector, error)
}

// checkAntiFraud refuses an anti_fraud_fingerprint that is empty or
// longer than 200 characters, before anything is stored.
func checkAntiFraud(n coreapi.NewTransaction) error {
	if f := n.AntiFraudFingerprint; f != nil && (len(*f) == 0 || utf8.RuneCountInString(*f) > coreapi.MaxTextLen) {
		return invalid("/anti_fraud_fingerprint", "must be 1 to 200 characters", "value_error.any_str.max_length")
	}
	return nil
}

// screen runs a card payment just created past the merchant account's
// default anti-fraud payment service, when it has one, and records the
// decision as a step (docs/anti-fraud.md): accept and review go on to the
// authorization (review flags the transaction), reject declines it, a
// provider's failure goes on (fail_open) or fails it. A merchant-initiated
// payment is not screened (skipped). stop: the payment ends here.
func (s *Service) screen(ctx context.Context, merchant string, t *coreapi.Transaction, n coreapi.NewTransaction,
	pm *coreapi.PaymentMethod) (out *coreapi.Transaction, stop bool, err error) {
	ps, cfg, err := s.PaymentServices.ForPayment(ctx, merchant, nil, connector.MethodAntiFraud)
	if err != nil || ps == nil {
		return t, false, err
	}
	registry, ok := s.Connectors.(antiFraudConnectors)
	if !ok {
		return t, false, nil
	}
	af, err := registry.AntiFraud(ps.Connector)
	if err != nil {
		return t, false, coreapi.ErrPaymentServiceConnector
	}
	if t.MerchantInitiated {
		out, err := s.antiFraudStep(ctx, merchant, t.ID, coreapi.OpAntiFraudSkipped, coreapi.AntiFraudSkipped, "")
		return out, false, err
	}
	req := connector.AntiFraudRequest{MerchantAccountID: merchant, Reference: t.ID, Amount: t.Amount, Currency: t.Currency,
		Fingerprint: deref(n.AntiFraudFingerprint), CartItems: t.CartItems, Country: deref(t.Country),
		CardScheme: deref(t.PaymentMethod.Scheme), Config: cfg}
	if pm != nil {
		req.CardBIN = pm.BIN
	}
	if bd := s.billingDetails(ctx, merchant, t); bd != nil {
		req.FirstName, req.LastName, req.EmailAddress = deref(bd.FirstName), deref(bd.LastName), deref(bd.EmailAddress)
		if a := bd.Address; a != nil {
			req.PostalCode = deref(a.PostalCode)
			if c := deref(a.Country); c != "" {
				req.Country = c
			}
		}
	}
	decision, err := af.Assess(ctx, req)
	switch {
	case err != nil && connector.FailOpen(cfg.Settings):
		out, err = s.antiFraudStep(ctx, merchant, t.ID, coreapi.OpAntiFraudError, coreapi.AntiFraudError, "")
		return out, false, err
	case err != nil:
		out, err = s.antiFraudStep(ctx, merchant, t.ID, coreapi.OpAntiFraudFailed, coreapi.AntiFraudError, coreapi.ErrorCodeAntiFraudError)
		return out, true, err
	case decision == coreapi.AntiFraudReject:
		out, err = s.antiFraudStep(ctx, merchant, t.ID, coreapi.OpAntiFraudRejected, decision, coreapi.ErrorCodeAntiFraudRejected)
		return out, true, err
	case decision == coreapi.AntiFraudReview:
		out, err = s.antiFraudStep(ctx, merchant, t.ID, coreapi.OpAntiFraudReview, decision, "")
		return out, false, err
	}
	out, err = s.antiFraudStep(ctx, merchant, t.ID, coreapi.OpAntiFraudAccepted, coreapi.AntiFraudAccept, "")
	return out, false, err
}

// antiFraudStep records an anti-fraud step of transaction id with the
// decision it leaves; code is the error code of a step that ends it.
func (s *Service) antiFraudStep(ctx context.Context, merchant, id string, op coreapi.TransactionOperation, decision, code string) (*coreapi.Transaction, error) {
	return s.apply(ctx, true, merchant, id, func(_ Tx, _ *coreapi.Transaction, _ time.Time) (plan, error) {
		step := coreapi.Step{Operation: op, AntiFraudDecision: decision}
		if code != "" {
			step.Result = &coreapi.ConnectorResult{ErrorCode: code}
		}
		return plan{step: step}, nil
	})
}

// billingDetails are the billing details of t's buyer; nil when it has
// none (or none can be read: screening goes on with what it has).
func (s *Service) billingDetails(ctx context.Context, merchant string, t *coreapi.Transaction) *coreapi.BillingDetails {
	if t.BuyerID == nil || s.Buyers == nil {
		return nil
	}
	b, err := s.Buyers.FindBuyer(ctx, merchant, *t.BuyerID)
	if err != nil {
		return nil
	}
	return b.BillingDetails
}

// billingPostalCode is the postal code of t's buyer's billing address,
// which the card processor checks the card's (AVS); "" when there is none.
func (s *Service) billingPostalCode(ctx context.Context, merchant string, t *coreapi.Transaction) string {
	if bd := s.billingDetails(ctx, merchant, t); bd != nil && bd.Address != nil && bd.Address.PostalCode != nil {
		return *bd.Address.PostalCode
	}
	return ""
}

// ReviewAntiFraud resolves the review flag of transaction id: accept
// keeps the payment (decision accept), decline rejects it (decision
// reject) and voids its authorization when nothing is captured yet; a
// captured payment is the merchant's to refund. A transaction not flagged
// for review is coreapi.ErrNotInReview, one whose authorization has not
// answered a *coreapi.TransitionError.
func (s *Service) ReviewAntiFraud(ctx context.Context, merchant, id, action string) (*coreapi.Transaction, error) {
	op, decision := coreapi.OpAntiFraudReviewAccepted, coreapi.AntiFraudAccept
	switch action {
	case coreapi.AntiFraudReviewAccept:
	case coreapi.AntiFraudReviewDecline:
		op, decision = coreapi.OpAntiFraudReviewDeclined, coreapi.AntiFraudReject
	default:
		return nil, invalid("/decision", "must be accept or decline", "value_error.const")
	}
	t, err := s.apply(ctx, false, merchant, id, func(_ Tx, t *coreapi.Transaction, _ time.Time) (plan, error) {
		if t.AntiFraudDecision == nil || *t.AntiFraudDecision != coreapi.AntiFraudReview {
			return plan{}, coreapi.ErrNotInReview
		}
		return plan{step: coreapi.Step{Operation: op, AntiFraudDecision: decision}}, nil
	})
	if err != nil || op != coreapi.OpAntiFraudReviewDeclined || t.Status != coreapi.TransactionAuthorizationSucceeded {
		return t, err
	}
	voided, err := s.VoidCard(ctx, merchant, id)
	if errors.Is(err, coreapi.ErrNotACardPayment) {
		return t, nil
	}
	return voided, err
}
