package paymentmethods_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/paymentmethods"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
	"github.com/payorch/shared/zone"
)

// bankVault is vault-proxy's metadata of the bank accounts it vaulted:
// any token is a SEPA account of the default merchant account.
type bankVault struct{ paymentmethods.VaultProxy }

func (bankVault) Card(_ context.Context, merchant, token string) (*zone.CardMetadata, error) {
	return &zone.CardMetadata{ID: token, MerchantAccountID: merchant, Kind: coreapi.VaultProxyKind(coreapi.MethodBank), Scheme: "sepa", Label: "3000"}, nil
}

// A bank account stored with mandate.recurring has its mandate set up
// where a debit of it would go (the transactions service's routing, on
// the real database, Vault and mock-bank), and the account and its
// mandate are stored together or not at all:
//
//   - with a default payment service for bank: set up under its API key,
//     stored naming it;
//   - without one in production: 422 payment_service_unavailable, nothing
//     sent to a bank, nothing stored;
//   - set up, but the account cannot be stored (the vault reconciliation
//     gave its token up): nothing stored, and the mandate revoked at
//     mock-bank under the payment service's key;
//   - declined by the bank: nothing stored.
func TestCreateBankAccountMandateRouted(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	sim, err := mockbank.New(mockbank.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	bank := connector.MockBank{BaseURL: sim.URL()}
	reg := connector.NewRegistry(bank)
	pss := &paymentservices.Service{Store: postgres.PaymentServicesStore{DB: db}, Connectors: reg, Crypter: vaulttransittest.New(t).Client}
	txs := &transactions.Service{Store: postgres.TransactionsStore{DB: db}, PaymentServices: pss, Connectors: reg,
		QR: &transactions.QR{NotificationBaseURL: "http://127.0.0.1:9"}, Bank: &transactions.Bank{Mandates: db}}
	s := &paymentmethods.Service{Store: postgres.PaymentMethodsStore{DB: db}, VaultProxy: bankVault{}, Connectors: reg, Mandates: txs,
		PaymentServices: pss, Now: time.Now, Log: slog.New(slog.DiscardHandler)}

	const key = "mb_test_stored_account_key"
	// atBank is mock-bank's mandate of account pm under apiKey, as POST
	// /v1/mandates answers the same reference again (201: there was none).
	atBank := func(t *testing.T, apiKey, pm string) (code int, status string) {
		t.Helper()
		body := `{"reference":"` + pm + `","scheme":"sepa","currency":"EUR","account_holder_name":"Erika","notification_url":"http://127.0.0.1:9"}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, sim.URL()+"/v1/mandates", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct{ Status string }
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m.Status
	}
	var service string
	for _, tc := range []struct {
		name    string
		service bool // a default payment service for bank exists
		givenUp bool // the token was given up before the account is stored
		holder  string
		err     func(error) bool
		revoked bool // mock-bank holds the mandate, revoked
	}{
		{name: "no payment service in production", err: func(err error) bool { return errors.Is(err, coreapi.ErrPaymentServiceUnavailable) }},
		{name: "the default payment service for bank", service: true},
		{name: "the account cannot be stored: the mandate is revoked where it was set up", service: true, givenUp: true, revoked: true,
			err: func(err error) bool { var ve *coreapi.ValidationError; return errors.As(err, &ve) }},
		{name: "declined by the bank", service: true, holder: mockbank.DeclinedHolder,
			err: func(err error) bool { return errors.Is(err, coreapi.ErrMandateDeclined) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.service && service == "" {
				ps, err := pss.Create(ctx, "default", coreapi.PaymentServiceFields{Connector: connector.MockBankName, Method: coreapi.MethodBank,
					Default: coreapi.Some(true), Credentials: json.RawMessage(`{"api_key":"` + key + `","webhook_secret":"whsec_stored_account_secret"}`)})
				if err != nil {
					t.Fatal(err)
				}
				service = ps.ID
			}
			id := uuid.NewString()
			if tc.givenUp {
				if _, err := db.GiveUpToken(ctx, id, "default", "bank-account", time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			holder := tc.holder
			if holder == "" {
				holder = "Erika"
			}
			in := coreapi.NewPaymentMethod{Method: ptr(coreapi.MethodBank), ID: &id, Scheme: ptr("sepa"), Country: ptr("DE"),
				Currency: ptr("EUR"), AccountHolderName: &holder, Mandate: &coreapi.MandateOptions{Recurring: true}}
			pm, err := s.Create(ctx, "default", in)
			stored, getErr := db.PaymentMethod(ctx, "default", id)
			if tc.err != nil {
				if !tc.err(err) || pm != nil {
					t.Fatalf("Create: %+v %v", pm, err)
				}
				if !errors.Is(getErr, coreapi.ErrNotFound) {
					t.Fatalf("a refused account was stored: %+v %v", stored, getErr)
				}
			} else if err != nil || getErr != nil || stored.Mandate == nil || stored.Mandate.PaymentServiceID == nil ||
				*stored.Mandate.PaymentServiceID != service || stored.Mandate.ID != pm.Mandate.ID {
				t.Fatalf("Create: %+v %v; stored %+v %v", pm, err, stored, getErr)
			}
			atKey := key
			if !tc.service {
				atKey = connector.MockBankSandboxAPIKey
			}
			code, status := atBank(t, atKey, id)
			switch {
			case tc.revoked && (code != http.StatusOK || status != mockbank.MandateRevoked):
				t.Fatalf("mock-bank's mandate under the payment service's key: %d %s, want it revoked", code, status)
			case !tc.service && code != http.StatusCreated:
				t.Fatalf("mock-bank had a mandate of the refused account: %d %s", code, status)
			case tc.err == nil && (code != http.StatusOK || status != mockbank.MandatePending):
				t.Fatalf("mock-bank's mandate under the payment service's key: %d %s", code, status)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
