package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/postgres"
)

// ship stores events through the shipper, as a spool of their own.
func (r *vaultRows) ship(events ...vaultproxy.AuditEvent) {
	r.t.Helper()
	if err := r.db.ShipAudit(context.Background(), uuid.New(), batch(r.t, 0, events...)); err != nil {
		r.t.Fatal(err)
	}
}

// trail stores records both ways records reach audit_events, the
// shipper's batches and a vaulted card's own record, and returns their
// ids in order.
func (r *vaultRows) trail() []int64 {
	r.t.Helper()
	r.ship(event(1, "r-1", uuid.New()), event(2, "r-2"))
	if err := r.insertCard("m"); err != nil {
		r.t.Fatal(err)
	}
	r.ship(event(3, "r-3", uuid.New(), uuid.New()), vaultproxy.AuditEvent{OccurredAt: event(4, "").OccurredAt,
		Actor: "a\u00e9", MerchantAccountID: "m", Action: "forward", Outcome: "failure: x\x00y", RequestID: "r-4\xff"})
	if err := r.insertCard("m"); err != nil {
		r.t.Fatal(err)
	}
	r.ship(event(5, "r-5"))
	rows, err := r.db.Pool.Query(context.Background(), `SELECT id FROM audit_events ORDER BY id`)
	if err != nil {
		r.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != 7 {
		r.t.Fatalf("%d records stored, want 7: %v", len(ids), err)
	}
	return ids
}

// verify walks the chain and fails t on a break.
func (r *vaultRows) verify(anchors ...postgres.AuditLink) postgres.AuditChain {
	r.t.Helper()
	return verifyChain(r.t, r.db, anchors...)
}

// verifyChain walks db's audit chain and fails t on a break: every record
// hashes, read back, as it did when it was stored.
func verifyChain(t *testing.T, db *postgres.DB, anchors ...postgres.AuditLink) postgres.AuditChain {
	t.Helper()
	c, err := db.VerifyAuditChain(context.Background(), anchors...)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return c
}

// A trail nobody touched verifies: every record, whichever way it was
// stored, in one chain whose head is the last record.
func TestAuditChainVerifiesAnUntouchedTrail(t *testing.T) {
	r := newVaultRows(t)
	if c := r.verify(); c.Records != 0 || c.Head.ID != 0 {
		t.Fatalf("an empty trail: %+v", c)
	}
	ids := r.trail()
	c := r.verify()
	if c.Records != int64(len(ids)) || c.Head.ID != ids[len(ids)-1] || c.StartedAfter != 0 {
		t.Fatalf("verified %+v; want %d records, the head at record %d, started after 0", c, len(ids), ids[len(ids)-1])
	}
	if again := r.verify(c.Head); again != c {
		t.Fatalf("verified against its own head: %+v, want %+v", again, c)
	}
}

// Whatever the owner (or anyone able to write the table) changes is found,
// and the first broken link named: a record's content or hash edited, a
// record removed from the middle or the end, one added.
func TestAuditChainFindsTheFirstBrokenLink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper string // as the owner; $1 is the id of the record it aims at
		at     func(ids []int64) int64
		want   func(ids []int64) postgres.AuditChainBreak
	}{
		{"a shipped record's outcome edited", `UPDATE audit_events SET outcome = 'success' WHERE id = $1`, nth(4),
			broken(postgres.BreakChanged, 4, 3)},
		{"a vaulted card's actor edited", `UPDATE audit_events SET actor = 'token:other' WHERE id = $1`, nth(2),
			broken(postgres.BreakChanged, 2, 1)},
		{"a record's time moved by a microsecond", `UPDATE audit_events SET occurred_at = occurred_at + interval '1 microsecond' WHERE id = $1`, nth(0),
			broken(postgres.BreakChanged, 0, -1)},
		{"a record's detail edited", `UPDATE audit_events SET detail = '{"i": 5}' WHERE id = $1`, nth(6),
			broken(postgres.BreakChanged, 6, 5)},
		{"a record's tokens edited", `UPDATE audit_events SET tokens = tokens[1:1] WHERE id = $1`, nth(3),
			broken(postgres.BreakChanged, 3, 2)},
		{"a record's hash replaced", `UPDATE audit_events SET chain_hash = sha256(chain_hash) WHERE id = $1`, nth(1),
			broken(postgres.BreakChanged, 1, 0)},
		{"a record removed from the middle", `DELETE FROM audit_events WHERE id = $1`, nth(3),
			broken(postgres.BreakUnlinked, 4, 2)},
		{"the first record removed", `DELETE FROM audit_events WHERE id = $1`, nth(0),
			broken(postgres.BreakUnlinked, 1, -1)},
		{"the last record removed", `DELETE FROM audit_events WHERE id = $1`, nth(6),
			func(ids []int64) postgres.AuditChainBreak {
				return postgres.AuditChainBreak{Kind: postgres.BreakTruncated, After: ids[5]}
			}},
		{"a record added with the head's links", `INSERT INTO audit_events (actor, merchant_account_id, action, outcome, chain_prev, chain_hash)
			SELECT 'a', 'm', 'forward', 'success', chain_prev, chain_hash FROM audit_events WHERE id = $1`, nth(6),
			func(ids []int64) postgres.AuditChainBreak {
				return postgres.AuditChainBreak{Kind: postgres.BreakUnlinked, ID: ids[6] + 1, After: ids[6]}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newVaultRows(t)
			ids := r.trail()
			r.dbs.ExecAsOwner(t, r.dbs.Vault, tc.tamper, tc.at(ids))
			_, err := r.db.VerifyAuditChain(context.Background())
			var got *postgres.AuditChainBreak
			if !errors.As(err, &got) || *got != tc.want(ids) {
				t.Fatalf("verify: %v; want %+v", err, tc.want(ids))
			}
		})
	}
}

// nth aims a tampering at the i-th record.
func nth(i int) func([]int64) int64 { return func(ids []int64) int64 { return ids[i] } }

// broken is a break of kind at the i-th record, after the j-th (-1: none).
func broken(kind postgres.ChainBreakKind, i, j int) func([]int64) postgres.AuditChainBreak {
	return func(ids []int64) postgres.AuditChainBreak {
		b := postgres.AuditChainBreak{Kind: kind, ID: ids[i]}
		if j >= 0 {
			b.After = ids[j]
		}
		return b
	}
}

// A link recorded elsewhere (an anchor: a head verify printed earlier)
// must still be in the chain with its hash. That catches what the chain
// alone cannot: the whole chain recomputed after an edit, or its last
// records removed with the chain's head rewritten to match.
func TestAuditChainChecksAnchors(t *testing.T) {
	r := newVaultRows(t)
	ids := r.trail()
	head := r.verify().Head
	for _, tc := range []struct {
		name   string
		anchor postgres.AuditLink
	}{
		{"another hash", postgres.AuditLink{ID: head.ID, Hash: [32]byte{1}}},
		{"a record that is not there", postgres.AuditLink{ID: head.ID + 1, Hash: head.Hash}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.db.VerifyAuditChain(context.Background(), tc.anchor)
			var got *postgres.AuditChainBreak
			if !errors.As(err, &got) || got.Kind != postgres.BreakAnchor || got.ID != tc.anchor.ID {
				t.Fatalf("verify: %v; want an anchor break at record %d", err, tc.anchor.ID)
			}
		})
	}
	first := postgres.AuditLink{ID: ids[0]}
	var hash []byte
	if err := r.db.Pool.QueryRow(context.Background(), `SELECT chain_hash FROM audit_events WHERE id = $1`, first.ID).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	copy(first.Hash[:], hash)
	r.verify(first, head)
}

// Several vault-proxy instances share one vault database: their shippers
// and their card vaultings append at once, each through its own pool, and
// the trail is still one chain.
func TestAuditChainHoldsWithConcurrentAppenders(t *testing.T) {
	r := newVaultRows(t)
	const instances, batches, perBatch, cards = 4, 8, 25, 10
	var wg sync.WaitGroup
	errs := make(chan error, instances*2)
	for i := range instances {
		db, err := postgres.Open(context.Background(), r.dbs.VaultDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		wg.Add(2)
		go func() {
			defer wg.Done()
			spool, prev := uuid.New(), uint64(0)
			for b := range batches {
				events := make([]vaultproxy.AuditEvent, perBatch)
				for e := range events {
					events[e] = event(e, fmt.Sprintf("i%d-b%d-e%d", i, b, e), uuid.New())
				}
				bt := batch(t, prev, events...)
				if err := db.ShipAudit(context.Background(), spool, bt); err != nil {
					errs <- err
					return
				}
				prev = bt.Last
			}
		}()
		go func() {
			defer wg.Done()
			for range cards {
				if err := insertCard(db, r.dk, fmt.Sprintf("m%d", i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c := r.verify(); c.Records != instances*(batches*perBatch+cards) {
		t.Fatalf("verified %d records, want %d", c.Records, instances*(batches*perBatch+cards))
	}
}

// Concurrent vaultings of one process share transactions, and each still
// gets its own answer: stored, refused for a closed account, or failed for
// its own row, without failing the others; the records chain.
func TestConcurrentVaultingsAnswerEachAlone(t *testing.T) {
	r := newVaultRows(t)
	ctx := context.Background()
	if _, closed, err := r.db.CloseMerchantAccount(ctx, "closed", uuid.New()); err != nil || !closed {
		t.Fatalf("close: %v %v", closed, err)
	}
	type result struct {
		kind string
		card *vaultproxy.VaultedCard
		err  error
	}
	kinds := []string{"stored", "stored", "stored", "closed", "bad"}
	results := make(chan result, 60)
	var wg sync.WaitGroup
	for i := range 60 {
		kind := kinds[i%len(kinds)]
		c := &vaultproxy.VaultedCard{Token: uuid.New(), MerchantAccountID: fmt.Sprintf("m%d", i%3), Kind: vaultproxy.KindCard,
			Scheme: "visa", BIN: "411111", Last4: "1111", Fingerprint: "fp", ExpirationDate: "12/30",
			Sealed: envelope.Sealed{DataKeyID: r.dk, WrappedKey: []byte{0}, Ciphertext: []byte{0}}}
		switch kind {
		case "closed":
			c.MerchantAccountID = "closed"
		case "bad":
			c.BIN = "41" // the table's check refuses it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.db.InsertCardAudited(ctx, c, vaultproxy.AuditEvent{Actor: "token:t", MerchantAccountID: c.MerchantAccountID, Action: "vault", Outcome: "success"})
			results <- result{kind, c, err}
		}()
	}
	wg.Wait()
	close(results)
	for res := range results {
		switch {
		case res.kind == "stored" && (res.err != nil || res.card.CreatedAt.IsZero()):
			t.Errorf("a card of an open account: %v, created at %v", res.err, res.card.CreatedAt)
		case res.kind == "closed" && !errors.Is(res.err, vaultproxy.ErrMerchantAccountClosed):
			t.Errorf("a card of a closed account: %v", res.err)
		case res.kind == "bad" && res.err == nil:
			t.Error("a card the table refuses was stored")
		}
	}
	if n := r.count(`SELECT count(*) FROM vaulted_cards`); n != 36 {
		t.Errorf("%d cards stored, want 36", n)
	}
	if c := r.verify(); c.Records != 36 {
		t.Errorf("%d records chained, want 36", c.Records)
	}
}

// A vaulting whose context ended before its batch was written stores
// nothing, and the next one is written as usual.
func TestAbandonedVaultingStoresNothing(t *testing.T) {
	r := newVaultRows(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &vaultproxy.VaultedCard{Token: uuid.New(), MerchantAccountID: "m", Kind: vaultproxy.KindCard, Scheme: "visa",
		BIN: "411111", Last4: "1111", Fingerprint: "fp", Sealed: envelope.Sealed{DataKeyID: r.dk, WrappedKey: []byte{0}, Ciphertext: []byte{0}}}
	if err := r.db.InsertCardAudited(ctx, c, vaultproxy.AuditEvent{Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("an abandoned vaulting: %v", err)
	}
	if err := r.insertCard("m"); err != nil {
		t.Fatal(err)
	}
	if n := r.count(`SELECT count(*) FROM vaulted_cards WHERE id = $1`, c.Token); n != 0 {
		t.Fatal("the abandoned card was stored")
	}
	if c := r.verify(); c.Records != 1 {
		t.Fatalf("%d records chained, want the next vaulting's", c.Records)
	}
}
