package transactions_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
)

// A payment service of mock-redirect holds its own API key and webhook
// secret; once the secret is set for the key at mock-redirect (its
// dashboard), the notifications about the service's payments are signed
// with it and verify with the service's webhook_secret. A service whose
// key has no secret there is notified with the default one, which its
// own secret refuses: its payment waits (and a sync settles it).
func TestRedirectPaymentServiceSecret(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	reg := connector.NewRegistry(connector.MockRedirect{BaseURL: m.URL()})
	pss := &paymentservices.Service{Store: postgres.PaymentServicesStore{DB: db}, Connectors: reg, Crypter: vaulttransittest.New(t).Client}
	s.PaymentServices, s.Redirect.Connectors = pss, reg
	newPS := func(key, secret string) string {
		ps, err := pss.Create(ctx, "default", coreapi.PaymentServiceFields{Connector: connector.MockRedirectName, Method: coreapi.MethodGCash,
			DisplayName: coreapi.Some("GCash " + key), Credentials: json.RawMessage(`{"api_key":"` + key + `","webhook_secret":"` + secret + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return ps.ID
	}
	const key, secret = "mr_test_merchant_dashboard", "whsec_the_merchants_own_secret"
	req, _ := http.NewRequest(http.MethodPut, m.URL()+"/sandbox/webhook-secret", bytes.NewReader([]byte(`{"webhook_secret":"`+secret+`"}`)))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("set the secret at mock-redirect: %v %v", resp, err)
	}
	resp.Body.Close()

	for _, tc := range []struct {
		name     string
		ps       string
		delivery int
		status   coreapi.TransactionStatus
	}{
		{"its own secret", newPS(key, secret), http.StatusOK, coreapi.TransactionCaptureSucceeded},
		{"no secret at mock-redirect", newPS("mr_test_merchant_no_secret", "whsec_never_given_to_mock_redirect"), http.StatusInternalServerError,
			coreapi.TransactionBuyerApprovalPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := gcash(1600, coreapi.IntentCapture)
			n.PaymentServiceID = &tc.ps
			tx, err := s.PayRedirect(ctx, "default", n)
			if err != nil || deref(tx.PaymentServiceID) != tc.ps {
				t.Fatalf("created: %+v %v", tx, err)
			}
			resp, err := http.Post(m.URL()+"/sandbox/payments/"+*tx.PaymentServiceTransactionID+"/approve", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Delivery struct {
					StatusCode int `json:"status_code"`
				} `json:"delivery"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if out.Delivery.StatusCode != tc.delivery {
				t.Fatalf("delivery: %+v", out)
			}
			got, err := s.Get(ctx, "default", tx.ID)
			if err != nil || got.Status != tc.status {
				t.Fatalf("after the approval: %+v %v", got, err)
			}
			if n := notificationEvents(t, s, tx.ID); (n == 1) != (tc.delivery == http.StatusOK) {
				t.Fatalf("%d notification events", n)
			}
			if got, err = s.Sync(ctx, "default", tx.ID); err != nil || got.Status != coreapi.TransactionCaptureSucceeded {
				t.Fatalf("synced: %+v %v", got, err)
			}
		})
	}
}
