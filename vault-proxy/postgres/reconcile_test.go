package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
)

// agedCard is a card vaulted age ago, by the database's clock.
func (r *vaultRows) agedCard(merchant, kind string, age time.Duration) uuid.UUID {
	r.t.Helper()
	id := r.card(merchant)
	r.exec(`UPDATE vaulted_cards SET kind = $2, created_at = clock_timestamp() - $3::interval WHERE id = $1`, id, kind, age)
	return id
}

// The reconciliation's list: every record old enough, of every kind and
// account (or of one account), exactly once across pages in token order,
// and none younger than the minimum age or the cutoff asked for.
func TestVaultedRecordsPages(t *testing.T) {
	r := newVaultRows(t)
	ctx := context.Background()
	var old, oldOfM2 []uuid.UUID
	for i, kind := range []string{"card", "gift-card", "bank-account", "card", "card", "gift-card", "card"} {
		m := "m1"
		if i%3 == 2 {
			m = "m2"
		}
		id := r.agedCard(m, kind, 48*time.Hour)
		old = append(old, id)
		if m == "m2" {
			oldOfM2 = append(oldOfM2, id)
		}
	}
	fresh := r.agedCard("m1", "card", time.Hour)     // younger than the minimum age
	future := r.agedCard("m1", "card", 30*time.Hour) // old enough, but after the cutoff asked
	slices.SortFunc(old, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	slices.SortFunc(oldOfM2, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	cutoff := time.Now().Add(-36 * time.Hour)

	pages := func(t *testing.T, merchant string, limit int) (got []uuid.UUID, n int) {
		t.Helper()
		q := vaultproxy.RecordQuery{CreatedBefore: cutoff, MinAge: 24 * time.Hour, MerchantAccountID: merchant, Limit: limit}
		for {
			page, err := r.db.VaultedRecords(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			n++
			for _, rec := range page {
				if !rec.CreatedAt.Before(cutoff) || rec.Kind == "" || (merchant != "" && rec.MerchantAccountID != merchant) {
					t.Fatalf("listed %+v", rec)
				}
				got = append(got, rec.Token)
			}
			if len(page) < limit {
				return got, n
			}
			q.After = page[len(page)-1].Token
		}
	}
	for _, tc := range []struct {
		name     string
		merchant string
		limit    int
		want     []uuid.UUID
		pages    int
	}{
		{"one page", "", 100, old, 1},
		{"pages of two", "", 2, old, 4},
		{"pages of one", "", 1, old, 8},
		{"one merchant account", "m2", 1, oldOfM2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := pages(t, tc.merchant, tc.limit)
			if !slices.Equal(got, tc.want) || n != tc.pages {
				t.Fatalf("listed %v in %d pages, want %v in %d", got, n, tc.want, tc.pages)
			}
			if slices.Contains(got, fresh) || slices.Contains(got, future) {
				t.Fatal("listed a record younger than the minimum age or the cutoff")
			}
		})
	}

	// Records deleted and vaulted between two pages: the rest of the list
	// neither skips nor repeats the ones that stay.
	t.Run("changes between pages", func(t *testing.T) {
		q := vaultproxy.RecordQuery{CreatedBefore: cutoff, MinAge: 24 * time.Hour, Limit: 3}
		first, err := r.db.VaultedRecords(ctx, q)
		if err != nil || len(first) != 3 {
			t.Fatalf("first page: %v %v", first, err)
		}
		r.exec(`DELETE FROM vaulted_cards WHERE id = $1`, old[4])
		r.agedCard("m1", "card", 48*time.Hour)
		q.After, q.Limit = first[2].Token, 100
		rest, err := r.db.VaultedRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range append(old[3:4:4], old[5:]...) {
			if !slices.ContainsFunc(rest, func(rec vaultproxy.RecordRef) bool { return rec.Token == id }) {
				t.Fatalf("record %s was skipped", id)
			}
		}
		for _, rec := range rest {
			if bytes.Compare(rec.Token[:], first[2].Token[:]) <= 0 || rec.Token == old[4] {
				t.Fatalf("listed %s again, or deleted", rec.Token)
			}
		}
	})
}

// A reconciliation's shred refuses a card vaulted less than the minimum
// age ago by the database's clock, and changes nothing then; an older
// one is deleted as DeleteCard deletes it.
func TestDeleteCardOlderThan(t *testing.T) {
	r := newVaultRows(t)
	ctx := context.Background()
	fresh := r.agedCard("m1", "card", 0)
	old := r.agedCard("m1", "card", 2*time.Hour)
	for _, tc := range []struct {
		name     string
		merchant string
		id       uuid.UUID
		want     error
		rows     int // the card's rows after
	}{
		{"younger than the minimum age", "m1", fresh, vaultproxy.ErrTooRecent, 1},
		{"another merchant account's", "m2", old, vaultproxy.ErrNotFound, 1},
		{"old enough", "m1", old, nil, 0},
		{"already gone", "m1", old, vaultproxy.ErrNotFound, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.db.DeleteCardOlderThan(ctx, tc.merchant, tc.id, time.Hour); !errors.Is(err, tc.want) {
				t.Fatalf("= %v, want %v", err, tc.want)
			}
			if cards, _ := r.rowsOf(tc.id); cards != tc.rows {
				t.Fatalf("%d rows of the card, want %d", cards, tc.rows)
			}
		})
	}
	// A live network token keeps an old card too (DeleteCard).
	pm := r.agedCard("m1", "card", 2*time.Hour)
	r.storedToken("m1", pm)
	if err := r.db.DeleteCardOlderThan(ctx, "m1", pm, time.Hour); !errors.Is(err, vaultproxy.ErrLiveNetworkToken) {
		t.Fatalf("a card with a live network token: %v", err)
	}
}
