package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
)

// cardMethod is a card payment method of the default merchant account
// with the token id.
func cardMethod(id string) *coreapi.PaymentMethod {
	return &coreapi.PaymentMethod{ID: id, MerchantAccountID: "default", Method: coreapi.MethodCard, Status: coreapi.StatusSucceeded,
		Scheme: "visa", Label: "1111", BIN: "411111"}
}

// givenUp counts the token's rows in given_up_tokens.
func givenUp(t *testing.T, db *postgres.DB, id string) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM given_up_tokens WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// holdToken begins a transaction that holds the token's lock, as a
// creation or GiveUpToken under way does, and runs then in it; the test
// commits it.
func holdToken(t *testing.T, db *postgres.DB, id, then string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, postgres.LockTokenSQL, postgres.LockTokenArgs(id)...); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, then, args...); err != nil {
		t.Fatal(err)
	}
	return tx
}

// waitForLockWait returns once a session of the database waits for a
// lock: the interleaving the test set up has happened.
func waitForLockWait(t *testing.T, db *postgres.DB) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var n int
		if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatal("no session came to wait for a lock")
}

// The reconciliation gives a token up only where no payment method has
// it, and a payment method is never created with a token given up: of a
// creation and a giving up that race, the one that takes the token's lock
// first wins, and the other sees it.
func TestGiveUpTokenAgainstCreation(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	vaulted := time.Now().Add(-48 * time.Hour)

	t.Run("a token a payment method has", func(t *testing.T) {
		id := postgrestest.StorePaymentMethod(t, db, cardMethod(""))
		if given, err := db.GiveUpToken(ctx, id, "default", "card", vaulted); err != nil || given {
			t.Fatalf("= %v, %v; want kept", given, err)
		}
		if givenUp(t, db, id) != 0 {
			t.Fatal("recorded as given up")
		}
	})
	t.Run("a token no payment method has", func(t *testing.T) {
		id := uuid.NewString()
		for range 2 { // twice: a run that did not get to the shred
			if given, err := db.GiveUpToken(ctx, id, "default", "card", vaulted); err != nil || !given {
				t.Fatalf("= %v, %v; want given up", given, err)
			}
		}
		if err := db.CreatePaymentMethod(ctx, cardMethod(id), nil); !errors.Is(err, coreapi.ErrTokenGivenUp) {
			t.Fatalf("creation with a given-up token: %v", err)
		}
		if err := db.TokenShredded(ctx, id); err != nil {
			t.Fatal(err)
		}
		var shredded *time.Time
		if err := db.Pool.QueryRow(ctx, `SELECT shredded_at FROM given_up_tokens WHERE id = $1`, id).Scan(&shredded); err != nil || shredded == nil {
			t.Fatalf("shredded_at %v (%v)", shredded, err)
		}
	})
	t.Run("a creation under way commits first", func(t *testing.T) {
		id := uuid.NewString()
		creating := holdToken(t, db, id, `INSERT INTO payment_methods (id, merchant_account_id, method, scheme, label) VALUES ($1, 'default', 'card', 'visa', '1111')`, id)
		given := make(chan error, 1)
		go func() {
			ok, err := db.GiveUpToken(ctx, id, "default", "card", vaulted)
			if err == nil && ok {
				err = errors.New("given up under a payment method")
			}
			given <- err
		}()
		waitForLockWait(t, db)
		if err := creating.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-given; err != nil {
			t.Fatal(err)
		}
		if givenUp(t, db, id) != 0 {
			t.Fatal("recorded as given up")
		}
	})
	t.Run("a giving up under way commits first", func(t *testing.T) {
		id := uuid.NewString()
		giving := holdToken(t, db, id, `INSERT INTO given_up_tokens (id, merchant_account_id, kind, vaulted_at) VALUES ($1, 'default', 'card', now())`, id)
		created := make(chan error, 1)
		go func() { created <- db.CreatePaymentMethod(ctx, cardMethod(id), nil) }()
		waitForLockWait(t, db)
		if err := giving.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-created; !errors.Is(err, coreapi.ErrTokenGivenUp) {
			t.Fatalf("creation: %v, want the token given up", err)
		}
		if _, err := db.PaymentMethod(ctx, "default", id); !errors.Is(err, coreapi.ErrNotFound) {
			t.Fatalf("a payment method was stored: %v", err)
		}
	})
}

// WithoutPaymentMethod keeps the tokens no payment method of any account
// has, in the order asked.
func TestWithoutPaymentMethod(t *testing.T) {
	db := postgrestest.New(t)
	held := postgrestest.StorePaymentMethod(t, db, cardMethod(""))
	free := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	got, err := db.WithoutPaymentMethod(context.Background(), []string{free[2], held, free[0], free[1]})
	if err != nil || !slices.Equal(got, []string{free[2], free[0], free[1]}) {
		t.Fatalf("= %v (%v)", got, err)
	}
	if got, err := db.WithoutPaymentMethod(context.Background(), nil); err != nil || len(got) != 0 {
		t.Fatalf("none asked: %v (%v)", got, err)
	}
}

// One reconciliation at a time, across instances (two pools on one
// database); the lock is free again once released.
func TestLockReconciliation(t *testing.T) {
	a := postgrestest.New(t)
	b := postgrestest.Open(t, a.Pool.Config().ConnString())
	ctx := context.Background()
	release, ok, err := a.LockReconciliation(ctx)
	if err != nil || !ok {
		t.Fatalf("first: %v %v", ok, err)
	}
	if _, ok, err := b.LockReconciliation(ctx); err != nil || ok {
		t.Fatalf("second instance while the first holds it: %v %v", ok, err)
	}
	release()
	again, ok, err := b.LockReconciliation(ctx)
	if err != nil || !ok {
		t.Fatalf("after the release: %v %v", ok, err)
	}
	again()
}
