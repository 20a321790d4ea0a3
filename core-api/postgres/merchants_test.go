package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
)

// A deletion whose transaction failed is told apart from one that
// committed all the same (a commit whose answer was lost), by the id the
// deletion gives its transaction; a transaction still running is waited
// for, within the context.
func TestTxCommittedTellsTheDeletionsOutcome(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	for _, id := range []string{"gone", "kept"} {
		name := "Merchant " + id
		if err := db.InTx(ctx, func(tx *postgres.Tx) error {
			_, err := tx.CreateMerchantAccount(ctx, coreapi.NewMerchantAccount{ID: &id, DisplayName: &name})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// A deletion as the merchants service makes one, its vault-proxy step
	// answering step.
	deletion := func(id string, step error) (txID string, err error) {
		err = db.InTx(ctx, func(tx *postgres.Tx) error {
			if err := tx.LockMerchantAccount(ctx, id); err != nil {
				return err
			}
			var err error
			if txID, err = tx.TxID(ctx); err != nil {
				return err
			}
			if step != nil {
				return step
			}
			return tx.DeleteMerchantAccount(ctx, id)
		})
		return txID, err
	}

	txID, err := deletion("gone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if committed, err := db.TxCommitted(ctx, txID); err != nil || !committed {
		t.Fatalf("a deletion that committed: %v, %v", committed, err)
	}

	refused := errors.New("vault-proxy refused")
	txID, err = deletion("kept", refused)
	if !errors.Is(err, refused) || txID == "" {
		t.Fatalf("a deletion refused by its vault step: %q, %v", txID, err)
	}
	if committed, err := db.TxCommitted(ctx, txID); err != nil || committed {
		t.Fatalf("a deletion rolled back: %v, %v", committed, err)
	}

	// A transaction still running: the wait ends with the context.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var running string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if committed, err := db.TxCommitted(wctx, running); !errors.Is(err, context.DeadlineExceeded) || committed {
		t.Fatalf("a transaction still running: %v, %v; want the context's deadline", committed, err)
	}
}
