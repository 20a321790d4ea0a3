package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/shared/testsupport"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// vaultRows writes rows straight into the vault database, with placeholder
// ciphertext under one data key: for tests of the SQL, not of the crypto.
type vaultRows struct {
	t   *testing.T
	db  *postgres.DB
	dbs *testsupport.Databases
	dk  uuid.UUID
}

func newVaultRows(t *testing.T) *vaultRows {
	t.Helper()
	db, dbs := postgrestest.Open(t)
	r := &vaultRows{t: t, db: db, dbs: dbs, dk: uuid.New()}
	if err := db.SaveDataKey(context.Background(), r.dk, "vault:v1:wrapped"); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *vaultRows) exec(sql string, args ...any) {
	r.t.Helper()
	if _, err := r.db.Pool.Exec(context.Background(), sql, args...); err != nil {
		r.t.Fatal(err)
	}
}

func (r *vaultRows) count(sql string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *vaultRows) card(merchant string) uuid.UUID {
	r.t.Helper()
	id := uuid.New()
	r.exec(`INSERT INTO vaulted_cards (id, merchant_account_id, kind, data_key_id, wrapped_record_key, ciphertext, fingerprint, scheme, bin, last4)
		VALUES ($1, $2, 'card', $3, '\x00', '\x00', 'fp', 'visa', '411111', '1111')`, id, merchant, r.dk)
	return id
}

// liveToken is an active token of the card, as InsertNetworkToken takes it.
func (r *vaultRows) liveToken(merchant string, pm uuid.UUID) *networktoken.NetworkToken {
	r.t.Helper()
	var exp card.Expiry
	if err := exp.UnmarshalText([]byte("12/30")); err != nil {
		r.t.Fatal(err)
	}
	return &networktoken.NetworkToken{
		ID: uuid.Must(uuid.NewV7()), MerchantAccountID: merchant, PaymentMethodID: pm, Provider: "sandbox", Scheme: "visa",
		Reference: "ref", Status: networktoken.StatusActive, Expiry: exp, Last4: "4242",
		Sealed: envelope.Sealed{DataKeyID: r.dk, WrappedKey: []byte{0}, Ciphertext: []byte{0}},
	}
}

// storedToken stores a live token of the card through InsertNetworkToken.
func (r *vaultRows) storedToken(merchant string, pm uuid.UUID) *networktoken.NetworkToken {
	r.t.Helper()
	nt := r.liveToken(merchant, pm)
	if ok, err := r.db.InsertNetworkToken(context.Background(), nt); err != nil || !ok {
		r.t.Fatalf("insert: %v %v", ok, err)
	}
	return nt
}

func (r *vaultRows) networkToken(merchant string, pm uuid.UUID, status networktoken.Status) {
	r.t.Helper()
	nt := r.liveToken(merchant, pm)
	sealed := []any{nt.Sealed.DataKeyID, nt.Sealed.WrappedKey, nt.Sealed.Ciphertext}
	if status == networktoken.StatusDeleted {
		sealed = []any{nil, nil, nil}
	}
	r.exec(`INSERT INTO network_tokens (id, merchant_account_id, payment_method_id, provider, scheme, tsp_reference, status,
		expiration_date, last4, data_key_id, wrapped_record_key, ciphertext)
		VALUES ($1, $2, $3, 'sandbox', 'visa', 'ref', $4, '12/30', '4242', $5, $6, $7)`,
		append([]any{nt.ID, merchant, pm, string(status)}, sealed...)...)
}

// rowsOf counts the card's row and its network tokens' rows.
func (r *vaultRows) rowsOf(pm uuid.UUID) (cards, tokens int) {
	r.t.Helper()
	return r.count(`SELECT count(*) FROM vaulted_cards WHERE id = $1`, pm),
		r.count(`SELECT count(*) FROM network_tokens WHERE payment_method_id = $1`, pm)
}

// waitForLockWaits returns once n sessions of the test database wait for
// a lock: the interleaving a test set up has happened.
func (r *vaultRows) waitForLockWaits(n int) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if r.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) >= n {
			return
		}
	}
	r.t.Fatalf("%d sessions never came to wait for a lock", n)
}

// A card is never deleted while it has a network token that is not deleted
// at its TSP, and the database refuses it too rather than take the token's
// row with the card; deleted tokens' rows go with it.
func TestDeleteCardKeepsLiveNetworkTokens(t *testing.T) {
	cases := []struct {
		name     string
		tokens   []networktoken.Status
		merchant string
		want     error
		kept     int // tokens rows left
	}{
		{"no tokens", nil, "m1", nil, 0},
		{"deleted tokens", []networktoken.Status{networktoken.StatusDeleted, networktoken.StatusDeleted}, "m1", nil, 0},
		{"an active token", []networktoken.Status{networktoken.StatusDeleted, networktoken.StatusActive}, "m1", vaultproxy.ErrLiveNetworkToken, 2},
		{"a suspended token", []networktoken.Status{networktoken.StatusSuspended}, "m1", vaultproxy.ErrLiveNetworkToken, 1},
		{"another merchant account's card", []networktoken.Status{networktoken.StatusDeleted}, "m2", vaultproxy.ErrNotFound, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newVaultRows(t)
			pm := r.card("m1")
			for _, s := range tc.tokens {
				r.networkToken("m1", pm, s)
			}
			err := r.db.DeleteCard(context.Background(), tc.merchant, pm)
			if !errors.Is(err, tc.want) {
				t.Fatalf("DeleteCard: %v, want %v", err, tc.want)
			}
			wantCards := 1
			if tc.want == nil {
				wantCards = 0
			}
			if cards, tokens := r.rowsOf(pm); cards != wantCards || tokens != tc.kept {
				t.Fatalf("%d card rows and %d token rows left, want %d and %d", cards, tokens, wantCards, tc.kept)
			}
			if tc.kept == 0 {
				return
			}
			// The schema refuses on its own, whatever code deletes the card.
			_, err = r.db.Pool.Exec(context.Background(), `DELETE FROM vaulted_cards WHERE id = $1`, pm)
			if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "23503" {
				t.Fatalf("a card with network token rows deleted by hand: %v", err)
			}
		})
	}
}

// A network token stored while its card is being deleted: the card row's
// FOR UPDATE lock in DeleteCard and the KEY SHARE lock of the insert's
// foreign key check order the two. An insert whose check got in first is
// committed, and seen, before the deletion goes on, which keeps the card;
// one that comes after the lock fails once the card is gone, and says so
// (its provisioning then deletes the token at the TSP).
func TestDeleteCardRacingANetworkTokenInsert(t *testing.T) {
	cases := []struct {
		name string
		// hold takes, in tx, the lock that stops DeleteCard where the case
		// needs it.
		hold       func(ctx context.Context, tx pgx.Tx, pm uuid.UUID) error
		deleteErr  error
		insertErr  error
		cardsLeft  int
		tokensLeft int
	}{
		{
			// A stand-in for an insert whose foreign key check holds the
			// card's KEY SHARE lock: DeleteCard waits for it at FOR UPDATE,
			// and the real insert, whose lock does not conflict, commits
			// meanwhile.
			name: "the insert's key share lock first",
			hold: func(ctx context.Context, tx pgx.Tx, pm uuid.UUID) error {
				_, err := tx.Exec(ctx, `SELECT FROM vaulted_cards WHERE id = $1 FOR KEY SHARE`, pm)
				return err
			},
			deleteErr: vaultproxy.ErrLiveNetworkToken, cardsLeft: 1, tokensLeft: 2,
		},
		{
			// DeleteCard holds the card's lock and waits at the card's
			// deleted token row, locked here; the insert's foreign key
			// check waits for DeleteCard.
			name: "the deletion's lock first",
			hold: func(ctx context.Context, tx pgx.Tx, pm uuid.UUID) error {
				_, err := tx.Exec(ctx, `SELECT FROM network_tokens WHERE payment_method_id = $1 FOR UPDATE`, pm)
				return err
			},
			insertErr: vaultproxy.ErrNotFound,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newVaultRows(t)
			pm := r.card("m1")
			r.networkToken("m1", pm, networktoken.StatusDeleted)
			tx, err := r.db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if err := tc.hold(ctx, tx, pm); err != nil {
				t.Fatal(err)
			}
			deleted := make(chan error, 1)
			go func() { deleted <- r.db.DeleteCard(ctx, "m1", pm) }()
			r.waitForLockWaits(1)
			inserted := make(chan error, 1)
			go func() {
				_, err := r.db.InsertNetworkToken(ctx, r.liveToken("m1", pm))
				inserted <- err
			}()
			if tc.insertErr != nil {
				r.waitForLockWaits(2) // the insert waits for DeleteCard
			} else if err := <-inserted; err != nil {
				t.Fatalf("insert: %v", err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-deleted; !errors.Is(err, tc.deleteErr) {
				t.Fatalf("DeleteCard: %v, want %v", err, tc.deleteErr)
			}
			if tc.insertErr != nil {
				if err := <-inserted; !errors.Is(err, tc.insertErr) {
					t.Fatalf("insert: %v, want %v", err, tc.insertErr)
				}
			}
			if cards, tokens := r.rowsOf(pm); cards != tc.cardsLeft || tokens != tc.tokensLeft {
				t.Fatalf("%d card rows and %d token rows left, want %d and %d", cards, tokens, tc.cardsLeft, tc.tokensLeft)
			}
		})
	}
}

// ChangeNetworkToken stores what change returns, for the merchant's own
// token only, and nothing when change fails.
func TestChangeNetworkToken(t *testing.T) {
	errTSP := errors.New("tsp down")
	cases := []struct {
		name       string
		merchant   string
		otherCard  bool // ask under another payment method
		to         networktoken.Status
		changeErr  error
		wantErr    error
		wantCalled bool
		wantStored networktoken.Status
	}{
		{name: "suspend", merchant: "m1", to: networktoken.StatusSuspended, wantCalled: true, wantStored: networktoken.StatusSuspended},
		{name: "delete shreds", merchant: "m1", to: networktoken.StatusDeleted, wantCalled: true, wantStored: networktoken.StatusDeleted},
		{name: "unchanged", merchant: "m1", to: networktoken.StatusActive, wantCalled: true, wantStored: networktoken.StatusActive},
		{name: "change fails", merchant: "m1", to: networktoken.StatusDeleted, changeErr: errTSP, wantErr: errTSP, wantCalled: true,
			wantStored: networktoken.StatusActive},
		{name: "another merchant account", merchant: "m2", to: networktoken.StatusDeleted, wantErr: vaultproxy.ErrNotFound,
			wantStored: networktoken.StatusActive},
		{name: "another payment method", merchant: "m1", otherCard: true, to: networktoken.StatusDeleted, wantErr: vaultproxy.ErrNotFound,
			wantStored: networktoken.StatusActive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newVaultRows(t)
			pm := r.card("m1")
			nt := r.storedToken("m1", pm)
			asked := pm
			if tc.otherCard {
				asked = r.card("m1")
			}
			called := false
			got, err := r.db.ChangeNetworkToken(ctx, tc.merchant, asked, nt.ID,
				func(_ context.Context, cur *networktoken.NetworkToken) (networktoken.Status, error) {
					called = true
					if cur.ID != nt.ID || cur.Status != networktoken.StatusActive {
						t.Errorf("change got %+v", cur)
					}
					return tc.to, tc.changeErr
				})
			if !errors.Is(err, tc.wantErr) || called != tc.wantCalled {
				t.Fatalf("ChangeNetworkToken: %v (change called: %v), want %v (%v)", err, called, tc.wantErr, tc.wantCalled)
			}
			if err == nil && (got.Status != tc.wantStored || (tc.wantStored == networktoken.StatusDeleted) != (got.Sealed.Ciphertext == nil)) {
				t.Fatalf("returned %q, sealed %v", got.Status, got.Sealed.Ciphertext != nil)
			}
			stored, err := r.db.NetworkToken(ctx, "m1", pm, nt.ID)
			if err != nil || stored.Status != tc.wantStored || (tc.wantStored == networktoken.StatusDeleted) != (stored.Sealed.Ciphertext == nil) {
				t.Fatalf("stored: %v %+v, want %q", err, stored, tc.wantStored)
			}
		})
	}
}

// A card deletion that comes while a lifecycle operation holds the card's
// live token (at its TSP) refuses at once rather than wait for it: the
// token row lock and the card row lock are never waited for in opposite
// orders.
func TestDeleteCardDuringANetworkTokenChange(t *testing.T) {
	ctx := context.Background()
	r := newVaultRows(t)
	pm := r.card("m1")
	nt := r.storedToken("m1", pm)
	_, err := r.db.ChangeNetworkToken(ctx, "m1", pm, nt.ID, func(ctx context.Context, _ *networktoken.NetworkToken) (networktoken.Status, error) {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := r.db.DeleteCard(dctx, "m1", pm); !errors.Is(err, vaultproxy.ErrLiveNetworkToken) {
			t.Errorf("DeleteCard during the change: %v", err)
		}
		return networktoken.StatusDeleted, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.db.DeleteCard(ctx, "m1", pm); err != nil {
		t.Fatalf("DeleteCard after the token's deletion: %v", err)
	}
	if cards, tokens := r.rowsOf(pm); cards != 0 || tokens != 0 {
		t.Fatalf("%d card rows and %d token rows left", cards, tokens)
	}
}
