package transactions_test

import (
	"errors"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/pagination"
)

// Without a card connector (production, until payment services exist) a
// card payment is refused before anything is stored.
func TestPayByCardWithoutACardConnector(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	_, err := s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "EUR", PaymentMethodID: ptr("00000000-0000-4000-8000-000000000000")})
	if !errors.Is(err, coreapi.ErrCardPaymentsUnavailable) {
		t.Fatalf("PayByCard = %v, want ErrCardPaymentsUnavailable", err)
	}
	if got, err := s.List(ctx, "default", coreapi.TransactionFilter{}, pagination.Page{Limit: 10}); err != nil || len(got) != 0 {
		t.Fatalf("stored %d transactions (%v)", len(got), err)
	}
}
