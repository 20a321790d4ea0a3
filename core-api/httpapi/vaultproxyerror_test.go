package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/apierror"
)

// A failure of a call to vault-proxy says which it was: vault-proxy's own
// refusal passes through, a 5xx it answered is not called unreachable,
// and a timeout is a 504.
func TestVaultProxyErrorTellsWhatFailed(t *testing.T) {
	refused := apierror.ConcurrentRequest("the card changed meanwhile")
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		message string
	}{
		{"its envelope", fmt.Errorf("call: %w", refused), 409, refused.Message},
		{"a 5xx it answered", &vaultclient.StatusError{Method: "DELETE", Path: "/internal/cards/x", Status: 502}, 502, "vault-proxy could not complete the request"},
		{"no connection", fmt.Errorf("vaultclient: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), 502, "vault-proxy could not be reached"},
		{"a timeout", fmt.Errorf("vaultclient: %w", context.DeadlineExceeded), 504, "vault-proxy did not answer in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apierror.As(vaultProxyError(tc.err))
			if e.Status != tc.status || e.Message != tc.message {
				t.Fatalf("got %d %q, want %d %q", e.Status, e.Message, tc.status, tc.message)
			}
		})
	}
}
