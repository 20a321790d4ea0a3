package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/testsupport"
)

func openPaymentMethodsDB(t *testing.T) *postgres.DB {
	t.Helper()
	dbs := testsupport.NewTestDatabases(t)
	db, err := postgres.Open(context.Background(), dbs.CoreDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

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
	pm := &coreapi.PaymentMethod{ID: uuid.NewString(), MerchantAccountID: "default", Method: coreapi.MethodGiftCard,
		Status: coreapi.StatusSucceeded, Scheme: "gift-card", Label: "1234", BIN: "600000", BuyerID: buyer}
	if err := db.CreatePaymentMethod(context.Background(), pm, nil); err != nil {
		t.Fatal(err)
	}
	return pm.ID
}

func TestRecordUsage(t *testing.T) {
	db := openPaymentMethodsDB(t)
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
	db := openPaymentMethodsDB(t)
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
	db := openPaymentMethodsDB(t)
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
	db := openPaymentMethodsDB(t)
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

// An update runs prepare with the row as it was, and prepare's error leaves
// the row unchanged.
func TestUpdatePaymentMethodPrepare(t *testing.T) {
	db := openPaymentMethodsDB(t)
	ctx := context.Background()
	id := newGiftCard(t, db, newBuyer(t, db, "prepare-buyer"))
	refuse := errors.New("the vault said no")
	u := coreapi.PaymentMethodUpdate{SchemeTransactionID: coreapi.Some("123456789012345")}
	var seen *coreapi.PaymentMethod
	if _, err := db.UpdatePaymentMethod(ctx, "default", id, u, func(before *coreapi.PaymentMethod) error {
		seen = before
		return refuse
	}); !errors.Is(err, refuse) {
		t.Fatalf("update with a refusing prepare: %v", err)
	}
	if seen == nil || seen.ID != id || seen.SchemeTransactionID != nil {
		t.Fatalf("prepare saw %+v", seen)
	}
	if pm, err := db.PaymentMethod(ctx, "default", id); err != nil || pm.SchemeTransactionID != nil {
		t.Fatalf("changed though prepare refused: %+v %v", pm, err)
	}
	pm, err := db.UpdatePaymentMethod(ctx, "default", id, u, nil)
	if err != nil || pm.SchemeTransactionID == nil || *pm.SchemeTransactionID != "123456789012345" {
		t.Fatalf("update: %+v %v", pm, err)
	}
	if _, err := db.UpdatePaymentMethod(ctx, "default", uuid.NewString(), u, nil); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("update of a missing one: %v", err)
	}
}

// An update that another one overtakes between prepare and its write reads
// the row again and runs prepare again (so the last write to the row also
// made the last change in the vault); one overtaken every time gives up
// with ErrConflict, having changed nothing.
func TestUpdatePaymentMethodOvertaken(t *testing.T) {
	db := openPaymentMethodsDB(t)
	ctx := context.Background()
	id := newGiftCard(t, db, newBuyer(t, db, "overtaken-buyer"))
	other := coreapi.PaymentMethodUpdate{SchemeTransactionID: coreapi.Some("other")}
	mine := coreapi.PaymentMethodUpdate{SchemeTransactionID: coreapi.Some("mine")}

	var seen []string
	pm, err := db.UpdatePaymentMethod(ctx, "default", id, mine, func(before *coreapi.PaymentMethod) error {
		v := ""
		if before.SchemeTransactionID != nil {
			v = *before.SchemeTransactionID
		}
		seen = append(seen, v)
		if len(seen) == 1 { // another update lands between this read and the write
			if _, err := db.UpdatePaymentMethod(ctx, "default", id, other, nil); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err != nil || pm.SchemeTransactionID == nil || *pm.SchemeTransactionID != "mine" {
		t.Fatalf("overtaken once: %+v %v", pm, err)
	}
	if len(seen) != 2 || seen[0] != "" || seen[1] != "other" {
		t.Fatalf("prepare saw %q, want the row before and after the other update", seen)
	}

	calls := 0
	_, err = db.UpdatePaymentMethod(ctx, "default", id, mine, func(*coreapi.PaymentMethod) error {
		calls++
		_, err := db.UpdatePaymentMethod(ctx, "default", id, other, nil)
		return err
	})
	if !errors.Is(err, coreapi.ErrConflict) || calls != 10 {
		t.Fatalf("overtaken every time: %v after %d attempts", err, calls)
	}
	if pm, err := db.PaymentMethod(ctx, "default", id); err != nil || *pm.SchemeTransactionID != "other" {
		t.Fatalf("after giving up: %+v %v", pm, err)
	}
}
