package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/reconcile"
	"github.com/payorch/shared/zone"
)

// vault stands in for vault-proxy's reconciliation routes (the real ones
// are tested end to end, e2e/reconcile_test.go): records in token order,
// listed by age and paged as vault-proxy pages them, and a scripted answer
// per token to a shred (nil: shredded; coreapi.ErrVaultProxyNotFound: shredded
// by someone else first).
type vault struct {
	mu       sync.Mutex
	records  []zone.VaultedRecord
	answers  map[string]error
	shredded []string
}

func (v *vault) add(merchant string, age time.Duration) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	id := uuid.NewString()
	v.records = append(v.records, zone.VaultedRecord{Type: "vaulted-record", ID: id, MerchantAccountID: merchant, Kind: "card",
		CreatedAt: time.Now().Add(-age).UTC().Format(time.RFC3339Nano)})
	slices.SortFunc(v.records, func(a, b zone.VaultedRecord) int { return strings.Compare(a.ID, b.ID) })
	return id
}

func (v *vault) VaultedRecords(_ context.Context, q coreapi.VaultedRecordsQuery) (*zone.VaultedRecordPage, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	page := &zone.VaultedRecordPage{Type: "vaulted-record-page", Items: []zone.VaultedRecord{}}
	for _, r := range v.records {
		created, _ := time.Parse(time.RFC3339Nano, r.CreatedAt)
		if r.ID <= q.After || !created.Before(q.CreatedBefore) || q.MerchantAccountID != "" && r.MerchantAccountID != q.MerchantAccountID {
			continue
		}
		if len(page.Items) == q.Limit {
			next := page.Items[q.Limit-1].ID
			page.NextAfter = &next
			break
		}
		page.Items = append(page.Items, r)
	}
	return page, nil
}

func (v *vault) ShredUnclaimed(_ context.Context, merchant, actor, token string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if actor != reconcile.Actor {
		return errors.New("shred by " + actor)
	}
	err := v.answers[token]
	if err == nil || errors.Is(err, coreapi.ErrVaultProxyNotFound) { // gone either way
		v.records = slices.DeleteFunc(v.records, func(r zone.VaultedRecord) bool { return r.ID == token && r.MerchantAccountID == merchant })
	}
	if err == nil {
		v.shredded = append(v.shredded, token)
	}
	return err
}

// shreddedAt reads the token's given_up_tokens row: whether there is one,
// and whether it says the record is shredded.
func shreddedAt(t *testing.T, db *postgres.DB, id string) (given, shredded bool) {
	t.Helper()
	var at *time.Time
	err := db.Pool.QueryRow(context.Background(), `SELECT shredded_at FROM given_up_tokens WHERE id = $1`, id).Scan(&at)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		t.Fatal(err)
	}
	return err == nil, at != nil
}

// One record's failure does not stop the others, and is retried by the
// next run; a record already gone or refused as too young by vault-proxy
// is not a failure; a payment method's record and a record within the
// grace period are not touched.
func TestRunShredsEachRecordOnItsOwn(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	v := &vault{answers: map[string]error{}}
	orphan, gone, young, failing := v.add("default", 48*time.Hour), v.add("default", 48*time.Hour), v.add("default", 48*time.Hour), v.add("default", 48*time.Hour)
	held := v.add("default", 48*time.Hour)
	fresh := v.add("default", time.Hour)
	pm := &coreapi.PaymentMethod{ID: held, MerchantAccountID: "default", Method: coreapi.MethodCard, Status: coreapi.StatusSucceeded,
		Scheme: "visa", Label: "1111", BIN: "411111"}
	if err := db.CreatePaymentMethod(ctx, pm, nil); err != nil {
		t.Fatal(err)
	}
	v.answers[gone] = coreapi.ErrVaultProxyNotFound
	v.answers[young] = coreapi.ErrVaultedRecordTooYoung
	v.answers[failing] = errors.New("vault-proxy answered 500")

	job := &reconcile.Job{Store: db, VaultProxy: v, Log: slog.New(slog.DiscardHandler), Grace: 24 * time.Hour, PageSize: 2, MaxShreds: 10}
	res, err := job.Run(ctx, reconcile.Options{})
	if err == nil || !strings.Contains(err.Error(), failing) || strings.Contains(err.Error(), orphan) {
		t.Fatalf("err = %v, want the failing token's alone", err)
	}
	if res.Checked != 5 || len(res.Unclaimed) != 4 || res.Shredded != 1 || res.Gone != 1 || res.Kept != 1 {
		t.Fatalf("result %+v", res)
	}
	if !slices.Equal(v.shredded, []string{orphan}) {
		t.Fatalf("shredded %v, want %s", v.shredded, orphan)
	}
	for _, tc := range []struct {
		id              string
		given, shredded bool
	}{{orphan, true, true}, {gone, true, true}, {young, true, false}, {failing, true, false}, {held, false, false}, {fresh, false, false}} {
		if given, shredded := shreddedAt(t, db, tc.id); given != tc.given || shredded != tc.shredded {
			t.Errorf("%s: given up %v, shredded %v; want %v, %v", tc.id, given, shredded, tc.given, tc.shredded)
		}
	}

	// The next run finishes what this one left.
	clear(v.answers)
	res, err = job.Run(ctx, reconcile.Options{})
	if err != nil || res.Shredded != 2 || !slices.Contains(v.shredded, young) || !slices.Contains(v.shredded, failing) {
		t.Fatalf("second run: %v, %+v, shredded %v", err, res, v.shredded)
	}
	if slices.Contains(v.shredded, held) || slices.Contains(v.shredded, fresh) {
		t.Fatal("shredded a payment method's record or one within the grace period")
	}
}
