package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres/postgrestest"
)

// A deletion whose transaction failed is told apart from one that
// committed all the same (a commit whose answer was lost), by the id the
// deletion gives its transaction; a transaction still running is waited
// for, within the context.
func TestTransactionCommittedTellsTheDeletionsOutcome(t *testing.T) {
	db, _ := postgrestest.Open(t)
	ctx := context.Background()
	for _, id := range []string{"gone", "kept"} {
		name := "Merchant " + id
		if _, err := db.CreateMerchantAccount(ctx, coreapi.NewMerchantAccount{ID: &id, DisplayName: &name}, nil); err != nil {
			t.Fatal(err)
		}
	}

	xid, err := db.DeleteMerchantAccount(ctx, "gone", func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if committed, err := db.TransactionCommitted(ctx, xid); err != nil || !committed {
		t.Fatalf("a deletion that committed: %v, %v", committed, err)
	}

	refused := errors.New("vault-proxy refused")
	xid, err = db.DeleteMerchantAccount(ctx, "kept", func(context.Context) error { return refused })
	if !errors.Is(err, refused) || xid == "" {
		t.Fatalf("a deletion refused by its vault step: %q, %v", xid, err)
	}
	if committed, err := db.TransactionCommitted(ctx, xid); err != nil || committed {
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
	if committed, err := db.TransactionCommitted(wctx, running); !errors.Is(err, context.DeadlineExceeded) || committed {
		t.Fatalf("a transaction still running: %v, %v; want the context's deadline", committed, err)
	}
}
