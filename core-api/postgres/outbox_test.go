package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
)

// refusedRenderer renders payloads that PostgreSQL refuses (not UTF-8):
// the event's statement fails on the server, after the change's
// statements before it in the same round trip have run.
type refusedRenderer struct{}

func (refusedRenderer) RenderEvent(string, *coreapi.OutboundEvent) ([]byte, error) {
	return []byte("{\xff}"), nil
}

// TestOutboxEventRefusedWritesNothing: a write whose outbound event the
// database refuses leaves nothing behind, though the event goes in the
// same round trip as the change (one implicit transaction for a buyer's
// creation; with the COMMIT, or with the transition, otherwise).
func TestOutboxEventRefusedWritesNothing(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	svc := &transactions.Service{Store: postgres.TransactionsStore{DB: db}}
	const m = "default"
	good := db.Events
	refused := func(f func() error) error {
		db.Events = refusedRenderer{}
		defer func() { db.Events = good }()
		return f()
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	buyer, err := db.CreateBuyer(ctx, m, coreapi.BuyerFields{DisplayName: coreapi.Some("Ada"), ExternalIdentifier: coreapi.Some("ada")})
	if err != nil {
		t.Fatal(err)
	}
	pm := &coreapi.PaymentMethod{Method: "card", Scheme: "visa", Label: "4242", BIN: "424242", ExpirationDate: "12/30"}
	postgrestest.StorePaymentMethod(t, db, pm)
	tr, err := svc.Create(ctx, m, coreapi.NewTransaction{Amount: 500, Currency: "EUR", PaymentMethodID: &pm.ID})
	if err != nil {
		t.Fatal(err)
	}
	events := count(`SELECT count(*) FROM webhook_events`)

	for _, tc := range []struct {
		name      string
		write     func() error
		unwritten func() bool
	}{
		{"POST /buyers", func() error {
			_, err := db.CreateBuyer(ctx, m, coreapi.BuyerFields{ExternalIdentifier: coreapi.Some("grace")})
			return err
		}, func() bool { return count(`SELECT count(*) FROM buyers WHERE external_identifier = 'grace'`) == 0 }},
		{"PUT /buyers/{id}", func() error {
			_, err := db.UpdateBuyer(ctx, m, buyer.ID, coreapi.BuyerFields{DisplayName: coreapi.Some("Ada L.")})
			return err
		}, func() bool { return count(`SELECT count(*) FROM buyers WHERE display_name = 'Ada'`) == 1 }},
		{"POST /payment-methods-by-token", func() error {
			return db.CreatePaymentMethod(ctx, &coreapi.PaymentMethod{ID: uuid.NewString(), MerchantAccountID: m, Method: "card",
				Status: coreapi.StatusSucceeded, Scheme: "visa", Label: "1111"}, nil)
		}, func() bool { return count(`SELECT count(*) FROM payment_methods WHERE label = '1111'`) == 0 }},
		{"POST /transactions", func() error {
			_, err := svc.Create(ctx, m, coreapi.NewTransaction{Amount: 700, Currency: "EUR", PaymentMethodID: &pm.ID})
			return err
		}, func() bool { return count(`SELECT count(*) FROM transactions WHERE amount = 700`) == 0 }},
		{"an authorization's answer, with the payment method's use", func() error {
			_, _, err := svc.ApplyAuthorization(ctx, m, tr.ID, coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "a"})
			return err
		}, func() bool {
			return count(`SELECT count(*) FROM transactions WHERE id = $1 AND status = 'processing'`, tr.ID) == 1 &&
				count(`SELECT count(*) FROM transaction_events WHERE transaction_id = $1`, tr.ID) == 1 &&
				count(`SELECT usage_count FROM payment_methods WHERE id = $1`, pm.ID) == 0
		}},
	} {
		err := refused(tc.write)
		var pe interface{ SQLState() string }
		if !errors.As(err, &pe) || pe.SQLState() != "22021" {
			t.Errorf("%s: %v, want the database's refusal of the event (22021)", tc.name, err)
		}
		if !tc.unwritten() {
			t.Errorf("%s: the change was written without its event", tc.name)
		}
	}
	if n := count(`SELECT count(*) FROM webhook_events`); n != events {
		t.Errorf("%d outbound events, want %d", n, events)
	}

	// The writes' errors are still the typed ones.
	_, err = db.CreateBuyer(ctx, m, coreapi.BuyerFields{ExternalIdentifier: coreapi.Some("ada")})
	var dup *coreapi.DuplicateError
	if !errors.As(err, &dup) || dup.ExistingID != buyer.ID {
		t.Errorf("a taken external identifier: %v, want a DuplicateError naming %s", err, buyer.ID)
	}
	if _, err := db.CreateBuyer(ctx, "gone", coreapi.BuyerFields{}); !errors.Is(err, coreapi.ErrMerchantAccountNotFound) {
		t.Errorf("a merchant account not there: %v", err)
	}
	if n := count(`SELECT count(*) FROM webhook_events`); n != events {
		t.Errorf("%d outbound events after refused writes, want %d", n, events)
	}
}

// TestCreateBuyerEventIsTheRow: the buyer's event, rendered before the
// row is sent, shows the row as it reads back.
func TestCreateBuyerEventIsTheRow(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	first := "Ada"
	b, err := db.CreateBuyer(ctx, "default", coreapi.BuyerFields{DisplayName: coreapi.Some("Ada"), AccountNumber: coreapi.Some("acc-1"),
		BillingDetails: coreapi.Some(coreapi.BillingDetails{FirstName: &first})})
	if err != nil {
		t.Fatal(err)
	}
	read, err := db.FindBuyer(ctx, "default", b.ID)
	if err != nil {
		t.Fatal(err)
	}
	var id, payload string
	if err := db.Pool.QueryRow(ctx, `SELECT id::text, payload FROM webhook_events`).Scan(&id, &payload); err != nil {
		t.Fatal(err)
	}
	want, err := httpapi.EventRenderer{Environment: "sandbox"}.RenderEvent(id,
		&coreapi.OutboundEvent{MerchantAccountID: "default", Name: coreapi.EventBuyerCreated, Target: read, CreatedAt: read.UpdatedAt})
	if err != nil {
		t.Fatal(err)
	}
	if payload != string(want) {
		t.Errorf("event payload\n%s\nwant the row as read back\n%s", payload, want)
	}
}

// TestRecordTransitionRefusedCommitsNothing: a transition's writes go
// with the COMMIT, so a write that finds nothing to write must stop it on
// the server: the error is coreapi.ErrNotFound, as when it was checked
// apart, and nothing of the step commits.
func TestRecordTransitionRefusedCommitsNothing(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	svc := &transactions.Service{Store: postgres.TransactionsStore{DB: db}}
	const m = "default"
	gcash := "gcash"
	authorized := func() *coreapi.Transaction {
		tr, err := svc.Create(ctx, m, coreapi.NewTransaction{Amount: 900, Currency: "EUR", Method: &gcash})
		if err != nil {
			t.Fatal(err)
		}
		if tr, _, err = svc.ApplyAuthorization(ctx, m, tr.ID, coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded}); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b := authorized(), authorized()
	_, other, err := svc.ReserveCapture(ctx, m, a.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := func() (n int) {
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM transaction_events) + (SELECT count(*) FROM webhook_events)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := events()

	for _, tc := range []struct {
		name   string
		record func(tx *postgres.Tx, locked *coreapi.Transaction, now time.Time) error
	}{
		{"a capture whose id is another transaction's", func(tx *postgres.Tx, locked *coreapi.Transaction, now time.Time) error {
			next, ev, err := locked.Advance(coreapi.Step{Operation: coreapi.OpCaptureRequested, Amount: 900, CaptureID: other.ID}, now)
			if err != nil {
				return err
			}
			c := &coreapi.Capture{OperationRecord: coreapi.OperationRecord{ID: other.ID, MerchantAccountID: m, TransactionID: b.ID,
				Amount: 900, Status: coreapi.OperationProcessing, CreatedAt: now, UpdatedAt: now}}
			return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev, Capture: c})
		}},
		{"a transaction not there", func(tx *postgres.Tx, locked *coreapi.Transaction, now time.Time) error {
			next, ev, err := locked.Advance(coreapi.Step{Operation: coreapi.OpVoidRequested}, now)
			if err != nil {
				return err
			}
			next.ID = uuid.NewString()
			return tx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev})
		}},
	} {
		err := db.InTx(ctx, func(tx *postgres.Tx) error {
			locked, now, err := tx.LockTransaction(ctx, m, b.ID)
			if err != nil {
				return err
			}
			return tc.record(tx, locked, now)
		})
		if !errors.Is(err, coreapi.ErrNotFound) {
			t.Errorf("%s: %v, want coreapi.ErrNotFound", tc.name, err)
		}
		got, err := db.Transaction(ctx, m, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != coreapi.TransactionAuthorizationSucceeded || got.CapturePendingAmount != 0 {
			t.Errorf("%s: the transaction became %s, %d pending, want authorization_succeeded, none", tc.name, got.Status, got.CapturePendingAmount)
		}
		if n := events(); n != before {
			t.Errorf("%s: %d events, want %d", tc.name, n, before)
		}
	}
}
