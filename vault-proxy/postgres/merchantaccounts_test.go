package postgres_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forwarding"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/postgres"
)

// Every kind of record the vault holds for an account is counted, only
// that account's, and a deleted network token (history, its value
// shredded) is not.
func TestMerchantAccountUsageCountsOneAccountsRecords(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	config := func(merchant string) uuid.UUID {
		c := &forwarding.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}}
		if err := db.InsertConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	authentication := func(merchant string, config uuid.UUID) {
		r.exec(`INSERT INTO forward_auth_methods (id, config_id, merchant_account_id, kind, display_name, field_keys, data_key_id, wrapped_record_key, ciphertext)
			VALUES ($1, $2, $3, 'signature', 'a', '{}', $4, '\x00', '\x00')`, uuid.New(), config, merchant, r.dk)
	}

	acmeCard := r.card("acme")
	r.card("acme")
	r.networkToken("acme", acmeCard, networktoken.StatusDeleted)
	r.networkToken("acme", acmeCard, networktoken.StatusActive)
	authentication("acme", config("acme"))
	config("acme")
	betaCard := r.card("beta")
	r.networkToken("beta", betaCard, networktoken.StatusActive)
	authentication("beta", config("beta"))

	for _, tc := range []struct {
		merchant string
		want     map[string]int64
	}{
		{"acme", map[string]int64{postgres.UsagePaymentMethods: 2, postgres.UsageNetworkTokens: 1, postgres.UsageForwardConfigs: 2, postgres.UsageForwardAuthentications: 1}},
		{"beta", map[string]int64{postgres.UsagePaymentMethods: 1, postgres.UsageNetworkTokens: 1, postgres.UsageForwardConfigs: 1, postgres.UsageForwardAuthentications: 1}},
		{"nobody", map[string]int64{postgres.UsagePaymentMethods: 0, postgres.UsageNetworkTokens: 0, postgres.UsageForwardConfigs: 0, postgres.UsageForwardAuthentications: 0}},
	} {
		t.Run(tc.merchant, func(t *testing.T) {
			got, err := db.MerchantAccountUsage(ctx, tc.merchant)
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// An account is closed only while the vault holds nothing for it; closed,
// it takes no forwarding config; reopened for a new account, it does
// again; a cancelled closure changes nothing else.
func TestCloseMerchantAccount(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	insertConfig := func(merchant string) (uuid.UUID, error) {
		c := &forwarding.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}}
		return c.ID, db.InsertConfig(ctx, c)
	}
	closeAccount := func(merchant string, want bool) {
		t.Helper()
		usage, closed, err := db.CloseMerchantAccount(ctx, merchant)
		if err != nil || closed != want || len(usage) != 4 {
			t.Fatalf("close %s = %v, %v, %v; want closed %v with every count", merchant, usage, closed, err, want)
		}
	}

	id, err := insertConfig("acme")
	if err != nil {
		t.Fatal(err)
	}
	closeAccount("acme", false) // holds a config
	if _, err := db.DeleteConfig(ctx, "acme", id); err != nil {
		t.Fatal(err)
	}
	closeAccount("acme", true)
	if _, err := insertConfig("acme"); !errors.Is(err, vaultproxy.ErrMerchantAccountClosed) {
		t.Fatalf("config for a closed account: %v, want ErrMerchantAccountClosed", err)
	}
	if _, err := insertConfig("beta"); err != nil {
		t.Fatalf("another account's config: %v", err)
	}
	closeAccount("acme", true) // again: allowed

	if err := db.CancelCloseMerchantAccount(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if n := r.count(`SELECT count(*) FROM merchant_account_closures WHERE merchant_account_id = 'acme' AND reopened_at IS NULL AND audit_floor = 0`); n != 1 {
		t.Fatal("a cancelled closure moved the account's audit trail")
	}
	if _, err := insertConfig("acme"); err != nil {
		t.Fatalf("config after the closure was cancelled: %v", err)
	}
}

// Whatever the interleaving, a closure and a config for the same account
// never both succeed: the count and the closure are one step under the
// lock the insert also takes.
func TestCloseMerchantAccountRacesAConfig(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	for i := range 40 {
		merchant := "race-" + strconv.Itoa(i)
		var wg sync.WaitGroup
		var insertErr, closeErr error
		var closed bool
		wg.Add(2)
		go func() {
			defer wg.Done()
			insertErr = db.InsertConfig(ctx, &forwarding.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}})
		}()
		go func() {
			defer wg.Done()
			_, closed, closeErr = db.CloseMerchantAccount(ctx, merchant)
		}()
		wg.Wait()
		if closeErr != nil || (insertErr != nil && !errors.Is(insertErr, vaultproxy.ErrMerchantAccountClosed)) {
			t.Fatalf("round %d: close %v, insert %v", i, closeErr, insertErr)
		}
		if closed == (insertErr == nil) {
			t.Fatalf("round %d: closed %v and config stored %v", i, closed, insertErr == nil)
		}
	}
}

// A reopened id's audit trail is the new account's: the deleted account's
// events are not listed, including one stored after the reopening that
// happened before it (an audit spool that shipped late) and one stamped
// after it by an instance whose clock ran ahead, while another account's
// trail is untouched.
func TestReopenedMerchantAccountStartsANewAuditTrail(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	event := func(merchant, request string, ago time.Duration) {
		r.exec(`INSERT INTO audit_events (occurred_at, actor, merchant_account_id, action, outcome, request_id)
			VALUES (now() - $1::interval, 'token:t', $2, 'forward', 'success', $3)`, ago.String(), merchant, request)
	}
	requests := func(merchant string) []string {
		t.Helper()
		events, err := db.AuditEvents(ctx, merchant, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range events {
			out = append(out, e.RequestID)
		}
		return out
	}

	event("acme", "old-1", time.Hour)
	event("acme", "old-2", time.Hour)
	event("acme", "old-skewed", -time.Hour)
	event("beta", "beta-1", time.Hour)
	if _, closed, err := db.CloseMerchantAccount(ctx, "acme"); err != nil || !closed {
		t.Fatalf("close: %v %v", closed, err)
	}
	if got := requests("acme"); !slices.Equal(got, []string{"old-skewed", "old-2", "old-1"}) {
		t.Fatalf("a closed account's trail = %v, want its own events", got)
	}
	if err := db.ReopenMerchantAccount(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	event("acme", "late-old", time.Minute) // happened before the reopening
	event("acme", "new-1", -time.Second)
	if got := requests("acme"); !slices.Equal(got, []string{"new-1"}) {
		t.Fatalf("the new account's trail = %v, want only its own event", got)
	}
	if err := db.ReopenMerchantAccount(ctx, "acme"); err != nil { // not closed: no change
		t.Fatal(err)
	}
	if got := requests("acme"); !slices.Equal(got, []string{"new-1"}) {
		t.Fatalf("after a second reopen the trail = %v", got)
	}
	if got := requests("beta"); !slices.Equal(got, []string{"beta-1"}) {
		t.Fatalf("another account's trail = %v", got)
	}
}
