package postgres_test

import (
	"context"
	"errors"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
)

// InTx, the store's unit of work, commits what fn wrote when fn returns
// nil, and nothing when fn fails or panics. fn may commit itself under a
// context of its own, which a caller gone meanwhile does not stop.
func TestInTx(t *testing.T) {
	db := postgrestest.New(t)
	refused := errors.New("refused")
	for _, tc := range []struct {
		id      string
		then    func(tx *postgres.Tx, leave context.CancelFunc) error // after fn's write
		wantErr error
		stored  bool
	}{
		{"fn-returns-nil", func(*postgres.Tx, context.CancelFunc) error { return nil }, nil, true},
		{"fn-fails", func(*postgres.Tx, context.CancelFunc) error { return refused }, refused, false},
		{"fn-commits-itself", func(tx *postgres.Tx, leave context.CancelFunc) error {
			leave()
			return tx.Commit(context.Background())
		}, nil, true},
		{"fn-panics", func(*postgres.Tx, context.CancelFunc) error { panic(refused) }, refused, false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			name := "Merchant " + tc.id
			err := func() (err error) {
				defer func() {
					if v := recover(); v != nil {
						err = v.(error)
					}
				}()
				return db.InTx(ctx, func(tx *postgres.Tx) error {
					if _, err := tx.CreateMerchantAccount(ctx, coreapi.NewMerchantAccount{ID: &tc.id, DisplayName: &name}); err != nil {
						return err
					}
					return tc.then(tx, leave)
				})
			}()
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("InTx: %v, want %v", err, tc.wantErr)
			}
			_, err = db.FindMerchantAccount(context.Background(), tc.id)
			if stored := err == nil; stored != tc.stored || !stored && !errors.Is(err, coreapi.ErrNotFound) {
				t.Fatalf("stored: %v (%v), want %v", stored, err, tc.stored)
			}
			if n := db.Pool.Stat().AcquiredConns(); n != 0 {
				t.Fatalf("%d connections still held", n)
			}
		})
	}
}

// A transaction whose first round trip failed before the server began it
// (a statement PostgreSQL cannot prepare: nothing of the round trip ran,
// its BEGIN included) is over: a query after it fails with the same
// error rather than run outside any transaction, where its write would
// stay however fn ends.
func TestInTxFailedBeforeBeginRunsNothingMore(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	const id = "after-a-failed-begin"
	err := db.InTx(ctx, func(tx *postgres.Tx) error {
		first := tx.Exec(ctx, `SELEKT 1`)
		if first == nil {
			t.Fatal("a statement that cannot be prepared ran")
		}
		rows, err := tx.Query(ctx, `INSERT INTO merchant_accounts (id, display_name) VALUES ($1, $1) RETURNING id`, id)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if !errors.Is(err, first) {
			t.Errorf("query after the failed round trip: %v, want the round trip's error %v", err, first)
		}
		return first
	})
	if err == nil {
		t.Fatal("InTx succeeded")
	}
	if _, err := db.FindMerchantAccount(ctx, id); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("the query's write: %v, want none (not found)", err)
	}
}
