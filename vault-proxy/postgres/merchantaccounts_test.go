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
	"github.com/payorch/shared/pagination"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forwardconfig"
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
		c := &forwardconfig.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}}
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
// it takes no forwarding config and no card, and is not reopened while
// anything is left under it; a cancelled closure changes nothing else.
func TestCloseMerchantAccount(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	insertConfig := func(merchant string) (uuid.UUID, error) {
		c := &forwardconfig.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}}
		return c.ID, db.InsertConfig(ctx, c)
	}
	attempt := uuid.New()
	closeAccount := func(merchant string, want bool) {
		t.Helper()
		usage, closed, err := db.CloseMerchantAccount(ctx, merchant, attempt)
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

	if err := r.insertCard("acme"); !errors.Is(err, vaultproxy.ErrMerchantAccountClosed) {
		t.Fatalf("card for a closed account: %v, want ErrMerchantAccountClosed", err)
	}
	if n := r.count(`SELECT count(*) FROM vaulted_cards WHERE merchant_account_id = 'acme'`) +
		r.count(`SELECT count(*) FROM audit_events WHERE merchant_account_id = 'acme'`); n != 0 {
		t.Fatalf("the refused card left %d rows", n)
	}

	// A holding left under a deleted id (stored before this check
	// existed) keeps it from being reopened, closed or not: it would pass
	// to the new account.
	stray := r.card("acme")
	usage, closed, err := db.ReopenMerchantAccount(ctx, "acme")
	if err != nil || !closed || usage[postgres.UsagePaymentMethods] != 1 {
		t.Fatalf("reopen with a card left = %v, closed %v, %v; want refused naming the card", usage, closed, err)
	}
	strayOpen := r.card("gamma")
	if usage, closed, err := db.ReopenMerchantAccount(ctx, "gamma"); err != nil || closed || usage[postgres.UsagePaymentMethods] != 1 ||
		r.count(`SELECT count(*) FROM merchant_account_closures WHERE merchant_account_id = 'gamma'`) != 0 {
		t.Fatalf("reopen of an open id with a card left = %v, closed %v, %v; want refused naming the card, nothing written", usage, closed, err)
	}
	r.exec(`DELETE FROM vaulted_cards WHERE id = ANY($1)`, []uuid.UUID{stray, strayOpen})

	if err := db.CancelCloseMerchantAccount(ctx, "acme", attempt); err != nil {
		t.Fatal(err)
	}
	if n := r.count(`SELECT count(*) FROM merchant_account_closures WHERE merchant_account_id = 'acme' AND reopened_at IS NULL AND audit_floor = 0`); n != 1 {
		t.Fatal("a cancelled closure moved the account's audit trail")
	}
	if _, err := insertConfig("acme"); err != nil {
		t.Fatalf("config after the closure was cancelled: %v", err)
	}
}

// A cancellation undoes its own attempt's closure and no other, whenever
// it arrives, and a close that arrives after its own cancellation closes
// nothing: the deletion attempt's id fences both.
func TestMerchantAccountClosureCancellationIsFenced(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	first, second, third := uuid.New(), uuid.New(), uuid.New()
	closed := func() bool {
		return r.count(`SELECT count(*) FROM merchant_account_closures WHERE merchant_account_id = 'acme' AND closed`) == 1
	}
	closeAs := func(attempt uuid.UUID) bool {
		t.Helper()
		_, ok, err := db.CloseMerchantAccount(ctx, "acme", attempt)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	cancelAs := func(attempt uuid.UUID) {
		t.Helper()
		if err := db.CancelCloseMerchantAccount(ctx, "acme", attempt); err != nil {
			t.Fatal(err)
		}
	}

	if !closeAs(first) {
		t.Fatal("the first close closed nothing")
	}
	cancelAs(second) // another attempt's cancellation
	if !closed() {
		t.Fatal("a cancellation undid another attempt's closure")
	}
	cancelAs(first)
	if closed() {
		t.Fatal("the first attempt's cancellation left its closure")
	}
	if closeAs(first) || closed() {
		t.Fatal("a close that arrived after its cancellation closed the id")
	}
	if closeAs(second) {
		t.Fatal("a close whose attempt was cancelled before it closed the id")
	}
	if !closeAs(third) {
		t.Fatal("the third attempt's close closed nothing")
	}
	cancelAs(first) // late, again
	if !closed() {
		t.Fatal("a late cancellation undid a later attempt's closure")
	}
}

// Whatever the interleaving, a closure and a holding for the same account
// (a config, a card) never both succeed: the count and the closure are one
// step under the lock the inserts also take.
func TestCloseMerchantAccountRacesAHolding(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	for _, tc := range []struct {
		name   string
		insert func(merchant string) error
	}{
		{"config", func(merchant string) error {
			return db.InsertConfig(ctx, &forwardconfig.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}})
		}},
		{"card", func(merchant string) error { return r.insertCard(merchant) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 40 {
				merchant := tc.name + "-race-" + strconv.Itoa(i)
				var wg sync.WaitGroup
				var insertErr, closeErr error
				var closed bool
				wg.Add(2)
				go func() {
					defer wg.Done()
					insertErr = tc.insert(merchant)
				}()
				go func() {
					defer wg.Done()
					_, closed, closeErr = db.CloseMerchantAccount(ctx, merchant, uuid.New())
				}()
				wg.Wait()
				if closeErr != nil || (insertErr != nil && !errors.Is(insertErr, vaultproxy.ErrMerchantAccountClosed)) {
					t.Fatalf("round %d: close %v, insert %v", i, closeErr, insertErr)
				}
				if closed == (insertErr == nil) {
					t.Fatalf("round %d: closed %v and stored %v", i, closed, insertErr == nil)
				}
			}
		})
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
		r.ship(vaultproxy.AuditEvent{OccurredAt: time.Now().Add(-ago), Actor: "token:t", MerchantAccountID: merchant,
			Action: "forward", Outcome: "success", RequestID: request})
	}
	requests := func(merchant string) []string {
		t.Helper()
		events, err := db.AuditEvents(ctx, merchant, pagination.Page{Limit: 100})
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
	if _, closed, err := db.CloseMerchantAccount(ctx, "acme", uuid.New()); err != nil || !closed {
		t.Fatalf("close: %v %v", closed, err)
	}
	if got := requests("acme"); !slices.Equal(got, []string{"old-skewed", "old-2", "old-1"}) {
		t.Fatalf("a closed account's trail = %v, want its own events", got)
	}
	if _, closed, err := db.ReopenMerchantAccount(ctx, "acme"); err != nil || closed {
		t.Fatalf("reopen: closed %v, %v", closed, err)
	}
	event("acme", "late-old", time.Minute) // happened before the reopening
	event("acme", "new-1", -time.Second)
	if got := requests("acme"); !slices.Equal(got, []string{"new-1"}) {
		t.Fatalf("the new account's trail = %v, want only its own event", got)
	}
	// An id deleted before closures existed has no closure row: reopening
	// it starts a new trail all the same.
	event("legacy", "legacy-old", time.Minute)
	if _, closed, err := db.ReopenMerchantAccount(ctx, "legacy"); err != nil || closed {
		t.Fatalf("reopen of an id never closed: closed %v, %v", closed, err)
	}
	if got := requests("legacy"); len(got) != 0 {
		t.Fatalf("the new account legacy reads %v", got)
	}
	if got := requests("beta"); !slices.Equal(got, []string{"beta-1"}) {
		t.Fatalf("another account's trail = %v", got)
	}
}

// insertCard vaults a card row for merchant as the vaulting service does,
// with its audit event.
func (r *vaultRows) insertCard(merchant string) error {
	return insertCard(r.db, r.dk, merchant)
}

// insertCard vaults a card row under data key dk through db.
func insertCard(db *postgres.DB, dk uuid.UUID, merchant string) error {
	c := &vaultproxy.VaultedCard{Token: uuid.New(), MerchantAccountID: merchant, Kind: vaultproxy.KindCard, Scheme: "visa",
		BIN: "411111", Last4: "1111", Fingerprint: "fp", Sealed: envelope.Sealed{DataKeyID: dk, WrappedKey: []byte{0}, Ciphertext: []byte{0}}}
	return db.InsertCardAudited(context.Background(), c, vaultproxy.AuditEvent{Actor: "token:t", MerchantAccountID: merchant, Action: "vault", Outcome: "success"})
}
