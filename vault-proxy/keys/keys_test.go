package keys_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/tokenizer/transit/transittest"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool/auditspooltest"
	"github.com/payorch/vault-proxy/keys"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
	"github.com/payorch/vault-proxy/vaulting"
)

// Cards vaulted under key version 1 stay readable after a rotation that
// rewraps their data keys and retires version 1, with the real Vault.
func TestRotateKeepsCardsReadable(t *testing.T) {
	ctx := context.Background()
	db, _ := postgrestest.Open(t)
	env := transittest.New(t)
	audits := auditspooltest.Open(t, db)
	fp, _ := env.Service.HMACKey(ctx, transit.FingerprintKey)
	// MaxUses 2 spreads the cards over several data keys.
	newService := func() *vaulting.Service {
		sealer := envelope.New(env.Service, db, envelope.Config{TransitKey: transit.CardKey, MaxUses: 2})
		return vaulting.New(db, audits, sealer, fp, vaulting.NewSecurityCodes(0), nil)
	}
	svc := newService()
	c := vaulting.Caller{MerchantAccountID: "m1", Actor: "test"}
	pans := []string{"4111111111111111", "5555555555554444", "378282246310005", "4242424242424242", "6011111111111117"}
	var tokens []uuid.UUID
	for _, p := range pans {
		rec, err := svc.VaultCard(ctx, c, vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte(p), ExpirationDate: "12/30"})
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, rec.Token)
	}

	before, err := keys.GetStatus(ctx, env.KeyAdmin, db)
	if err != nil {
		t.Fatal(err)
	}
	if before.LatestVersion != 1 || len(before.InUse) != 1 || before.InUse[0].Records != 5 || before.InUse[0].DataKeys != 3 {
		t.Fatalf("status before: %+v", before)
	}

	var progress bytes.Buffer
	n, err := keys.Rotate(ctx, env.KeyAdmin, db, keys.RotateOptions{BatchSize: 2, Retire: true, Settle: time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if n != 3 || !strings.Contains(progress.String(), "rewrapped 2 data keys") || !strings.Contains(progress.String(), "rewrapped 3 data keys") {
		t.Fatalf("rewrapped %d, progress:\n%s", n, progress.String())
	}
	after, _ := keys.GetStatus(ctx, env.KeyAdmin, db)
	if after.LatestVersion != 2 || after.MinDecryptionVersion != 2 || len(after.InUse) != 1 || after.InUse[0].Version != 2 || after.InUse[0].Records != 5 {
		t.Fatalf("status after: %+v", after)
	}
	var out bytes.Buffer
	after.Print(&out)
	if !strings.Contains(out.String(), "v2: 3 data keys, 5 records") {
		t.Fatalf("status print: %s", out.String())
	}

	// A fresh process (no cached data keys) reads every card.
	cards, o, err := newService().Reveal(ctx, c, "detokenize", "test", tokens, false)
	if err != nil {
		t.Fatalf("reveal after rotation: %v", err)
	}
	o.Record(ctx, "success", nil)
	for i, card := range cards {
		if string(card.Number) != pans[i] {
			t.Fatalf("card %d changed across rotation", i)
		}
	}

	// The runtime token cannot rotate: key management needs the admin policy.
	if _, err := keys.Rotate(ctx, env.Service, db, keys.RotateOptions{}); err == nil {
		t.Fatal("the runtime token rotated the key")
	}
}

// lateKeyFixture is a vault database and transit mount, and a data key
// wrapped by the card key's first version, to be stored late.
func lateKeyFixture(t *testing.T) (context.Context, *postgres.DB, *transittest.Env, string) {
	t.Helper()
	ctx := context.Background()
	db, _ := postgrestest.Open(t)
	env := transittest.New(t)
	wrappedV1, err := env.Service.WrappedDataKey(ctx, transit.CardKey)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, db, env, wrappedV1
}

// lateStore is a vault-proxy storing a data key it unwrapped just before
// the rotation, just after Retire raised the bound: the key admin's
// SetMinDecryptionVersion, once, triggers the store.
type lateStore struct {
	keys.Transit
	store  func()
	once   sync.Once
	always bool // store a late key at every raise, not just the first
}

func (l *lateStore) SetMinDecryptionVersion(ctx context.Context, key string, v int) error {
	err := l.Transit.SetMinDecryptionVersion(ctx, key, v)
	if v > 1 {
		if l.always {
			l.store()
		} else {
			l.once.Do(l.store)
		}
	}
	return err
}

// A data key of the old version stored after Retire raised the bound is
// found, the bound lowered, the key rewrapped and the bound raised again:
// the key still unwraps, where it would otherwise be lost with its cards.
func TestRetireRewrapsADataKeyStoredMeanwhile(t *testing.T) {
	ctx, db, env, wrappedV1 := lateKeyFixture(t)
	late := uuid.New()
	tr := &lateStore{Transit: env.KeyAdmin, store: func() {
		if err := db.SaveDataKey(ctx, late, wrappedV1); err != nil {
			t.Error(err)
		}
	}}
	var progress bytes.Buffer
	if _, err := keys.Rotate(ctx, tr, db, keys.RotateOptions{Retire: true, Settle: 10 * time.Millisecond, Progress: &progress}); err != nil {
		t.Fatalf("rotate: %v\n%s", err, progress.String())
	}
	st, err := keys.GetStatus(ctx, env.KeyAdmin, db)
	if err != nil || st.MinDecryptionVersion != 2 || len(st.InUse) != 1 || st.InUse[0].Version != 2 || st.InUse[0].DataKeys != 1 {
		t.Fatalf("status %+v, %v\n%s", st, err, progress.String())
	}
	_, wrapped, err := db.DataKeysToRewrap(ctx, 3, 10) // everything below v3: the one key, now v2
	if err != nil || len(wrapped) != 1 {
		t.Fatalf("%d keys, %v", len(wrapped), err)
	}
	if _, err := env.Service.Decrypt(ctx, transit.CardKey, wrapped[0]); err != nil {
		t.Fatalf("the late data key no longer unwraps: %v", err)
	}
	if !strings.Contains(progress.String(), "stored meanwhile") {
		t.Fatalf("progress:\n%s", progress.String())
	}
}

// A rotation that keeps finding late data keys gives up with the bound
// lowered again: no key is left under a retired version.
func TestRetireGivesUpWithTheBoundLowered(t *testing.T) {
	ctx, db, env, wrappedV1 := lateKeyFixture(t)
	tr := &lateStore{Transit: env.KeyAdmin, always: true, store: func() {
		if err := db.SaveDataKey(ctx, uuid.New(), wrappedV1); err != nil {
			t.Error(err)
		}
	}}
	if _, err := keys.Rotate(ctx, tr, db, keys.RotateOptions{Retire: true, Settle: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "not retired") {
		t.Fatalf("rotate: %v", err)
	}
	st, err := keys.GetStatus(ctx, env.KeyAdmin, db)
	if err != nil || st.MinDecryptionVersion != 1 {
		t.Fatalf("status %+v, %v: the bound was left raised", st, err)
	}
	if _, err := env.Service.Decrypt(ctx, transit.CardKey, wrappedV1); err != nil {
		t.Fatalf("a late data key no longer unwraps: %v", err)
	}
}

// storeKeys stores n data keys wrapped by the card key's latest version, as
// a vault-proxy does, and returns their ids.
func storeKeys(ctx context.Context, t *testing.T, env *transittest.Env, db *postgres.DB, n int) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	for range n {
		wrapped, err := env.Service.WrappedDataKey(ctx, transit.CardKey)
		if err != nil {
			t.Fatal(err)
		}
		id := uuid.New()
		if err := db.SaveDataKey(ctx, id, wrapped); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// assertUnwrapAt checks that every data key in ids is wrapped by version and
// that the serving process can still unwrap it.
func assertUnwrapAt(ctx context.Context, t *testing.T, env *transittest.Env, db *postgres.DB, ids []uuid.UUID, version int) {
	t.Helper()
	for _, id := range ids {
		wrapped, err := db.LoadDataKey(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := postgres.TransitVersion(wrapped); v != version {
			t.Errorf("data key %s wrapped by v%d, want v%d", id, v, version)
		}
		if _, err := env.Service.Decrypt(ctx, transit.CardKey, wrapped); err != nil {
			t.Errorf("data key %s no longer unwraps: %v", id, err)
		}
	}
}

// assertKey checks the card key's latest and minimum decryption versions.
func assertKey(ctx context.Context, t *testing.T, env *transittest.Env, latest, minDecryption int) {
	t.Helper()
	info, err := env.KeyAdmin.Key(ctx, transit.CardKey)
	if err != nil || info.LatestVersion != latest || info.MinDecryptionVersion != minDecryption {
		t.Fatalf("key %+v, %v; want latest %d, min decryption %d", info, err, latest, minDecryption)
	}
}

// stuckKeys stores perVersion[i] data keys under version i+1, rotating in
// between, then raises min_decryption_version to the latest version straight
// through the transit API, as a retire that stopped before its last look (or
// a key stored after it) leaves them: below the bound, not rewrapped.
func stuckKeys(ctx context.Context, t *testing.T, env *transittest.Env, db *postgres.DB, perVersion []int) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	for _, n := range perVersion {
		ids = append(ids, storeKeys(ctx, t, env, db, n)...)
		if err := env.KeyAdmin.Rotate(ctx, transit.CardKey); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.KeyAdmin.SetMinDecryptionVersion(ctx, transit.CardKey, len(perVersion)+1); err != nil {
		t.Fatal(err)
	}
	wrapped, _ := db.LoadDataKey(ctx, ids[0])
	if _, err := env.Service.Decrypt(ctx, transit.CardKey, wrapped); err == nil {
		t.Fatal("fixture: the data key below the bound still unwraps")
	}
	return ids
}

// stoppingTransit is a key admin whose rewrap calls fail once ok of them
// have succeeded: a rotation stopped part-way.
type stoppingTransit struct {
	keys.Transit
	ok int
}

func (s *stoppingTransit) Rewrap(ctx context.Context, key string, ciphertexts []string) ([]string, error) {
	if s.ok == 0 {
		return nil, errors.New("stopped")
	}
	s.ok--
	return s.Transit.Rewrap(ctx, key, ciphertexts)
}

// Data keys below min_decryption_version no longer block a rotation: it
// lowers the bound to their version, rewraps them and puts the bound back,
// without adding a version (the rotation that left them is resumed).
func TestRotateRewrapsDataKeysBelowTheBound(t *testing.T) {
	for _, tc := range []struct {
		name       string
		perVersion []int // data keys stored under v1, v2, ... before the bound rose
		opts       keys.RotateOptions
	}{
		{"one key below the bound", []int{1}, keys.RotateOptions{}},
		{"keys of two old versions, one per batch", []int{2, 1}, keys.RotateOptions{BatchSize: 1}},
		{"with retire", []int{1}, keys.RotateOptions{Retire: true, Settle: time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db, env, _ := lateKeyFixture(t)
			ids := stuckKeys(ctx, t, env, db, tc.perVersion)
			latest := len(tc.perVersion) + 1
			var progress bytes.Buffer
			tc.opts.Progress = &progress
			if _, err := keys.Rotate(ctx, env.KeyAdmin, db, tc.opts); err != nil {
				t.Fatalf("rotate: %v\n%s", err, progress.String())
			}
			assertKey(ctx, t, env, latest, latest)
			assertUnwrapAt(ctx, t, env, db, ids, latest)
		})
	}
}

// A rotation that stops while the bound is lowered for keys below it leaves
// them readable, and the next run finishes and retires again.
func TestRotateStoppedWhileBoundLoweredIsRepaired(t *testing.T) {
	ctx, db, env, _ := lateKeyFixture(t)
	ids := stuckKeys(ctx, t, env, db, []int{1})
	opts := keys.RotateOptions{Retire: true, Settle: time.Millisecond}
	if _, err := keys.Rotate(ctx, &stoppingTransit{Transit: env.KeyAdmin}, db, opts); err == nil {
		t.Fatal("rotate did not stop")
	}
	assertUnwrapAt(ctx, t, env, db, ids, 1)
	if _, err := keys.Rotate(ctx, env.KeyAdmin, db, opts); err != nil {
		t.Fatalf("rotate again: %v", err)
	}
	assertKey(ctx, t, env, 2, 2)
	assertUnwrapAt(ctx, t, env, db, ids, 2)
}

// A rerun after a rotation stopped part-way resumes it: no new version, only
// the data keys left are rewrapped. Once everything is rewrapped, a run
// rotates again.
func TestRotateResumesAStoppedRun(t *testing.T) {
	ctx, db, env, _ := lateKeyFixture(t)
	ids := storeKeys(ctx, t, env, db, 3)
	opts := keys.RotateOptions{BatchSize: 1}
	if n, err := keys.Rotate(ctx, &stoppingTransit{Transit: env.KeyAdmin, ok: 1}, db, opts); err == nil || n != 1 {
		t.Fatalf("first run: %d rewrapped, %v", n, err)
	}
	for i, want := range []struct{ rewrapped, latest int }{{2, 2}, {3, 3}} {
		n, err := keys.Rotate(ctx, env.KeyAdmin, db, opts)
		if err != nil || n != want.rewrapped {
			t.Fatalf("run %d: %d rewrapped, %v; want %d", i+2, n, err, want.rewrapped)
		}
		assertKey(ctx, t, env, want.latest, 1)
		assertUnwrapAt(ctx, t, env, db, ids, want.latest)
	}
}
