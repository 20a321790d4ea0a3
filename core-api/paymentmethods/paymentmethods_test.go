package paymentmethods_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/paymentmethods"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/testsupport"
)

// fakeVaultProxy is vault-proxy's expiry writes: it records the expiries
// written, in order, runs write (when set) first at each, and fails as
// fail says (nil: never).
type fakeVaultProxy struct {
	paymentmethods.VaultProxy // Card and Delete: not called
	write                     func()
	mu                        sync.Mutex
	writes                    []string
	fail                      func(call int) error
}

func (v *fakeVaultProxy) UpdateExpiry(_ context.Context, _, _, _, expiry string) error {
	if v.write != nil {
		v.write()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.writes = append(v.writes, expiry)
	if v.fail != nil {
		return v.fail(len(v.writes) - 1)
	}
	return nil
}

// service is the payment methods service on db, with vault for vault-proxy.
func service(db *postgres.DB, vault *fakeVaultProxy) *paymentmethods.Service {
	return &paymentmethods.Service{Store: postgres.PaymentMethodsStore{DB: db}, VaultProxy: vault,
		Now: time.Now, Log: slog.New(slog.DiscardHandler)}
}

func newCard(t *testing.T, db *postgres.DB, expiry string) string {
	t.Helper()
	return postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111", BIN: "411111", ExpirationDate: expiry})
}

func newBankAccount(t *testing.T, db *postgres.DB) string {
	t.Helper()
	return postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodBank,
		Scheme: coreapi.BankSchemeBACS, Label: "6819", Country: "GB", Currency: "GBP",
		Bank: &coreapi.BankDetails{AccountHolderName: "John Smith", SortCode: "601613"}})
}

func expiryUpdate(expiry string) coreapi.PaymentMethodUpdate {
	return coreapi.PaymentMethodUpdate{ExpirationDate: coreapi.Some(expiry)}
}

// An update without an expiry never calls vault-proxy: `{}` returns the
// row as stored (updated_at included), other fields are one write.
func TestUpdatePaymentMethodWithoutExpiry(t *testing.T) {
	db := postgrestest.New(t)
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
			vault := &fakeVaultProxy{}
			svc := service(db, vault)
			pm, err := svc.Update(ctx, "default", "", id, tc.u)
			if err != nil || len(vault.writes) != 0 {
				t.Fatalf("update: %v, vault-proxy writes %q", err, vault.writes)
			}
			if pm.UpdatedAt.After(stored.UpdatedAt) != tc.changed || pm.ExpirationDate != "01/30" || pm.CreatedAt != stored.CreatedAt {
				t.Fatalf("updated %+v, stored %+v", pm, stored)
			}
			if _, err := svc.Update(ctx, "default", "", uuid.NewString(), tc.u); !errors.Is(err, coreapi.ErrNotFound) {
				t.Fatalf("update of a missing one: %v", err)
			}
		})
	}
}

// An expiry update writes vault-proxy, then the row. Whatever fails after
// the write to vault-proxy started, the row keeps its expiry and
// vault-proxy is set back to it; a client that goes away once the write
// started does not stop the update; one gone before changes nothing
// anywhere.
func TestUpdatePaymentMethodExpiry(t *testing.T) {
	dbs := postgrestest.Migrated(t)
	db := postgrestest.Open(t, dbs.CoreDSN)
	// The row refuses what vault-proxy took: a trigger stands for any
	// failure of the row's write after vault-proxy's (the CHECK of the
	// row's expiry refuses only what validation refuses first). The
	// schema is the owner's to change.
	dbs.ExecAsOwner(t, dbs.Core, `CREATE FUNCTION test_refuse_expiry() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'test: refused' USING ERRCODE = 'check_violation'; END $$;
		CREATE TRIGGER test_refuse_expiry BEFORE UPDATE ON payment_methods FOR EACH ROW
		WHEN (NEW.expiration_date = '12/39') EXECUTE FUNCTION test_refuse_expiry()`)
	refused := errors.New("vault-proxy said no")
	for _, tc := range []struct {
		name        string
		bank        bool
		expiry      string
		fail        func(call int) error
		leave       string // "before" the update, or "during" the write to vault-proxy
		wantErr     func(error) bool
		wantWrites  []string
		wantInStore string
	}{
		{name: "it works", expiry: "02/31",
			wantErr: func(err error) bool { return err == nil }, wantWrites: []string{"02/31"}, wantInStore: "02/31"},
		{name: "vault-proxy refuses", expiry: "02/31", fail: func(call int) error {
			if call == 0 {
				return refused
			}
			return nil
		}, wantErr: func(err error) bool {
			var ve *coreapi.VaultProxyExpiryError
			return errors.Is(err, refused) && !errors.As(err, &ve)
		}, wantWrites: []string{"02/31", "01/30"}, wantInStore: "01/30"},
		{name: "the row refuses after vault-proxy took it", expiry: "12/39", // the trigger refuses it
			wantErr:    func(err error) bool { var pe *pgconn.PgError; return errors.As(err, &pe) && pe.Code == "23514" },
			wantWrites: []string{"12/39", "01/30"}, wantInStore: "01/30"},
		{name: "vault-proxy cannot be set back either", expiry: "02/31", fail: func(int) error { return refused },
			wantErr: func(err error) bool {
				var ve *coreapi.VaultProxyExpiryError
				return errors.As(err, &ve) && errors.Is(err, refused) && errors.Is(ve.Restore, refused)
			}, wantWrites: []string{"02/31", "01/30"}, wantInStore: "01/30"},
		{name: "the client goes away during the write to vault-proxy", expiry: "02/31", leave: "during",
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
			vault := &fakeVaultProxy{fail: tc.fail}
			switch tc.leave {
			case "before":
				cancel()
			case "during":
				vault.write = cancel
			}
			_, err := service(db, vault).Update(ctx, "default", "", id, expiryUpdate(tc.expiry))
			if !tc.wantErr(err) {
				t.Fatalf("update: %v", err)
			}
			if !slices.Equal(vault.writes, tc.wantWrites) {
				t.Fatalf("vault-proxy writes %q, want %q", vault.writes, tc.wantWrites)
			}
			if pm, err := db.PaymentMethod(context.Background(), "default", id); err != nil || pm.ExpirationDate != tc.wantInStore {
				t.Fatalf("stored %+v %v, want expiry %q", pm, err, tc.wantInStore)
			}
		})
	}
}

// Expiry updates of one card take turns from before their write to
// vault-proxy to after their commit, in one process and across two (two
// pools on one database): the second reads the row only once the first
// committed, so vault-proxy sees the writes in the order the row does.
func TestUpdatePaymentMethodExpiryTakesTurns(t *testing.T) {
	dbs := postgrestest.Migrated(t)
	a := postgrestest.Open(t, dbs.CoreDSN)
	for _, tc := range []struct {
		name string
		b    *postgres.DB
	}{
		{"one instance", a},
		{"two instances", postgrestest.Open(t, dbs.CoreDSN)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			id := newCard(t, a, "01/30")
			var firstWriting atomic.Bool
			inVault, release := make(chan struct{}), make(chan struct{})
			firstDone := make(chan error, 1)
			go func() {
				_, err := service(a, &fakeVaultProxy{write: func() {
					firstWriting.Store(true)
					close(inVault)
					<-release
					firstWriting.Store(false)
				}}).Update(ctx, "default", "", id, expiryUpdate("02/31"))
				firstDone <- err
			}()
			<-inVault
			var overlapped bool
			var seen string
			secondDone := make(chan error, 1)
			go func() {
				_, err := service(tc.b, &fakeVaultProxy{write: func() {
					// The second holds the row: what it read is what was committed.
					overlapped = firstWriting.Load()
					if pm, err := a.PaymentMethod(ctx, "default", id); err == nil {
						seen = pm.ExpirationDate
					}
				}}).Update(ctx, "default", "", id, expiryUpdate("03/32"))
				secondDone <- err
			}()
			time.Sleep(100 * time.Millisecond) // time for the second to overtake, were it able to
			close(release)
			if err := <-firstDone; err != nil {
				t.Fatal(err)
			}
			if err := <-secondDone; err != nil || overlapped || seen != "02/31" {
				t.Fatalf("second update: %v; wrote vault-proxy during the first: %v; saw expiry %q, want the first's", err, overlapped, seen)
			}
			if pm, err := a.PaymentMethod(ctx, "default", id); err != nil || pm.ExpirationDate != "03/32" {
				t.Fatalf("stored %+v %v", pm, err)
			}
		})
	}
}

// Expiry updates of as many cards as the pool has connections, all stuck
// in a slow vault-proxy, leave connections for other requests: at most
// half the pool waits in calls to vault-proxy.
func TestStuckExpiryUpdatesLeaveConnections(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	n := int(db.Pool.Config().MaxConns)
	release := make(chan struct{})
	var inVault atomic.Int32
	svc := service(db, &fakeVaultProxy{write: func() {
		inVault.Add(1)
		<-release
	}})
	done := make(chan error, n)
	for i := range n {
		id := newCard(t, db, "01/30")
		go func() {
			_, err := svc.Update(ctx, "default", "", id, expiryUpdate(fmt.Sprintf("%02d/31", i%12+1)))
			done <- err
		}()
	}
	testsupport.Eventually(t, "updates reach the call to vault-proxy", func() bool { return inVault.Load() > 0 })
	time.Sleep(100 * time.Millisecond) // time for the others to take connections, were they able to
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := db.MerchantAccountExists(qctx, "default"); err != nil {
		t.Fatalf("another request with %d expiry updates stuck in vault-proxy (%d in a call to it): %v", n, inVault.Load(), err)
	}
	if got := int(inVault.Load()); got > n/2 {
		t.Fatalf("%d updates in a call to vault-proxy at once, want at most %d", got, n/2)
	}
	close(release)
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
