package transactions

import (
	"context"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// PaymentServices finds a payment's payment service and its configuration
// (paymentservices.Service).
type PaymentServices interface {
	// ForPayment is the payment service named by id, or without id the
	// merchant account's default for method (nil when it has none), with
	// its configuration; one the payment cannot use is a
	// *coreapi.PaymentServiceError.
	ForPayment(ctx context.Context, merchant string, id *string, method string) (*coreapi.PaymentService, connector.Config, error)
	// ForOperation is payment service id, deleted or inactive alike, with
	// its configuration.
	ForOperation(ctx context.Context, merchant, id string) (*coreapi.PaymentService, connector.Config, error)
}

// Connectors are the environment's connectors by name (connector.Registry).
type Connectors interface {
	Cards(name string) (connector.CardConnector, error)
	GiftCards(name string) (connector.GiftCardConnector, error)
	QRs(name string) (connector.QRConnector, error)
	BankDebits(name string) (connector.BankDebitConnector, error)
	Notifications(name string) (connector.NotificationConnector, error)
	Schemas(name string) (connector.Schemas, error)
}

// route chooses the card (or gift card: connectorFor) connector of a new payment (docs/payment-
// services.md, "Routing"): the payment service n names, else the merchant
// account's default for cards, else, outside production, the built-in
// sandbox connector (s.Cards) with the zero configuration. It sets n's
// payment service id to the one chosen, and checks the connector's entry
// of n's connection options against its schema: the only entry it gets.
func (s *Service) route(ctx context.Context, merchant string, n *coreapi.NewTransaction) (CardConnector, connector.Config, connector.Values, error) {
	var cards CardConnector
	ps, cfg, err := s.PaymentServices.ForPayment(ctx, merchant, n.PaymentServiceID, *n.Method)
	switch {
	case err != nil:
		return nil, cfg, nil, err
	case ps != nil:
		c, err := s.connectorFor(*n.Method, ps.Connector)
		if err != nil {
			return nil, cfg, nil, coreapi.ErrPaymentServiceConnector
		}
		cards, n.PaymentServiceID = c, &ps.ID
	case s.builtIn(*n.Method) != nil:
		cards = s.builtIn(*n.Method)
	default:
		return nil, cfg, nil, coreapi.ErrPaymentServiceUnavailable
	}
	var v coreapi.Problems
	var options connector.Values
	if sc, err := s.Connectors.Schemas(cards.Name()); err == nil {
		options = sc.ConnectionOptions.Validate("/connection_options/"+cards.Name(), n.ConnectionOptions[cards.Name()], &v)
	}
	if err := v.Err(); err != nil {
		return nil, cfg, nil, err
	}
	return cards, cfg, options, nil
}

// cardsOf is the connector and configuration that t's later operations
// (captures, voids, refunds, lookups) go to: its payment service's, or
// the built-in sandbox connector's for a payment that had none.
func (s *Service) cardsOf(ctx context.Context, t *coreapi.Transaction) (CardConnector, connector.Config, error) {
	if t.PaymentServiceID == nil {
		c := s.builtIn(t.PaymentMethod.Method)
		if c == nil {
			return nil, connector.Config{}, coreapi.ErrCardPaymentsUnavailable
		}
		return c, connector.Config{}, nil
	}
	ps, cfg, err := s.PaymentServices.ForOperation(ctx, t.MerchantAccountID, *t.PaymentServiceID)
	if err != nil {
		return nil, cfg, err
	}
	c, err := s.connectorFor(t.PaymentMethod.Method, ps.Connector)
	if err != nil {
		return nil, cfg, coreapi.ErrPaymentServiceConnector
	}
	return c, cfg, nil
}
