package transactions_test

import (
	"errors"
	"reflect"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
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

// A capture, void or refund through the card connector is refused before
// anything is reserved when there is no card connector, or when the
// transaction is not paid by a stored card.
func TestCardOperationsRefusedBeforeReserving(t *testing.T) {
	db := postgrestest.New(t)
	withCards := service(db)
	withCards.Cards = connector.MockCard{} // never reached
	ops := map[string]func(s *transactions.Service, id string) error{
		"capture": func(s *transactions.Service, id string) error {
			_, err := s.CaptureCard(ctx, "default", id, nil)
			return err
		},
		"void": func(s *transactions.Service, id string) error { _, err := s.VoidCard(ctx, "default", id); return err },
		"refund": func(s *transactions.Service, id string) error {
			_, err := s.RefundCard(ctx, "default", id, coreapi.NewRefund{})
			return err
		},
	}
	for _, tc := range []struct {
		name string
		s    *transactions.Service
		want error
	}{
		{"no card connector", service(db), coreapi.ErrCardPaymentsUnavailable},
		{"not a card payment", withCards, coreapi.ErrNotACardPayment},
	} {
		for op, call := range ops {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				tx := authorized(t, tc.s, "default", 1000, coreapi.IntentCapture)
				if err := call(tc.s, tx.ID); !errors.Is(err, tc.want) {
					t.Fatalf("%s = %v, want %v", op, err, tc.want)
				}
				if after, err := tc.s.Get(ctx, "default", tx.ID); err != nil || !reflect.DeepEqual(after.TransactionState, tx.TransactionState) {
					t.Fatalf("changed: %+v (%v)", after, err)
				}
			})
		}
	}
}
