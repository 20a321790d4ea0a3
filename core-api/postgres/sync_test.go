package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
)

// The sweep finds the card, direct and redirect transactions of every
// merchant account whose authorization or void has been in flight for the
// minimum age, and the redirect payments waiting for their buyer as long
// (not a direct payment waiting for its buyer, which completes it), oldest
// first, a batch at a time; not another method's (pix has its own
// expiry), not a settled one, not a young one.
func TestUnsettledTransactions(t *testing.T) {
	db := postgrestest.New(t)
	createMerchant(t, db, "other")
	ctx := context.Background()
	card := func(tx *coreapi.Transaction) { tx.PaymentMethod.Method = coreapi.MethodCard }
	first := newTransaction(t, db, "default", 100, card)
	// A bank debit whose answer was lost: the sweep looks it up too.
	debit := newTransaction(t, db, "default", 150, func(tx *coreapi.Transaction) { tx.PaymentMethod.Method = coreapi.MethodBank })
	newTransaction(t, db, "default", 200, func(tx *coreapi.Transaction) { tx.PaymentMethod.Method = coreapi.MethodPix })
	redirect := newTransaction(t, db, "default", 250, nil) // gcash
	settled := newTransaction(t, db, "default", 300, card)
	step(t, db, "default", settled.ID, coreapi.OpAuthorizationSucceeded)
	voiding := newTransaction(t, db, "default", 400, card)
	step(t, db, "default", voiding.ID, coreapi.OpAuthorizationSucceeded)
	step(t, db, "default", voiding.ID, coreapi.OpVoidRequested)
	other := newTransaction(t, db, "other", 500, card)
	waiting := newTransaction(t, db, "other", 600, nil) // gcash
	step(t, db, "other", waiting.ID, coreapi.OpApprovalRequested)
	direct := newTransaction(t, db, "other", 700, func(tx *coreapi.Transaction) { tx.PaymentMethod.Method = coreapi.MethodPayPal })
	step(t, db, "other", direct.ID, coreapi.OpApprovalRequested)
	time.Sleep(10 * time.Millisecond)

	walk := func(minAge time.Duration, batch int) []string {
		t.Helper()
		var got []string
		var after transactions.Unsettled
		for {
			found, err := db.UnsettledTransactions(ctx, minAge, after, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range found {
				got = append(got, u.MerchantAccountID+"/"+u.ID)
			}
			if len(found) < batch {
				return got
			}
			after = found[len(found)-1]
		}
	}
	want := []string{"default/" + first.ID, "default/" + debit.ID, "default/" + redirect.ID, "default/" + voiding.ID, "other/" + other.ID, "other/" + waiting.ID}
	for _, batch := range []int{1, 2, 100} {
		if got := walk(5*time.Millisecond, batch); !slices.Equal(got, want) {
			t.Fatalf("batch %d: %v, want %v", batch, got, want)
		}
	}
	if got := walk(time.Hour, 100); len(got) != 0 {
		t.Fatalf("younger than the minimum age: %v", got)
	}
}
