package vaulting_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/testsupport"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/payorch/vault-proxy/vaulting/vaultingtest"
)

var testPANs = []string{"4111111111111111", "5555555555554444", "378282246310005"}

type fixture struct {
	db     *postgres.DB
	svc    *vaulting.Service
	sealer *envelope.Sealer
	dbs    *testsupport.Databases
	now    time.Time
	codes  *vaulting.SecurityCodes
	audits *auditspool.Spool
	key    []byte          // the fingerprint key
	src    *transit.Client // the real Vault's transit, with vault-proxy's policy
}

// setup gives a test or benchmark a vault service on fresh databases and a
// fresh transit mount of the real Vault, with a fixed clock.
func setup(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	p := vaultingtest.New(t, func() time.Time { return f.now })
	f.db, f.dbs, f.codes, f.key, f.src, f.sealer, f.audits, f.svc = p.DB, p.DBs, p.Codes, p.Key, p.Transit, p.Sealer, p.Audits, p.Service
	return f
}

func caller(m string) vaulting.Caller {
	return vaulting.Caller{MerchantAccountID: m, Actor: "test", RequestID: "req-1"}
}

// reveal is Reveal for tests that look at the cards: it records the
// reveal's outcome, as every caller does.
func reveal(ctx context.Context, svc *vaulting.Service, c vaulting.Caller, action, purpose string, tokens []uuid.UUID, withCode bool) ([]*vaulting.Revealed, error) {
	cards, o, err := svc.Reveal(ctx, c, action, purpose, tokens, withCode)
	o.Record(ctx, "success", nil)
	return cards, err
}

func (f *fixture) vault(t testing.TB, m, pan, cvv string) *vaultproxy.VaultedCard {
	t.Helper()
	rec, err := f.svc.VaultCard(context.Background(), caller(m), vaulting.CardRequest{
		Kind: vaultproxy.KindCard, Number: []byte(pan), ExpirationDate: "12/30", SecurityCode: []byte(cvv),
	})
	if err != nil {
		t.Fatalf("vault: %v", err)
	}
	return rec
}

func TestVaultAndReveal(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	var tokens []uuid.UUID
	for _, pan := range testPANs {
		rec := f.vault(t, "m1", pan, "")
		if rec.Last4 != pan[len(pan)-4:] || !strings.HasPrefix(pan, rec.BIN) || rec.Fingerprint == "" {
			t.Fatalf("display data wrong: %+v", rec)
		}
		tokens = append(tokens, rec.Token)
	}
	cards, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "test", tokens, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cards {
		if string(c.Number) != testPANs[i] {
			t.Fatalf("card %d revealed wrong", i)
		}
		c.Zero()
	}
	if _, err := reveal(ctx, f.svc, caller("m2"), "detokenize", "test", tokens[:1], false); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant revealed a card: %v", err)
	}
}

func TestFingerprintFindsDuplicatesWithinAMerchantOnly(t *testing.T) {
	f := setup(t)
	a := f.vault(t, "m1", "4111111111111111", "")
	b := f.vault(t, "m1", "4111 1111 1111 1111", "")
	c := f.vault(t, "m2", "4111111111111111", "")
	d := f.vault(t, "m1", "5555555555554444", "")
	if a.Fingerprint != b.Fingerprint {
		t.Fatal("the same card got two fingerprints")
	}
	if a.Fingerprint == c.Fingerprint {
		t.Fatal("fingerprints correlate across merchant accounts")
	}
	if a.Fingerprint == d.Fingerprint {
		t.Fatal("two cards share a fingerprint")
	}
	if a.Token == b.Token {
		t.Fatal("two vaultings returned one token")
	}
}

func TestInvalidCardsAreRefusedAndNothingIsStored(t *testing.T) {
	f := setup(t)
	cases := []struct {
		name   string
		req    vaulting.CardRequest
		fields []string
		codes  []string // when set, the errors' codes
	}{
		{"luhn", vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111112"), ExpirationDate: "12/30"}, []string{"number"}, nil},
		{"expired", vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"), ExpirationDate: "01/20"}, []string{"expiration_date"}, nil},
		{"all bad", vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("12ab"), ExpirationDate: "13/30", SecurityCode: []byte("1")}, []string{"number", "expiration_date", "security_code"}, nil},
		{"amex code length", vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("378282246310005"), ExpirationDate: "12/30", SecurityCode: []byte("123")}, []string{"security_code"}, nil},
		{"gift card pin", vaulting.CardRequest{Kind: vaultproxy.KindGiftCard, Number: []byte("6006491234567890"), SecurityCode: []byte("12")}, []string{"pin"}, nil},
		{"expired gift card", vaulting.CardRequest{Kind: vaultproxy.KindGiftCard, Number: []byte("6006491234567890"), SecurityCode: []byte("1234"), ExpirationDate: "01/20"}, []string{"expiration_date"}, []string{"expired"}},
		{"gift card month 13", vaulting.CardRequest{Kind: vaultproxy.KindGiftCard, Number: []byte("6006491234567890"), SecurityCode: []byte("1234"), ExpirationDate: "13/30"}, []string{"expiration_date"}, []string{"invalid_month"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.VaultCard(context.Background(), caller("m1"), tc.req)
			var fe vaulting.FieldErrors
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want field errors", err)
			}
			var got, codes []string
			for _, e := range fe {
				got, codes = append(got, e.Field), append(codes, string(e.Code))
				if strings.ContainsAny(e.Message, "0123456789") && strings.Contains(e.Message, "4111") {
					t.Fatalf("message echoes input: %q", e.Message)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("fields %v, want %v", got, tc.fields)
			}
			if tc.codes != nil && strings.Join(codes, ",") != strings.Join(tc.codes, ",") {
				t.Fatalf("codes %v, want %v", codes, tc.codes)
			}
		})
	}
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM vaulted_cards`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d cards stored after refusals (%v)", n, err)
	}
}

// A row whose ciphertext was copied from another token must not decrypt:
// associated data binds each record to its merchant account and token.
func TestCiphertextCopiedToAnotherRowFailsToDecrypt(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	a := f.vault(t, "m1", "4111111111111111", "")
	b := f.vault(t, "m1", "5555555555554444", "")
	if _, err := f.db.Pool.Exec(ctx, `UPDATE vaulted_cards SET data_key_id = a.data_key_id, wrapped_record_key = a.wrapped_record_key, ciphertext = a.ciphertext
		FROM vaulted_cards a WHERE a.id = $1 AND vaulted_cards.id = $2`, a.Token, b.Token); err != nil {
		t.Fatal(err)
	}
	_, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "test", []uuid.UUID{b.Token}, false)
	if !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("copied ciphertext: %v, want envelope.ErrOpen", err)
	}
	// The same row moved to another merchant account fails too.
	if _, err := f.db.Pool.Exec(ctx, `UPDATE vaulted_cards SET merchant_account_id = 'm2' WHERE id = $1`, a.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := reveal(ctx, f.svc, caller("m2"), "detokenize", "test", []uuid.UUID{a.Token}, false); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("row moved to another merchant: %v, want envelope.ErrOpen", err)
	}
}

func TestSecurityCodeIsHeldInMemoryOnceAndNeverStored(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const cvv = "7319"
	rec := f.vault(t, "m1", "378282246310005", cvv)
	// The sealed record holds the number alone (a card has no PIN slot
	// filled): the code is not stored even encrypted.
	if cards, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "test", []uuid.UUID{rec.Token}, false); err != nil ||
		len(cards[0].PIN) != 0 || string(cards[0].Number) != "378282246310005" {
		t.Fatalf("the sealed record: %v", err)
	}
	cards, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "authorization", []uuid.UUID{rec.Token}, true)
	if err != nil || string(cards[0].SecurityCode) != cvv {
		t.Fatalf("first use: %v", err)
	}
	cards, _ = reveal(ctx, f.svc, caller("m1"), "detokenize", "authorization", []uuid.UUID{rec.Token}, true)
	if cards[0].SecurityCode != nil {
		t.Fatal("security code usable twice")
	}
	// An authorization that does not send the code ends its hold too; a
	// forward (never allowed the code) does not.
	rec3 := f.vault(t, "m1", "378282246310005", cvv)
	if cards, err := reveal(ctx, f.svc, caller("m1"), "forward", "vault-forward", []uuid.UUID{rec3.Token}, false); err != nil || cards[0].SecurityCode != nil {
		t.Fatalf("forward: %v", err)
	}
	if f.codes.Len(f.now) != 1 {
		t.Fatal("a forward dropped the held code")
	}
	if _, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "authorization", []uuid.UUID{rec3.Token}, false); err != nil {
		t.Fatal(err)
	}
	if cards, _ = reveal(ctx, f.svc, caller("m1"), "detokenize", "authorization", []uuid.UUID{rec3.Token}, true); cards[0].SecurityCode != nil {
		t.Fatal("the code outlived an authorization that did not use it")
	}
	// Expiry: a code not used within 15 minutes is gone.
	rec2 := f.vault(t, "m1", "378282246310005", cvv)
	f.now = f.now.Add(16 * time.Minute)
	cards, _ = reveal(ctx, f.svc, caller("m1"), "detokenize", "authorization", []uuid.UUID{rec2.Token}, true)
	if cards[0].SecurityCode != nil {
		t.Fatal("security code outlived 15 minutes")
	}
	if f.codes.Len(f.now) != 0 {
		t.Fatal("expired codes still held")
	}
	assertNotInAnyTextColumn(t, f, cvv)
	var cols int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public'
		AND (column_name ILIKE '%cvv%' OR column_name ILIKE '%cvc%' OR column_name ILIKE '%security%')`).Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("%d columns look like they hold security codes", cols)
	}
}

// A payment waiting on its 3-D Secure challenge keeps its card's code for
// the authorization that resumes it: the code moves from the card's own
// hold to the challenge's, which only that transaction's authorization
// takes, once; the hold ends at the challenge's expiry, and never
// outlives the holder's 15 minutes.
func TestSecurityCodeHeldForAChallenge(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const cvv, id, other = "7319", "0b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e", "1b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e"
	revealFor := func(token uuid.UUID, id string) []byte {
		t.Helper()
		cards, o, err := f.svc.RevealFor(ctx, caller("m1"), "detokenize", "authorization", []uuid.UUID{token}, true, id)
		if err != nil {
			t.Fatal(err)
		}
		o.Record(ctx, "success", nil)
		return cards[0].SecurityCode
	}

	rec := f.vault(t, "m1", "378282246310005", cvv)
	if !f.svc.HoldSecurityCodeForChallenge(rec.Token, id, f.now.Add(10*time.Minute)) {
		t.Fatal("the code was not moved to the challenge's hold")
	}
	if f.svc.SecurityCodeHeld(rec.Token) || !f.svc.SecurityCodeHeldFor(rec.Token, id) || f.svc.SecurityCodeHeldFor(rec.Token, other) {
		t.Fatal("the code is not held for the challenge alone")
	}
	if got := revealFor(rec.Token, other); got != nil {
		t.Fatal("another transaction's authorization took the code")
	}
	if cards, _ := reveal(ctx, f.svc, caller("m1"), "detokenize", "authorization", []uuid.UUID{rec.Token}, true); cards[0].SecurityCode != nil {
		t.Fatal("an authorization naming no transaction took the code")
	}
	if got := revealFor(rec.Token, id); string(got) != cvv {
		t.Fatalf("the resumed authorization got %q", got)
	}
	if revealFor(rec.Token, id) != nil || f.svc.SecurityCodeHeldFor(rec.Token, id) {
		t.Fatal("the code was usable twice")
	}
	if f.svc.HoldSecurityCodeForChallenge(rec.Token, id, f.now.Add(10*time.Minute)) {
		t.Fatal("a code no longer held was moved")
	}

	// A challenge that ends without an authorization has its code wiped
	// at once, not at its expiry; forgetting is idempotent and touches no
	// other hold.
	rec = f.vault(t, "m1", "378282246310005", cvv)
	f.svc.HoldSecurityCodeForChallenge(rec.Token, id, f.now.Add(10*time.Minute))
	f.svc.ForgetSecurityCodeFor(rec.Token, other)
	if !f.svc.SecurityCodeHeldFor(rec.Token, id) {
		t.Fatal("forgetting another transaction's code wiped this one's")
	}
	f.svc.ForgetSecurityCodeFor(rec.Token, id)
	f.svc.ForgetSecurityCodeFor(rec.Token, id)
	if f.svc.SecurityCodeHeldFor(rec.Token, id) || revealFor(rec.Token, id) != nil || f.codes.Len(f.now) != 0 {
		t.Fatal("a forgotten code is still held")
	}

	for name, tc := range map[string]struct {
		until, after time.Duration
		held         bool
	}{
		"before the challenge's expiry":        {10 * time.Minute, 9 * time.Minute, true},
		"after the challenge's expiry":         {10 * time.Minute, 10 * time.Minute, false},
		"an expiry already passed":             {-time.Second, 0, false},
		"an expiry beyond the holder's 15 min": {time.Hour, 15 * time.Minute, false},
	} {
		start := f.now
		rec := f.vault(t, "m1", "378282246310005", cvv)
		f.svc.HoldSecurityCodeForChallenge(rec.Token, id, start.Add(tc.until))
		f.now = start.Add(tc.after)
		if got := revealFor(rec.Token, id) != nil; got != tc.held {
			t.Errorf("%s: held %v, want %v", name, got, tc.held)
		}
		f.now = start
	}
	assertNotInAnyTextColumn(t, f, cvv)
}

// assertNotInAnyTextColumn searches every text, json and jsonb column of the vault
// database for s.
func assertNotInAnyTextColumn(t *testing.T, f *fixture, s string) {
	t.Helper()
	ctx := context.Background()
	rows, err := f.db.Pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY')`)
	if err != nil {
		t.Fatal(err)
	}
	var cols [][2]string
	for rows.Next() {
		var tbl, col string
		_ = rows.Scan(&tbl, &col)
		cols = append(cols, [2]string{tbl, col})
	}
	rows.Close()
	for _, c := range cols {
		var n int
		q := `SELECT count(*) FROM "` + c[0] + `" WHERE "` + c[1] + `"::text LIKE '%' || $1 || '%'`
		if err := f.db.Pool.QueryRow(ctx, q, s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Fatalf("%s.%s holds the secret", c[0], c[1])
		}
	}
}

func TestVaultDatabaseHoldsNoPlaintextPAN(t *testing.T) {
	f := setup(t)
	for _, pan := range testPANs {
		f.vault(t, "m1", pan, "")
	}
	dump := f.dbs.Dump(t, f.dbs.Vault.Name)
	if len(dump) < 1000 {
		t.Fatalf("dump too small to judge (%d bytes)", len(dump))
	}
	for _, pan := range testPANs {
		if strings.Contains(dump, pan) {
			t.Fatalf("the vault database dump holds a plaintext card number")
		}
	}
	for _, pan := range testPANs {
		assertNotInAnyTextColumn(t, f, pan)
	}
}

func TestDeleteShredsTheCard(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	rec := f.vault(t, "m1", "4111111111111111", "123")
	if err := f.svc.Delete(ctx, caller("m2"), rec.Token); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant deleted the card: %v", err)
	}
	if err := f.svc.Delete(ctx, caller("m1"), rec.Token); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM vaulted_cards WHERE id = $1`, rec.Token).Scan(&n); err != nil || n != 0 {
		t.Fatal("row survived delete")
	}
	if _, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "test", []uuid.UUID{rec.Token}, true); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("deleted card revealed: %v", err)
	}
	if f.codes.Len(f.now) != 0 {
		t.Fatal("security code of a deleted card still held")
	}
	if got, want := f.auditTrail(t, rec.Token), "vault:success,delete:failure: not_found,delete:success,detokenize:failure: not_found"; got != want {
		t.Fatalf("audit trail %s, want %s", got, want)
	}
}

// auditTrail is the token's audit trail, oldest first, as
// "action:outcome,...", once the spool has shipped it.
func (f *fixture) auditTrail(t *testing.T, token uuid.UUID) string {
	t.Helper()
	ctx := context.Background()
	if err := f.audits.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := f.db.Pool.Query(ctx, `SELECT action || ':' || outcome FROM audit_events WHERE $1 = ANY(tokens) ORDER BY id`, token)
	if err != nil {
		t.Fatal(err)
	}
	actions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(actions, ",")
}

// The reconciliation's shred of a record no payment method holds: refused
// (and audited) while the record is younger than the minimum age, whoever
// asks; then the card is shredded as Delete shreds it.
func TestShredUnclaimedKeepsYoungRecords(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	rec := f.vault(t, "m1", "4111111111111111", "123")
	if err := f.svc.ShredUnclaimed(ctx, caller("m1"), rec.Token, time.Hour); !errors.Is(err, vaultproxy.ErrTooRecent) {
		t.Fatalf("a card vaulted just now: %v, want too recent", err)
	}
	cards, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "test", []uuid.UUID{rec.Token}, false)
	if err != nil || string(cards[0].Number) != "4111111111111111" {
		t.Fatalf("the card after a refused shred: %v", err)
	}
	cards[0].Zero()

	// Vaulted two hours ago, by the database's clock (the service's own
	// clock is not asked).
	if _, err := f.db.Pool.Exec(ctx, `UPDATE vaulted_cards SET created_at = created_at - interval '2 hours' WHERE id = $1`, rec.Token); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.ShredUnclaimed(ctx, caller("m2"), rec.Token, time.Hour); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant account shredded the card: %v", err)
	}
	if err := f.svc.ShredUnclaimed(ctx, caller("m1"), rec.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := reveal(ctx, f.svc, caller("m1"), "detokenize", "test", []uuid.UUID{rec.Token}, true); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("shredded card revealed: %v", err)
	}
	if f.codes.Len(f.now) != 0 {
		t.Fatal("security code of a shredded card still held")
	}
	want := "vault:success,reconcile.shred:failure: too_recent,detokenize:success,reconcile.shred:failure: not_found," +
		"reconcile.shred:success,detokenize:failure: not_found"
	if got := f.auditTrail(t, rec.Token); got != want {
		t.Fatalf("audit trail %s, want %s", got, want)
	}
}

// failingInsert is the real store, except that no card can be stored.
type failingInsert struct{ vaultproxy.CardStore }

func (failingInsert) InsertCardAudited(context.Context, *vaultproxy.VaultedCard, vaultproxy.AuditEvent) error {
	return errors.New("insert refused")
}

// A vaulting that fails returns no token, so it holds no security code.
func TestSecurityCodeIsNotHeldWhenVaultingFails(t *testing.T) {
	f := setup(t)
	cases := []struct {
		name string
		svc  func() *vaulting.Service
	}{
		{"Vault refuses the seal", func() *vaulting.Service {
			// The runtime policy grants no other key: a real Vault error.
			sealer := envelope.New(f.src, f.db, envelope.Config{TransitKey: "not-the-card-key"})
			return vaulting.New(f.db, f.audits, sealer, f.key, f.codes, func() time.Time { return f.now })
		}},
		{"the database refuses the card", func() *vaulting.Service {
			return vaulting.New(failingInsert{f.db}, f.audits, f.sealer, f.key, f.codes, func() time.Time { return f.now })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.svc().VaultCard(context.Background(), caller("m1"), vaulting.CardRequest{
				Kind: vaultproxy.KindCard, Number: []byte("378282246310005"), ExpirationDate: "12/30", SecurityCode: []byte("7319"),
			})
			if err == nil {
				t.Fatal("vaulting succeeded")
			}
			if n := f.codes.Len(f.now); n != 0 {
				t.Fatalf("%d security codes held after a failed vaulting", n)
			}
		})
	}
}

// pausingStore is the real store, except that once armed its next Cards
// call, having read the rows, says so on read and waits for proceed: a
// reveal that read a row just before the row changed.
type pausingStore struct {
	vaultproxy.CardStore
	armed         atomic.Bool
	read, proceed chan struct{}
}

func (p *pausingStore) Cards(ctx context.Context, m string, tokens []uuid.UUID) ([]*vaultproxy.VaultedCard, error) {
	cards, err := p.CardStore.Cards(ctx, m, tokens)
	if p.armed.CompareAndSwap(true, false) {
		p.read <- struct{}{}
		<-p.proceed
	}
	return cards, err
}

// A reveal that read a card's row before the card was deleted or its
// expiry changed may finish with what it read, but caches neither the row
// nor its record key: once Delete or UpdateExpiry has returned, this
// instance reveals the card as it now is (SECURITY.md: a deleted card stops
// working here at once, and its record key is dropped).
func TestRevealRacingAChangeDoesNotCacheTheOldRow(t *testing.T) {
	for _, change := range []string{"delete", "expiry"} {
		t.Run(change, func(t *testing.T) {
			f := setup(t)
			ctx := context.Background()
			store := &pausingStore{CardStore: f.db, read: make(chan struct{}), proceed: make(chan struct{})}
			svc := vaulting.New(store, f.audits, f.sealer, f.key, f.codes, func() time.Time { return f.now })
			rec := f.vault(t, "m1", "4111111111111111", "")
			tokens := []uuid.UUID{rec.Token}

			store.armed.Store(true)
			done := make(chan error, 1)
			go func() {
				cards, err := reveal(ctx, svc, caller("m1"), "detokenize", "test", tokens, false)
				if err == nil {
					cards[0].Zero()
				}
				done <- err
			}()
			<-store.read // the row is read; now the change
			var err error
			if change == "delete" {
				err = svc.Delete(ctx, caller("m1"), rec.Token)
			} else {
				err = svc.UpdateExpiry(ctx, caller("m1"), rec.Token, "11/31")
			}
			if err != nil {
				t.Fatal(err)
			}
			close(store.proceed)
			if err := <-done; err != nil {
				t.Fatalf("the reveal that began first: %v", err)
			}
			if n := f.sealer.CachedRecords(); change == "delete" && n != 0 {
				t.Fatalf("the deleted card's record key is cached (%d entries)", n)
			}

			cards, err := reveal(ctx, svc, caller("m1"), "detokenize", "test", tokens, false)
			switch {
			case change == "delete" && !errors.Is(err, vaultproxy.ErrNotFound):
				t.Fatalf("revealed after Delete returned: %v", err)
			case change == "expiry" && (err != nil || cards[0].Card.ExpirationDate != "11/31"):
				t.Fatalf("after UpdateExpiry returned: %v %+v", err, cards)
			}
		})
	}
}
