package vaultclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/apierror"
)

// The services act on what vault-proxy answered without knowing HTTP: a
// 404 is coreapi.ErrVaultProxyNotFound, a refusal in vault-proxy's
// envelope is coreapi.ErrVaultProxyRefused and still the envelope to pass
// on, and a server error is neither (the call may have done its work).
func TestErrorsSayWhatVaultProxyAnswered(t *testing.T) {
	conflict := apierror.ConcurrentRequest("the card changed meanwhile")
	for _, tc := range []struct {
		name              string
		status            int
		body              []byte
		notFound, refused bool
	}{
		{"not found", http.StatusNotFound, apierror.NotFound("no such card").JSON(), true, false},
		{"a refusal in its envelope", http.StatusConflict, conflict.JSON(), false, true},
		{"a server error", http.StatusBadGateway, apierror.BadGateway("Vault is down").JSON(), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := answering(t, tc.status, tc.body)
			err := c.Delete(context.Background(), "default", "", "0192f3a4-5b6c-7d8e-9f00-112233445566")
			if errors.Is(err, coreapi.ErrVaultProxyNotFound) != tc.notFound || errors.Is(err, coreapi.ErrVaultProxyRefused) != tc.refused {
				t.Fatalf("%v: not found %v, refused %v; want %v, %v", err, errors.Is(err, coreapi.ErrVaultProxyNotFound),
					errors.Is(err, coreapi.ErrVaultProxyRefused), tc.notFound, tc.refused)
			}
			if e := (*apierror.Error)(nil); tc.refused && (!errors.As(err, &e) || e.Code != conflict.Code || e.Message != conflict.Message) {
				t.Fatalf("%v: the refusal's envelope is not passed on", err)
			}
		})
	}
}

// The reconciliation keeps a record vault-proxy calls too young to shred
// (422); only that refusal says so, not another one, nor a server error.
func TestShredRefusalOfAYoungRecordIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		young  bool
	}{
		{"too young", http.StatusUnprocessableEntity, apierror.Unprocessable("the vaulted record is younger than the reconciliation's minimum age; it is kept").JSON(), true},
		{"another refusal", http.StatusBadRequest, apierror.BadRequest("bad token").JSON(), false},
		{"a server error", http.StatusInternalServerError, apierror.Internal(errors.New("boom")).JSON(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := answering(t, tc.status, tc.body)
			err := c.ShredUnclaimed(context.Background(), "default", "reconcile", "0192f3a4-5b6c-7d8e-9f00-112233445566")
			if err == nil || errors.Is(err, coreapi.ErrVaultedRecordTooYoung) != tc.young {
				t.Fatalf("%v: too young %v, want %v", err, errors.Is(err, coreapi.ErrVaultedRecordTooYoung), tc.young)
			}
		})
	}
}

// answering is a client of a vault-proxy stand-in on loopback that answers
// every call with status and body, closed when the test ends.
func answering(t *testing.T, status int, body []byte) *vaultclient.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return &vaultclient.Client{HTTP: srv.Client(), Base: srv.URL}
}
