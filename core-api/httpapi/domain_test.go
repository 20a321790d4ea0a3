package httpapi

import (
	"errors"
	"fmt"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
)

// The services' errors about other services and connectors become the
// envelope here: what the request could not do, never the cause.
func TestDomainErrorsOfCallsElsewhere(t *testing.T) {
	refusal := apierror.ConcurrentRequest("the card changed meanwhile")
	cause := errors.New("dial tcp 10.0.0.7:443: connection refused")
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		message string
	}{
		{"vault-proxy without the route", &coreapi.VaultProxyError{Err: coreapi.ErrVaultProxyNotFound, Unanswered: "could not reopen the id"},
			502, "vault-proxy could not reopen the id"},
		{"vault-proxy's refusal", &coreapi.VaultProxyError{Err: fmt.Errorf("%w: %w", coreapi.ErrVaultProxyRefused, refusal), Unanswered: "could not reopen the id"},
			409, refusal.Message},
		{"vault-proxy unreachable", &coreapi.VaultProxyError{Err: cause}, 502, "vault-proxy could not be reached"},
		{"a connector's failure", &coreapi.ConnectorError{Failed: "the mandate could not be revoked; nothing was deleted", Err: cause},
			502, "the mandate could not be revoked; nothing was deleted"},
		{"no mandate connector", coreapi.ErrMandatesUnavailable, 422, "no connector for bank mandates is configured in this environment"},
		{"a declined mandate", coreapi.ErrMandateDeclined, 422, "the bank declined the mandate; nothing was stored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apierror.As(pmError(tc.err))
			if e.Status != tc.status || e.Message != tc.message {
				t.Fatalf("got %d %q, want %d %q", e.Status, e.Message, tc.status, tc.message)
			}
		})
	}
}

// A payment service a payment cannot use is 422 with its own code,
// pointing at /payment_service_id; elsewhere (an update of a payment
// service whose connector left the environment) without a pointer.
func TestPaymentServiceErrors(t *testing.T) {
	for _, e := range []*coreapi.PaymentServiceError{coreapi.ErrPaymentServiceNotFound, coreapi.ErrPaymentServiceInactive,
		coreapi.ErrPaymentServiceMethod, coreapi.ErrPaymentServiceUnavailable, coreapi.ErrPaymentServiceConnector} {
		t.Run(e.Code, func(t *testing.T) {
			got := apierror.As(transactionError(fmt.Errorf("routing: %w", e)))
			if got.Status != 422 || got.Code != e.Code || len(got.Details) != 1 || got.Details[0].Pointer != "/payment_service_id" {
				t.Fatalf("transaction: %+v", got)
			}
			got = apierror.As(domainError(e, "payment service"))
			if got.Status != 422 || got.Code != e.Code {
				t.Fatalf("payment service: %+v", got)
			}
		})
	}
}
