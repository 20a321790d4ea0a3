package vaultclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/zone"
)

// calls are every call the client makes, each for merchant.
var calls = []struct {
	name string
	call func(c *vaultclient.Client, merchant string) error
}{
	{"Card", func(c *vaultclient.Client, m string) error {
		_, err := c.Card(context.Background(), m, "7f6c2f9e-0f6e-4d52-8d8c-8d0f3d2f1a10")
		return err
	}},
	{"UpdateExpiry", func(c *vaultclient.Client, m string) error {
		return c.UpdateExpiry(context.Background(), m, "test", "7f6c2f9e-0f6e-4d52-8d8c-8d0f3d2f1a10", "12/30")
	}},
	{"Delete", func(c *vaultclient.Client, m string) error {
		return c.Delete(context.Background(), m, "test", "7f6c2f9e-0f6e-4d52-8d8c-8d0f3d2f1a10")
	}},
	{"ForgetSecurityCodeFor", func(c *vaultclient.Client, m string) error {
		return c.ForgetSecurityCodeFor(context.Background(), m, "7f6c2f9e-0f6e-4d52-8d8c-8d0f3d2f1a10", "2b0c7a34-6c4b-4f43-9a3e-3f3a3c1d9b11")
	}},
	{"Detokenize", func(c *vaultclient.Client, m string) error {
		_, err := c.Detokenize(context.Background(), m, "test", zone.DetokenizeRequest{Destination: "mock-card", Path: "/pay"})
		return err
	}},
	{"MerchantAccountUsage", func(c *vaultclient.Client, m string) error {
		_, err := c.MerchantAccountUsage(context.Background(), m)
		return err
	}},
	{"CloseMerchantAccount", func(c *vaultclient.Client, m string) error {
		_, err := c.CloseMerchantAccount(context.Background(), m, "2b0c7a34-6c4b-4f43-9a3e-3f3a3c1d9b11")
		return err
	}},
	{"ReopenMerchantAccount", func(c *vaultclient.Client, m string) error {
		_, err := c.ReopenMerchantAccount(context.Background(), m)
		return err
	}},
	{"CancelCloseMerchantAccount", func(c *vaultclient.Client, m string) error {
		return c.CancelCloseMerchantAccount(context.Background(), m, "2b0c7a34-6c4b-4f43-9a3e-3f3a3c1d9b11")
	}},
}

// fakeVault stands in for vault-proxy's internal listener: it records the
// merchant header of each request and answers for that account.
type fakeVault struct {
	mu      sync.Mutex
	headers [][]string
}

func startFakeVault(t *testing.T) (*fakeVault, *vaultclient.Client) {
	t.Helper()
	f := &fakeVault{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Values(accountid.Header))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"merchant_account_id": r.Header.Get(accountid.Header)})
	}))
	t.Cleanup(srv.Close)
	return f, &vaultclient.Client{HTTP: srv.Client(), Base: srv.URL}
}

func (f *fakeVault) received() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers
}

// TestEveryCallNamesTheMerchantAccount: vault-proxy's internal listener
// refuses a call without the merchant account header, so every call of the
// client sends it, and one for no account is refused before it is sent.
func TestEveryCallNamesTheMerchantAccount(t *testing.T) {
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			f, c := startFakeVault(t)
			if err := tc.call(c, "acme"); err != nil {
				t.Fatalf("call for acme: %v", err)
			}
			if got := f.received(); len(got) != 1 || len(got[0]) != 1 || got[0][0] != "acme" {
				t.Fatalf("merchant headers sent %q, want one request with acme", got)
			}
		})
		t.Run(tc.name+" for no account", func(t *testing.T) {
			f, c := startFakeVault(t)
			if err := tc.call(c, ""); !errors.Is(err, vaultclient.ErrNoMerchantAccount) {
				t.Fatalf("call for no account = %v, want ErrNoMerchantAccount", err)
			}
			if got := f.received(); len(got) != 0 {
				t.Fatalf("sent %d requests, want none", len(got))
			}
		})
	}
}
