package connector

import (
	"context"

	coreapi "github.com/payorch/core-api"
)

// Operations captures, voids and refunds a payment the processor holds
// under its own id (DirectOperation.OrderID): a direct integration's
// order, a redirect payment. Each call is idempotent by its reference;
// one whose outcome is not known is as CardConnector's
// (ErrOutcomeUnknown with a pending result).
type Operations interface {
	// Capture captures part of an authorized payment, Void voids its
	// authorization, Refund refunds part of its captures: succeeded, or
	// declined when the processor refuses the operation.
	Capture(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error)
	Void(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error)
	Refund(ctx context.Context, r DirectOperation) (coreapi.ConnectorResult, error)
}
