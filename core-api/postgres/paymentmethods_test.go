package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/testsupport"
)

func openPaymentMethodsDB(t *testing.T) *postgres.DB {
	t.Helper()
	db, _ := postgrestest.Open(t)
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
	return storePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodGiftCard, Scheme: "gift-card", Label: "1234", BIN: "600000", BuyerID: buyer})
}

// storePaymentMethod stores pm as a succeeded payment method of the default
// merchant account, under a new id, and returns the id.
func storePaymentMethod(t *testing.T, db *postgres.DB, pm *coreapi.PaymentMethod) string {
	t.Helper()
	pm.ID, pm.MerchantAccountID, pm.Status = uuid.NewString(), "default", coreapi.StatusSucceeded
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

// fakeVault is a postgres.SetVaultExpiry that records the expiries
// written, in order, and fails as fail says (nil: never).
type fakeVault struct {
	mu     sync.Mutex
	writes []string
	fail   func(call int) error
}

func (v *fakeVault) set(_ context.Context, _ *coreapi.PaymentMethod, expiry string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.writes = append(v.writes, expiry)
	if v.fail != nil {
		return v.fail(len(v.writes) - 1)
	}
	return nil
}

func newCard(t *testing.T, db *postgres.DB, expiry string) string {
	t.Helper()
	return storePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111", BIN: "411111", ExpirationDate: expiry})
}

func newBankAccount(t *testing.T, db *postgres.DB) string {
	t.Helper()
	pm := &coreapi.PaymentMethod{ID: uuid.NewString(), MerchantAccountID: "default", Method: coreapi.MethodBank,
		Status: coreapi.StatusSucceeded, Scheme: coreapi.BankSchemeBACS, Label: "6819", Country: "GB", Currency: "GBP",
		Bank: &coreapi.BankDetails{AccountHolderName: "John Smith", SortCode: "601613"}}
	if err := db.CreatePaymentMethod(context.Background(), pm, nil); err != nil {
		t.Fatal(err)
	}
	return pm.ID
}

func expiryUpdate(expiry string) coreapi.PaymentMethodUpdate {
	return coreapi.PaymentMethodUpdate{ExpirationDate: coreapi.Some(expiry)}
}

// An update without an expiry never calls the vault: `{}` returns the row
// as stored (updated_at included), other fields are one write.
func TestUpdatePaymentMethodWithoutExpiry(t *testing.T) {
	db := openPaymentMethodsDB(t)
	ctx := context.Background()
	id := newCard(t, db, "01/30")
	stored, err := db.PaymentMethod(ctx, "default", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		u       coreapi.PaymentMethodUpdate
		changed bool
	}{
		{"nothing", coreapi.PaymentMethodUpdate{}, false},
		{"scheme_transaction_id", coreapi.PaymentMethodUpdate{SchemeTransactionID: coreapi.Some("123456789012345")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vault := &fakeVault{}
			pm, err := db.UpdatePaymentMethod(ctx, "default", id, tc.u, vault.set)
			if err != nil || len(vault.writes) != 0 {
				t.Fatalf("update: %v, vault writes %q", err, vault.writes)
			}
			if pm.UpdatedAt.After(stored.UpdatedAt) != tc.changed || pm.ExpirationDate != "01/30" || pm.CreatedAt != stored.CreatedAt {
				t.Fatalf("updated %+v, stored %+v", pm, stored)
			}
			if _, err := db.UpdatePaymentMethod(ctx, "default", uuid.NewString(), tc.u, vault.set); !errors.Is(err, coreapi.ErrNotFound) {
				t.Fatalf("update of a missing one: %v", err)
			}
		})
	}
}

// An expiry update writes the vault, then the row. Whatever fails after
// the vault write started, the row keeps its expiry and the vault is set
// back to it; a client that goes away once the vault write started does
// not stop the update; one gone before changes nothing anywhere.
func TestUpdatePaymentMethodExpiry(t *testing.T) {
	db := openPaymentMethodsDB(t)
	refused := errors.New("the vault said no")
	for _, tc := range []struct {
		name        string
		bank        bool
		expiry      string
		fail        func(call int) error
		leave       string // "before" the update, or "during" the vault write
		wantErr     func(error) bool
		wantWrites  []string
		wantInStore string
	}{
		{name: "it works", expiry: "02/31",
			wantErr: func(err error) bool { return err == nil }, wantWrites: []string{"02/31"}, wantInStore: "02/31"},
		{name: "the vault refuses", expiry: "02/31", fail: func(call int) error {
			if call == 0 {
				return refused
			}
			return nil
		}, wantErr: func(err error) bool {
			var ve *postgres.VaultExpiryError
			return errors.Is(err, refused) && !errors.As(err, &ve)
		}, wantWrites: []string{"02/31", "01/30"}, wantInStore: "01/30"},
		{name: "the row refuses after the vault took it", expiry: "13/31", // the row's CHECK refuses month 13
			wantErr:    func(err error) bool { var pe *pgconn.PgError; return errors.As(err, &pe) && pe.Code == "23514" },
			wantWrites: []string{"13/31", "01/30"}, wantInStore: "01/30"},
		{name: "the vault cannot be set back either", expiry: "02/31", fail: func(int) error { return refused },
			wantErr: func(err error) bool {
				var ve *postgres.VaultExpiryError
				return errors.As(err, &ve) && errors.Is(err, refused) && errors.Is(ve.Restore, refused)
			}, wantWrites: []string{"02/31", "01/30"}, wantInStore: "01/30"},
		{name: "the client goes away during the vault write", expiry: "02/31", leave: "during",
			wantErr: func(err error) bool { return err == nil }, wantWrites: []string{"02/31"}, wantInStore: "02/31"},
		{name: "the client is gone before", expiry: "02/31", leave: "before",
			wantErr: func(err error) bool { return errors.Is(err, context.Canceled) }, wantInStore: "01/30"},
		{name: "a bank account", bank: true, expiry: "02/31",
			wantErr: func(err error) bool { var ve *coreapi.ValidationError; return errors.As(err, &ve) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			id := newCard(t, db, "01/30")
			if tc.bank {
				id = newBankAccount(t, db)
			}
			vault := &fakeVault{fail: tc.fail}
			set := vault.set
			switch tc.leave {
			case "before":
				cancel()
			case "during":
				set = func(ctx context.Context, pm *coreapi.PaymentMethod, expiry string) error {
					cancel()
					return vault.set(ctx, pm, expiry)
				}
			}
			_, err := db.UpdatePaymentMethod(ctx, "default", id, expiryUpdate(tc.expiry), set)
			if !tc.wantErr(err) {
				t.Fatalf("update: %v", err)
			}
			if !slices.Equal(vault.writes, tc.wantWrites) {
				t.Fatalf("vault writes %q, want %q", vault.writes, tc.wantWrites)
			}
			if pm, err := db.PaymentMethod(context.Background(), "default", id); err != nil || pm.ExpirationDate != tc.wantInStore {
				t.Fatalf("stored %+v %v, want expiry %q", pm, err, tc.wantInStore)
			}
		})
	}
}

// Expiry updates of one card take turns from before their vault write to
// after their commit, in one process and across two (two pools on one
// database): the second reads the row only once the first committed, so
// the vault sees the writes in the order the row does.
func TestUpdatePaymentMethodExpiryTakesTurns(t *testing.T) {
	a, dbs := postgrestest.Open(t)
	for _, tc := range []struct {
		name string
		b    *postgres.DB
	}{
		{"one instance", a},
		{"two instances", postgrestest.OpenDSN(t, dbs.CoreDSN)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			id := newCard(t, a, "01/30")
			var firstWriting atomic.Bool
			inVault, release := make(chan struct{}), make(chan struct{})
			firstDone := make(chan error, 1)
			go func() {
				_, err := a.UpdatePaymentMethod(ctx, "default", id, expiryUpdate("02/31"), func(context.Context, *coreapi.PaymentMethod, string) error {
					firstWriting.Store(true)
					close(inVault)
					<-release
					firstWriting.Store(false)
					return nil
				})
				firstDone <- err
			}()
			<-inVault
			var overlapped bool
			var seen string
			secondDone := make(chan error, 1)
			go func() {
				_, err := tc.b.UpdatePaymentMethod(ctx, "default", id, expiryUpdate("03/32"), func(_ context.Context, pm *coreapi.PaymentMethod, _ string) error {
					overlapped, seen = firstWriting.Load(), pm.ExpirationDate
					return nil
				})
				secondDone <- err
			}()
			time.Sleep(100 * time.Millisecond) // time for the second to overtake, were it able to
			close(release)
			if err := <-firstDone; err != nil {
				t.Fatal(err)
			}
			if err := <-secondDone; err != nil || overlapped || seen != "02/31" {
				t.Fatalf("second update: %v; wrote the vault during the first: %v; saw expiry %q, want the first's", err, overlapped, seen)
			}
			if pm, err := a.PaymentMethod(ctx, "default", id); err != nil || pm.ExpirationDate != "03/32" {
				t.Fatalf("stored %+v %v", pm, err)
			}
		})
	}
}

// Expiry updates of as many cards as the pool has connections, all stuck
// in a slow vault-proxy, leave connections for other requests: at most
// half the pool waits in vault calls.
func TestStuckExpiryUpdatesLeaveConnections(t *testing.T) {
	db := openPaymentMethodsDB(t)
	ctx := context.Background()
	n := int(db.Pool.Config().MaxConns)
	release := make(chan struct{})
	var inVault atomic.Int32
	done := make(chan error, n)
	for i := range n {
		id := newCard(t, db, "01/30")
		go func() {
			_, err := db.UpdatePaymentMethod(ctx, "default", id, expiryUpdate(fmt.Sprintf("%02d/31", i%12+1)), func(context.Context, *coreapi.PaymentMethod, string) error {
				inVault.Add(1)
				<-release
				return nil
			})
			done <- err
		}()
	}
	testsupport.Eventually(t, "updates reach the vault call", func() bool { return inVault.Load() > 0 })
	time.Sleep(100 * time.Millisecond) // time for the others to take connections, were they able to
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := db.MerchantAccountExists(qctx, "default"); err != nil {
		t.Fatalf("another request with %d expiry updates stuck in the vault (%d in a vault call): %v", n, inVault.Load(), err)
	}
	if got := int(inVault.Load()); got > n/2 {
		t.Fatalf("%d updates in a vault call at once, want at most %d", got, n/2)
	}
	close(release)
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A record written in a merchant account that does not exist (deleted
// after the request was authorized) is ErrMerchantAccountNotFound, not a
// raw foreign key error or another record's not-found; nothing is stored.
func TestWritesInAMissingMerchantAccount(t *testing.T) {
	db := openPaymentMethodsDB(t)
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
		if err := write(); !errors.Is(err, postgres.ErrMerchantAccountNotFound) {
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
