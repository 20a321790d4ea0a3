package postgres_test

import (
	"context"
	"errors"
	"testing"

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
