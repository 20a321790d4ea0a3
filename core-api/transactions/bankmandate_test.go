package transactions_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
)

// A mandate set up with a stored account (NewMandate) is routed as a
// customer-initiated debit naming no payment service: the merchant
// account's default payment service for bank, under its API key, named
// by the mandate; without one, the built-in sandbox connector under its
// public key, the mandate naming none; without that either
// (production), payment_service_unavailable, and nothing reaches the
// bank. A mandate the bank declines is coreapi.ErrMandateDeclined. None
// is recorded: the caller stores it with the account.
func TestNewMandateRouted(t *testing.T) {
	r := newBankRig(t)
	pss := &paymentservices.Service{Store: postgres.PaymentServicesStore{DB: r.db}, Connectors: r.s.Connectors.(*connector.Registry),
		Crypter: vaulttransittest.New(t).Client}
	r.s.PaymentServices = pss
	const serviceKey = "mb_test_mandate_routing_key"
	var service *coreapi.PaymentService // the default for bank, once made
	builtIn := r.s.Bank.BuiltIn

	// at is the status mock-bank answers for the mandate under key.
	at := func(t *testing.T, key, id string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.sim.URL()+"/v1/mandates/"+id, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name       string
		production bool   // no built-in connector
		service    bool   // the account has a default payment service for bank
		holder     string // the account holder (mockbank.DeclinedHolder: declined)
		err        error
		key        string // the API key the mandate is set up under
	}{
		{name: "no payment service: the built-in sandbox connector", key: connector.MockBankSandboxAPIKey},
		{name: "no payment service in production", production: true, err: coreapi.ErrPaymentServiceUnavailable},
		{name: "the default payment service for bank", service: true, key: serviceKey},
		{name: "the default payment service for bank in production", service: true, production: true, key: serviceKey},
		{name: "declined by the bank", service: true, holder: mockbank.DeclinedHolder, err: coreapi.ErrMandateDeclined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.service && service == nil {
				var err error
				service, err = pss.Create(ctx, "default", coreapi.PaymentServiceFields{Connector: connector.MockBankName, Method: coreapi.MethodBank,
					Default:     coreapi.Some(true),
					Credentials: json.RawMessage(`{"api_key":"` + serviceKey + `","webhook_secret":"whsec_the_services_own_secret"}`)})
				if err != nil {
					t.Fatal(err)
				}
			}
			r.s.Bank.BuiltIn = builtIn
			if tc.production {
				r.s.Bank.BuiltIn = nil
			}
			holder := tc.holder
			if holder == "" {
				holder = "Erika"
			}
			pm := &coreapi.PaymentMethod{ID: uuid.NewString(), MerchantAccountID: "default", Method: coreapi.MethodBank, Scheme: "sepa", Label: "1234",
				Country: "DE", Currency: "EUR", Bank: &coreapi.BankDetails{AccountHolderName: holder}}
			m, err := r.s.NewMandate(ctx, pm)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || m != nil {
					t.Fatalf("mandate %+v %v, want %v", m, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantPS := ""
			if tc.service {
				wantPS = service.ID
			}
			if got := deref(m.PaymentServiceID); got != wantPS || m.Status != coreapi.MandatePending || m.Connector != connector.MockBankName ||
				m.PaymentMethodID != pm.ID {
				t.Fatalf("mandate %+v (payment service %q), want payment service %q", m, got, wantPS)
			}
			other := serviceKey
			if tc.key == serviceKey {
				other = connector.MockBankSandboxAPIKey
			}
			if at(t, tc.key, m.ID) != http.StatusOK || at(t, other, m.ID) != http.StatusNotFound {
				t.Fatalf("mock-bank does not hold mandate %s under %s alone", m.ID, tc.key)
			}
			if _, err := r.db.Mandate(ctx, "default", m.ID); !errors.Is(err, coreapi.ErrNotFound) {
				t.Fatalf("the mandate was recorded: %v", err)
			}
		})
	}
}
