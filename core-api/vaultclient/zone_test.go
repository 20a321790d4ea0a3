package vaultclient_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/zone"
	"github.com/payorch/shared/zone/zonetest"
)

// fixtureToken is the token the card fixtures name.
const fixtureToken = "0b7d7c3e-3f5e-4c56-9a52-7e6f5a6f2b11"

// TestCallsAreTheZoneContract: each call of the client goes to its route
// in shared/zone, sends the zone's golden fixture as its body when given
// the fixture's values, and reads the fixture vault-proxy answers into the
// same value. vault-proxy's tests hold its side to the same fixtures.
func TestCallsAreTheZoneContract(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, method, path string
		request            string // the fixture the body must be, "" for none
		status             int
		answer             string // the fixture answered, "" for none
		call               func(c *vaultclient.Client) (any, error)
	}{
		{"Card", http.MethodGet, zone.CardPathPrefix + fixtureToken, "", http.StatusOK, "card_metadata.json",
			func(c *vaultclient.Client) (any, error) { return c.Card(ctx, "default", fixtureToken) }},
		{"UpdateExpiry", http.MethodPut, zone.CardPathPrefix + fixtureToken, "expiry_update.json", http.StatusNoContent, "",
			func(c *vaultclient.Client) (any, error) {
				return nil, c.UpdateExpiry(ctx, "default", "test", fixtureToken, "12/30")
			}},
		{"Delete", http.MethodDelete, zone.CardPathPrefix + fixtureToken, "", http.StatusNoContent, "",
			func(c *vaultclient.Client) (any, error) { return nil, c.Delete(ctx, "default", "test", fixtureToken) }},
		{"ForgetSecurityCodeFor", http.MethodDelete, zone.CardPathPrefix + fixtureToken + "/security-code-holds/" + fixtureToken, "", http.StatusNoContent, "",
			func(c *vaultclient.Client) (any, error) {
				return nil, c.ForgetSecurityCodeFor(ctx, "default", fixtureToken, fixtureToken)
			}},
		{"Detokenize", http.MethodPost, zone.DetokenizePath, "detokenize_request.json", http.StatusOK, "detokenize_response.json",
			func(c *vaultclient.Client) (any, error) {
				return c.Detokenize(ctx, "default", "test", zonetest.Decode[zone.DetokenizeRequest](t, "detokenize_request.json"))
			}},
		{"VaultedRecords", http.MethodGet, zone.ReconcileRecordsPath, "", http.StatusOK, "vaulted_record_page.json",
			func(c *vaultclient.Client) (any, error) {
				return c.VaultedRecords(ctx, coreapi.VaultedRecordsQuery{CreatedBefore: time.Now()})
			}},
		{"ShredUnclaimed", http.MethodDelete, zone.ReconcileRecordPathPrefix + fixtureToken, "", http.StatusNoContent, "",
			func(c *vaultclient.Client) (any, error) {
				return nil, c.ShredUnclaimed(ctx, "default", "test", fixtureToken)
			}},
		{"MerchantAccountUsage", http.MethodGet, "/internal/merchant-accounts/acme/usage", "", http.StatusOK, "merchant_account_usage.json",
			func(c *vaultclient.Client) (any, error) { return c.MerchantAccountUsage(ctx, "acme") }},
		{"CloseMerchantAccount", http.MethodPost, "/internal/merchant-accounts/acme/close", "merchant_account_closure_attempt.json", http.StatusOK, "merchant_account_closure.json",
			func(c *vaultclient.Client) (any, error) {
				return c.CloseMerchantAccount(ctx, "acme", zonetest.Decode[zone.MerchantAccountClosureAttempt](t, "merchant_account_closure_attempt.json").AttemptID)
			}},
		{"ReopenMerchantAccount", http.MethodPost, "/internal/merchant-accounts/acme/reopen", "", http.StatusOK, "merchant_account_closure.json",
			func(c *vaultclient.Client) (any, error) { return c.ReopenMerchantAccount(ctx, "acme") }},
		{"CancelCloseMerchantAccount", http.MethodPost, "/internal/merchant-accounts/acme/cancel-close", "merchant_account_closure_attempt.json", http.StatusNoContent, "",
			func(c *vaultclient.Client) (any, error) {
				return nil, c.CancelCloseMerchantAccount(ctx, "acme", zonetest.Decode[zone.MerchantAccountClosureAttempt](t, "merchant_account_closure_attempt.json").AttemptID)
			}},
		{"Ready", http.MethodGet, zone.ReadyPath, "", http.StatusOK, "",
			func(c *vaultclient.Client) (any, error) { return nil, c.Ready(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				switch {
				case r.Method != tc.method || r.URL.Path != tc.path:
					t.Errorf("called %s %s, want %s %s", r.Method, r.URL.Path, tc.method, tc.path)
				case tc.request == "" && len(body) > 0:
					t.Errorf("sent a body %s, want none", body)
				case tc.request != "" && !zonetest.SameJSON(t, body, zonetest.Read(t, tc.request)):
					t.Errorf("sent %s, want %s", body, zonetest.Read(t, tc.request))
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				if tc.answer != "" {
					_, _ = w.Write(zonetest.Read(t, tc.answer))
				}
			}))
			defer srv.Close()
			got, err := tc.call(&vaultclient.Client{HTTP: srv.Client(), Base: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			if tc.answer == "" {
				return
			}
			read, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !zonetest.SameJSON(t, read, zonetest.Read(t, tc.answer)) {
				t.Fatalf("read %s, want %s", read, zonetest.Read(t, tc.answer))
			}
		})
	}
}
