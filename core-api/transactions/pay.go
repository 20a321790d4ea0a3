package transactions

import (
	"context"
	"errors"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// CardConnector is what the service asks of a card processor's
// connector (connector.CardConnector implements it).
type CardConnector interface {
	Authorize(ctx context.Context, r connector.CardAuthorization) (coreapi.ConnectorResult, error)
}

// ErrorCodeConnector is the error_code of an authorization the connector
// could not send (vault-proxy refused the call, the processor refused the
// request as malformed): nothing reached the processor.
const ErrorCodeConnector = "connector_error"

// PayByCard creates a transaction paid by a stored card and authorizes it
// through the card connector (s.Cards): Create (the reservation, in
// processing), Authorize with the transaction's id as the reference, and
// ApplyAuthorization of the answer (package comment). The transaction
// returned is as the answer left it: authorized or captured, declined
// (with the processor's code), or still processing when the outcome is
// unknown (a lost answer; the same reference sent again or a lookup
// settles it). A call the connector could not send at all leaves the
// transaction authorization_failed and is a *coreapi.ConnectorError.
// Without a card connector (production, until payment services exist) it
// is coreapi.ErrCardPaymentsUnavailable and nothing is stored.
func (s *Service) PayByCard(ctx context.Context, merchant string, n coreapi.NewTransaction) (*coreapi.Transaction, error) {
	if s.Cards == nil {
		return nil, coreapi.ErrCardPaymentsUnavailable
	}
	if n.Method == nil {
		card := coreapi.MethodCard
		n.Method = &card // a stored payment method of another kind is refused
	}
	t, err := s.Create(ctx, merchant, n)
	if err != nil {
		return nil, err
	}
	res, err := s.Cards.Authorize(ctx, connector.CardAuthorization{
		MerchantAccountID: merchant, PaymentMethodID: *t.PaymentMethod.ID, Reference: t.ID,
		Amount: t.Amount, Currency: t.Currency, Intent: t.Intent,
		MerchantInitiated: t.MerchantInitiated, PaymentSource: t.PaymentSource,
	})
	var sendErr error
	if err != nil && !errors.Is(err, connector.ErrOutcomeUnknown) {
		sendErr = &coreapi.ConnectorError{Failed: "the card connector could not send the authorization; the transaction is authorization_failed", Err: err}
		res = coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeConnector}
	}
	t, _, err = s.ApplyAuthorization(ctx, merchant, t.ID, res)
	if err != nil {
		return nil, err
	}
	return t, sendErr
}
