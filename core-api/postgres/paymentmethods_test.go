package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/pagination"
)

func newBuyer(t *testing.T, db *postgres.DB, ext string) string {
	t.Helper()
	b, err := db.CreateBuyer(context.Background(), "default", coreapi.BuyerFields{ExternalIdentifier: coreapi.Some(ext)})
	if err != nil {
		t.Fatal(err)
	}
	return b.ID
}

func newGiftCard(t *testing.T, db *postgres.DB, buyer string) string {
	t.Helper()
	return postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodGiftCard, Scheme: "gift-card", Label: "1234", BIN: "600000", BuyerID: buyer})
}

func TestRecordUsage(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	buyer := newBuyer(t, db, "usage-buyer")
	id := newGiftCard(t, db, buyer)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

	for _, u := range []struct {
		cit bool
		at  time.Time
	}{{false, t0}, {true, t0.Add(time.Hour)}, {false, t0.Add(-time.Hour)}} { // the last one arrives out of order
		if err := db.RecordUsage(ctx, "default", id, u.cit, u.at); err != nil {
			t.Fatal(err)
		}
	}
	pm, err := db.PaymentMethod(ctx, "default", id)
	if err != nil {
		t.Fatal(err)
	}
	u := pm.Usage
	if u.UsageCount != 3 || u.CITUsageCount != 1 || !u.LastUsedAt.Equal(t0.Add(time.Hour)) || !u.CITLastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("usage = count %d last %v cit %d cit-last %v", u.UsageCount, u.LastUsedAt, u.CITUsageCount, u.CITLastUsedAt)
	}

	for name, call := range map[string]func() error{
		"other merchant": func() error { return db.RecordUsage(ctx, "other", id, false, t0) },
		"unknown id":     func() error { return db.RecordUsage(ctx, "default", uuid.NewString(), false, t0) },
		"not a uuid":     func() error { return db.RecordUsage(ctx, "default", "nope", false, t0) },
	} {
		if err := call(); !errors.Is(err, coreapi.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
}

func TestGiftCardOrder(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	buyer := newBuyer(t, db, "sort-buyer")
	other := newBuyer(t, db, "other-buyer")
	newGiftCard(t, db, other) // never listed for buyer
	a, b, c, never := newGiftCard(t, db, buyer), newGiftCard(t, db, buyer), newGiftCard(t, db, buyer), newGiftCard(t, db, buyer)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	use := func(id string, cit bool, hours int) {
		if err := db.RecordUsage(ctx, "default", id, cit, t0.Add(time.Duration(hours)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	use(a, false, 1) // a: 3 uses, last at 3h, no CIT
	use(a, false, 2)
	use(a, false, 3)
	use(b, true, 10) // b: 1 CIT use, the most recent
	use(c, true, 5)  // c: 2 CIT uses
	use(c, true, 4)

	want := map[string][]string{
		coreapi.SortLastUsedAt:    {b, c, a, never},
		coreapi.SortUsageCount:    {a, c, b, never},
		coreapi.SortCITLastUsedAt: append([]string{b, c}, sortIDs(a, never)...),
		coreapi.SortCITUsageCount: append([]string{c, b}, sortIDs(a, never)...),
	}
	for sortBy, ids := range want {
		got, err := db.GiftCards(ctx, "default", buyer, sortBy)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, g := range got {
			gotIDs = append(gotIDs, g.ID)
		}
		if len(gotIDs) != len(ids) {
			t.Fatalf("%s: got %v, want %v", sortBy, gotIDs, ids)
		}
		for i := range ids {
			if gotIDs[i] != ids[i] {
				t.Fatalf("%s: got %v, want %v", sortBy, gotIDs, ids)
			}
		}
	}
	if _, err := db.GiftCards(ctx, "default", buyer, "created_at"); err == nil {
		t.Fatal("unknown order accepted")
	}
}

// sortIDs orders ids as PostgreSQL orders uuids (ties are broken by id).
func sortIDs(x, y string) []string {
	if x < y {
		return []string{x, y}
	}
	return []string{y, x}
}

func TestDuplicatePaymentMethodAndBuyerDeletion(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	buyer := newBuyer(t, db, "dup-buyer")
	id := newGiftCard(t, db, buyer)
	err := db.CreatePaymentMethod(ctx, &coreapi.PaymentMethod{ID: id, MerchantAccountID: "default", Method: "card", Status: "succeeded", Scheme: "visa", Label: "1111"}, nil)
	var dup *coreapi.DuplicateError
	if !errors.As(err, &dup) || dup.ExistingID != id {
		t.Fatalf("second insert: %v", err)
	}
	if err := db.DeleteBuyer(ctx, "default", buyer); err != nil {
		t.Fatal(err)
	}
	pm, err := db.PaymentMethod(ctx, "default", id)
	if err != nil || pm.BuyerID != "" {
		t.Fatalf("after the buyer was deleted: %+v %v", pm, err)
	}
}

// A buyer deleted between the handler's lookup and the insert is
// ErrBuyerNotFound (a 400 naming the buyer field), not a raw foreign key
// error (a 500); nothing is stored.
func TestPaymentMethodForABuyerDeletedMeanwhile(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	buyer := newBuyer(t, db, "gone-buyer")
	if err := db.DeleteBuyer(ctx, "default", buyer); err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	err := db.CreatePaymentMethod(ctx, &coreapi.PaymentMethod{ID: id, MerchantAccountID: "default", Method: coreapi.MethodGiftCard,
		Status: coreapi.StatusSucceeded, Scheme: "gift-card", Label: "1234", BIN: "600000", BuyerID: buyer}, nil)
	if !errors.Is(err, coreapi.ErrBuyerNotFound) {
		t.Fatalf("insert for a deleted buyer: %v", err)
	}
	if _, err := db.PaymentMethod(ctx, "default", id); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("stored anyway: %v", err)
	}
}

// A record written in a merchant account that does not exist (deleted
// after the request was authorized) is ErrMerchantAccountNotFound, not a
// raw foreign key error or another record's not-found; nothing is stored.
func TestWritesInAMissingMerchantAccount(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	pm := func() *coreapi.PaymentMethod {
		return &coreapi.PaymentMethod{ID: uuid.NewString(), MerchantAccountID: "gone", Method: coreapi.MethodGiftCard,
			Status: coreapi.StatusSucceeded, Scheme: "gift-card", Label: "1234", BIN: "600000"}
	}
	for name, write := range map[string]func() error{
		"buyer": func() error {
			_, err := db.CreateBuyer(ctx, "gone", coreapi.BuyerFields{DisplayName: coreapi.Some("Ada")})
			return err
		},
		"payment method": func() error { return db.CreatePaymentMethod(ctx, pm(), nil) },
		"payment method with a mandate": func() error {
			return db.CreatePaymentMethod(ctx, pm(), &coreapi.Mandate{ID: uuid.NewString(), Connector: "mock-bank", Status: coreapi.MandateActive})
		},
	} {
		if err := write(); !errors.Is(err, coreapi.ErrMerchantAccountNotFound) {
			t.Errorf("%s: %v, want ErrMerchantAccountNotFound", name, err)
		}
	}
	for _, table := range []string{"buyers", "payment_methods", "mandates"} {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE merchant_account_id = 'gone'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows, %v", table, n, err)
		}
	}
}

// A payment method kept for a single payment is read by its id but listed
// nowhere: not among the account's, the buyer's, or the buyer's gift cards.
func TestSinglePaymentMethodsAreNotListed(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	buyer := newBuyer(t, db, "single-buyer")
	listed := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111", BuyerID: buyer})
	single := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111", BuyerID: buyer, SinglePayment: true})
	singleGift := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodGiftCard, Scheme: "gift-card", Label: "1234", BIN: "600000", BuyerID: buyer, SinglePayment: true})
	if pm, err := db.PaymentMethod(ctx, "default", single); err != nil || !pm.SinglePayment {
		t.Fatalf("read by id: %+v %v", pm, err)
	}
	ids := func(pms []coreapi.PaymentMethod, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, pm := range pms {
			out = append(out, pm.ID)
		}
		return out
	}
	for name, got := range map[string][]string{
		"account":    ids(db.ListPaymentMethods(ctx, "default", coreapi.PaymentMethodFilter{}, pagination.Page{Limit: 100})),
		"buyer":      ids(db.BuyerPaymentMethods(ctx, "default", buyer, "")),
		"gift cards": ids(db.GiftCards(ctx, "default", buyer, coreapi.SortLastUsedAt)),
	} {
		for _, id := range got {
			if id == single || id == singleGift {
				t.Errorf("%s lists a single-payment method", name)
			}
		}
		if name != "gift cards" && (len(got) != 1 || got[0] != listed) {
			t.Errorf("%s: %v, want [%s]", name, got, listed)
		}
	}
}
