package httpapi

import (
	"encoding/json"
	"fmt"

	coreapi "github.com/payorch/core-api"
)

// EventRenderer renders an outbound event's payload (docs/webhooks.md,
// "Payload") with its target exactly as the API returns that resource:
// the store calls it inside the database transaction of the change, so
// the payload is the state that committed. It is the only place outside
// the handlers that knows a resource's wire form.
type EventRenderer struct {
	Environment string // the instance's: sandbox or production
}

type eventPayloadJSON struct {
	Type              string `json:"type"`
	ID                string `json:"id"`
	Name              string `json:"name"`
	CreatedAt         string `json:"created_at"`
	MerchantAccountID string `json:"merchant_account_id"`
	Environment       string `json:"environment"`
	Target            any    `json:"target"`
}

// RenderEvent is the payload of event id.
func (r EventRenderer) RenderEvent(id string, e *coreapi.OutboundEvent) ([]byte, error) {
	target, err := eventTarget(e.Target)
	if err != nil {
		return nil, err
	}
	return json.Marshal(eventPayloadJSON{Type: "event", ID: id, Name: e.Name, CreatedAt: timestamp(e.CreatedAt),
		MerchantAccountID: e.MerchantAccountID, Environment: r.Environment, Target: target})
}

func eventTarget(v any) (any, error) {
	switch t := v.(type) {
	case *coreapi.Transaction:
		out := transactionOut(t)
		// A direct integration's session token is for the caller that
		// created the transaction, never for a webhook.
		out.SessionToken = nil
		return out, nil
	case *coreapi.Refund:
		return refundOut(t), nil
	case *coreapi.Buyer:
		return buyerOut(t), nil
	case *coreapi.PaymentMethod:
		return paymentMethodView(t), nil
	default:
		return nil, fmt.Errorf("httpapi: no wire form for an event target of type %T", v)
	}
}
