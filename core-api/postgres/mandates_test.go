package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/pagination"
)

// A mandate a debit set up is recorded once with its created event, however
// often two debits racing to set it up record it; a payment method deleted
// meanwhile records nothing.
func TestAddMandate(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	pm := &coreapi.PaymentMethod{Method: coreapi.MethodBank, Scheme: "sepa", Label: "3000", Country: "DE", Currency: "EUR",
		Bank: &coreapi.BankDetails{AccountHolderName: "Erika"}}
	postgrestest.StorePaymentMethod(t, db, pm)
	for range 2 {
		m := &coreapi.Mandate{ID: "mbm_first_use", Connector: "mock-bank", Status: coreapi.MandatePending}
		if err := db.AddMandate(ctx, pm, m); err != nil || m.CreatedAt.IsZero() {
			t.Fatalf("AddMandate: %+v %v", m, err)
		}
	}
	got, err := db.PaymentMethod(ctx, "default", pm.ID)
	if err != nil || got.Mandate == nil || got.Mandate.ID != "mbm_first_use" || got.Mandate.Status != coreapi.MandatePending {
		t.Fatalf("payment method's mandate: %+v %v", got, err)
	}
	evs, err := db.ListMandateEvents(ctx, "default", "mbm_first_use", pagination.Page{Limit: pagination.MaxLimit})
	if err != nil || len(evs) != 1 || evs[0].Name != coreapi.MandateEventCreated || evs[0].PaymentMethodID != pm.ID {
		t.Fatalf("events %+v %v", evs, err)
	}

	if err := db.DeletePaymentMethod(ctx, "default", pm.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.AddMandate(ctx, pm, &coreapi.Mandate{ID: "mbm_too_late", Connector: "mock-bank", Status: coreapi.MandatePending}); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("AddMandate after the deletion: %v", err)
	}
	if _, err := db.ListMandateEvents(ctx, "default", "mbm_too_late", pagination.Page{Limit: pagination.MaxLimit}); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("a mandate recorded for a deleted payment method: %v", err)
	}
}

// A mandate stored with its bank account keeps the payment service it
// was set up through (none: the built-in configuration), which its
// notifications and charges are then routed by.
func TestCreatePaymentMethodKeepsTheMandatesPaymentService(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	service := uuid.NewString()
	for _, tc := range []struct {
		name string
		ps   *string
	}{
		{"through a payment service", &service},
		{"through the built-in configuration", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pm := &coreapi.PaymentMethod{ID: uuid.NewString(), MerchantAccountID: "default", Method: coreapi.MethodBank, Status: coreapi.StatusSucceeded,
				Scheme: "ach", Label: "6789", Country: "US", Currency: "USD", Bank: &coreapi.BankDetails{AccountHolderName: "Jane"}}
			m := &coreapi.Mandate{ID: "mbm_" + pm.ID, Connector: "mock-bank", PaymentServiceID: tc.ps, Status: coreapi.MandatePending}
			if err := db.CreatePaymentMethod(ctx, pm, m); err != nil {
				t.Fatal(err)
			}
			for _, got := range []func() (*coreapi.Mandate, error){
				func() (*coreapi.Mandate, error) { return db.Mandate(ctx, "default", m.ID) },
				func() (*coreapi.Mandate, error) {
					p, err := db.PaymentMethod(ctx, "default", pm.ID)
					if err != nil {
						return nil, err
					}
					return p.Mandate, nil
				},
			} {
				g, err := got()
				if err != nil || g == nil || (g.PaymentServiceID == nil) != (tc.ps == nil) || tc.ps != nil && *g.PaymentServiceID != *tc.ps {
					t.Fatalf("mandate %+v %v, want payment service %v", g, err, tc.ps)
				}
			}
		})
	}
}
