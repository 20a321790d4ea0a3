package envelope

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/tokenizer/transit/transittest"
)

// memStore keeps wrapped data keys; the PostgreSQL store is exercised by
// vault-proxy's tests. Vault itself is real here.
type memStore struct {
	mu   sync.Mutex
	keys map[uuid.UUID]string
}

func newMemStore() *memStore { return &memStore{keys: map[uuid.UUID]string{}} }

func (m *memStore) SaveDataKey(_ context.Context, id uuid.UUID, wrapped string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[id] = wrapped
	return nil
}

func (m *memStore) LoadDataKey(_ context.Context, id uuid.UUID) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.keys[id]
	if !ok {
		return "", errors.New("no such data key")
	}
	return w, nil
}

func (m *memStore) DeleteDataKey(_ context.Context, id uuid.UUID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, id)
	return nil
}

func (m *memStore) len() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.keys) }

// countingSource counts Vault calls so tests can prove the hot path makes
// none, and its gates can hold them as a hung Vault would.
type countingSource struct {
	KeySource
	datakeys, decrypts       atomic.Int64
	datakeyGate, decryptGate gate
}

func (c *countingSource) WrappedDataKey(ctx context.Context, key string) (string, error) {
	c.datakeys.Add(1)
	if err := c.datakeyGate.pass(ctx); err != nil {
		return "", err
	}
	return c.KeySource.WrappedDataKey(ctx, key)
}

func (c *countingSource) Decrypt(ctx context.Context, key, ct string) ([]byte, error) {
	c.decrypts.Add(1)
	if err := c.decryptGate.pass(ctx); err != nil {
		return nil, err
	}
	return c.KeySource.Decrypt(ctx, key, ct)
}

// gate, once armed, holds every call until released or until the call's
// context ends, and reports each call it holds on held.
type gate struct {
	armed   atomic.Bool
	held    chan struct{}
	open    chan struct{}
	release func()
}

// arm starts holding calls; the test's end releases them.
func (g *gate) arm(t *testing.T) {
	g.held, g.open = make(chan struct{}, 64), make(chan struct{})
	g.release = sync.OnceFunc(func() { close(g.open) })
	t.Cleanup(g.release)
	g.armed.Store(true)
}

func (g *gate) pass(ctx context.Context) error {
	if !g.armed.Load() {
		return nil
	}
	g.held <- struct{}{}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time         { return c.t }
func (c *clock) add(d time.Duration)    { c.t = c.t.Add(d) }
func aad(merchant, token string) []byte { return []byte(merchant + "|" + token) }

func setup(t *testing.T, cfg Config) (*Sealer, *countingSource, *memStore, *transittest.Env) {
	t.Helper()
	env := transittest.New(t)
	src := &countingSource{KeySource: env.Service}
	store := newMemStore()
	cfg.TransitKey = transit.CardKey
	return New(src, store, cfg), src, store, env
}

func TestSealOpenAgainstRealVault(t *testing.T) {
	ctx := context.Background()
	s, src, _, _ := setup(t, Config{})
	plain := []byte("record payload 4111111111111111")
	rec, err := s.Seal(ctx, plain, aad("m1", "tok-1"))
	if err != nil {
		t.Fatalf("seal: %v", err)
	}
	if bytes.Contains(rec.Ciphertext, []byte("4111111111111111")) || bytes.Contains(rec.WrappedKey, plain[:8]) {
		t.Fatal("sealed record holds plaintext")
	}
	got, err := s.Open(ctx, rec, aad("m1", "tok-1"))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatal("round trip changed the record")
	}
	// A thousand more seals and opens with one data key: no Vault call.
	before := src.datakeys.Load() + src.decrypts.Load()
	for i := 0; i < 1000; i++ {
		r, err := s.Seal(ctx, plain, aad("m1", "t"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open(ctx, r, aad("m1", "t")); err != nil {
			t.Fatal(err)
		}
	}
	if after := src.datakeys.Load() + src.decrypts.Load(); after != before {
		t.Fatalf("hot path called Vault %d times", after-before)
	}
}

func TestRecordsAreBoundToTheirRow(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := setup(t, Config{})
	a, err := s.Seal(ctx, []byte("card A"), aad("m1", "tok-a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Seal(ctx, []byte("card B"), aad("m1", "tok-b"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		rec  Sealed
		aad  []byte
	}{
		{"ciphertext copied to another token", Sealed{a.DataKeyID, a.WrappedKey, a.Ciphertext}, aad("m1", "tok-b")},
		{"ciphertext copied to another merchant", a, aad("m2", "tok-a")},
		{"wrapped key of another row", Sealed{a.DataKeyID, b.WrappedKey, a.Ciphertext}, aad("m1", "tok-a")},
		{"ciphertext of another row", Sealed{a.DataKeyID, a.WrappedKey, b.Ciphertext}, aad("m1", "tok-a")},
		{"flipped bit", Sealed{a.DataKeyID, a.WrappedKey, flip(a.Ciphertext)}, aad("m1", "tok-a")},
		{"truncated", Sealed{a.DataKeyID, a.WrappedKey, a.Ciphertext[:10]}, aad("m1", "tok-a")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Open(ctx, tc.rec, tc.aad); !errors.Is(err, ErrOpen) {
				t.Fatalf("Open = %v, want ErrOpen", err)
			}
		})
	}
	if _, err := s.Open(ctx, Sealed{uuid.New(), a.WrappedKey, a.Ciphertext}, aad("m1", "tok-a")); err == nil {
		t.Fatal("opened with an unknown data key id")
	}
}

func flip(b []byte) []byte {
	c := bytes.Clone(b)
	c[len(c)-1] ^= 1
	return c
}

func TestDataKeyBounds(t *testing.T) {
	ctx := context.Background()
	t.Run("use count", func(t *testing.T) {
		s, src, store, _ := setup(t, Config{MaxUses: 3})
		for i := 0; i < 7; i++ {
			if _, err := s.Seal(ctx, []byte("x"), aad("m", "t")); err != nil {
				t.Fatal(err)
			}
		}
		if n := src.datakeys.Load(); n != 3 {
			t.Fatalf("fetched %d data keys for 7 seals at 3 uses each, want 3", n)
		}
		if store.len() != 3 {
			t.Fatalf("stored %d data keys, want 3", store.len())
		}
	})
	t.Run("age", func(t *testing.T) {
		c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		s, src, _, _ := setup(t, Config{MaxAge: time.Minute, Now: c.now})
		rec, err := s.Seal(ctx, []byte("x"), aad("m", "t"))
		if err != nil {
			t.Fatal(err)
		}
		c.add(2 * time.Minute)
		if _, err := s.Seal(ctx, []byte("y"), aad("m", "t")); err != nil {
			t.Fatal(err)
		}
		if n := src.datakeys.Load(); n != 2 {
			t.Fatalf("fetched %d data keys across an expiry, want 2", n)
		}
		decrypts := src.decrypts.Load()
		if _, err := s.Open(ctx, rec, aad("m", "t")); err != nil {
			t.Fatalf("open after expiry: %v", err)
		}
		if src.decrypts.Load() != decrypts+1 {
			t.Fatal("expired key was not unwrapped again through Vault")
		}
	})
	t.Run("eviction zeroes key bytes", func(t *testing.T) {
		s, _, _, _ := setup(t, Config{CacheSize: 2, MaxUses: 1})
		if _, err := s.Seal(ctx, []byte("x"), aad("m", "t")); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		first := s.current
		s.mu.Unlock()
		for i := 0; i < 3; i++ {
			if _, err := s.Seal(ctx, []byte("x"), aad("m", "t")); err != nil {
				t.Fatal(err)
			}
		}
		if s.Cached() > 2 {
			t.Fatalf("cache holds %d keys, bound is 2", s.Cached())
		}
		if !bytes.Equal(first.raw, make([]byte, len(first.raw))) {
			t.Fatal("evicted data key was not zeroed")
		}
	})
}

func TestConcurrentOpensUnwrapOnce(t *testing.T) {
	ctx := context.Background()
	s, src, _, _ := setup(t, Config{})
	rec, err := s.Seal(ctx, []byte("x"), aad("m", "t"))
	if err != nil {
		t.Fatal(err)
	}
	s.Purge()
	before := src.decrypts.Load()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Open(ctx, rec, aad("m", "t")); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := src.decrypts.Load() - before; n != 1 {
		t.Fatalf("%d Vault unwraps for one data key, want 1", n)
	}
}

func TestRecordsSurviveTransitRotation(t *testing.T) {
	ctx := context.Background()
	s, _, store, env := setup(t, Config{})
	rec, err := s.Seal(ctx, []byte("before rotation"), aad("m", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.KeyAdmin.Rotate(ctx, transit.CardKey); err != nil {
		t.Fatal(err)
	}
	old, _ := store.LoadDataKey(ctx, rec.DataKeyID)
	rewrapped, err := env.KeyAdmin.Rewrap(ctx, transit.CardKey, []string{old})
	if err != nil {
		t.Fatal(err)
	}
	_ = store.SaveDataKey(ctx, rec.DataKeyID, rewrapped[0])
	if err := env.KeyAdmin.SetMinDecryptionVersion(ctx, transit.CardKey, 2); err != nil {
		t.Fatal(err)
	}
	s.Purge()
	got, err := s.Open(ctx, rec, aad("m", "t"))
	if err != nil {
		t.Fatalf("open after rotation: %v", err)
	}
	if string(got) != "before rotation" {
		t.Fatal("record changed across rotation")
	}
}

func TestRecordCache(t *testing.T) {
	ctx := context.Background()
	s, src, _, _ := setup(t, Config{})
	a, err := s.Seal(ctx, []byte("card A"), aad("m1", "tok-a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, a, aad("m1", "tok-a")); err != nil {
		t.Fatal(err)
	}
	if s.records.len() != 1 {
		t.Fatalf("record cache holds %d entries after one open", s.records.len())
	}
	// A cache hit still checks the row binding: the cached key of row A does
	// not open row A's ciphertext claimed by row B.
	if _, err := s.Open(ctx, a, aad("m1", "tok-b")); !errors.Is(err, ErrOpen) {
		t.Fatalf("cache hit ignored associated data: %v", err)
	}
	s.Purge()
	s.mu.Lock()
	s.cache = map[uuid.UUID]*dataKey{} // no data key either
	s.mu.Unlock()
	before := src.decrypts.Load()
	if _, err := s.Open(ctx, a, aad("m1", "tok-a")); err != nil {
		t.Fatal(err)
	}
	if src.decrypts.Load() != before+1 {
		t.Fatal("open after purge did not go back to Vault")
	}
	s.Forget(a)
	if s.records.len() != 0 {
		t.Fatal("Forget kept the record key")
	}
	el := newRecordCache(1, time.Hour, 10)
	raw := []byte{1, 2, 3}
	el.put([]byte("w1"), raw, nil, time.Now(), 0)
	el.put([]byte("w2"), []byte{4}, nil, time.Now(), 0)
	if !bytes.Equal(raw, []byte{0, 0, 0}) {
		t.Fatal("evicted record key was not zeroed")
	}
}

// An open of a record whose data key is in memory does not wait for a new
// sealing key, and a sealer waiting for one gives up at its own deadline.
func TestKeyRefreshDoesNotHoldUpOthers(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, src, _, _ := setup(t, Config{MaxAge: time.Minute, Now: c.now, RecordCacheSize: -1})
	rec, err := s.Seal(context.Background(), []byte("x"), aad("m", "t"))
	if err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Minute) // the sealing key is past its age bound...
	if _, err := s.Open(context.Background(), rec, aad("m", "t")); err != nil {
		t.Fatal(err) // ...and its data key is unwrapped again, for opening
	}
	src.datakeyGate.arm(t)
	sealed := make(chan error, 1)
	go func() {
		_, err := s.Seal(context.Background(), []byte("y"), aad("m", "t"))
		sealed <- err
	}()
	<-src.datakeyGate.held // Vault hangs on the new sealing key

	cases := []struct {
		name string
		call func(context.Context) error
		want error
	}{
		{"open under a cached data key", func(ctx context.Context) error {
			_, err := s.Open(ctx, rec, aad("m", "t"))
			return err
		}, nil},
		{"seal waiting for the new key", func(ctx context.Context) error {
			_, err := s.Seal(ctx, []byte("z"), aad("m", "t"))
			return err
		}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx) }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
			case <-time.After(2 * time.Second):
				src.datakeyGate.release()
				<-done
				t.Fatal("waited for the sealing key's refresh past its own deadline")
			}
		})
	}
	src.datakeyGate.release()
	if err := <-sealed; err != nil {
		t.Fatalf("the seal that started the refresh: %v", err)
	}
}

// A caller that gives up on a shared unwrap does not pass its context's
// error to the others waiting for the same data key.
func TestUnwrapOutlivesTheCallerThatStartedIt(t *testing.T) {
	s, src, _, _ := setup(t, Config{})
	rec, err := s.Seal(context.Background(), []byte("x"), aad("m", "t"))
	if err != nil {
		t.Fatal(err)
	}
	s.Purge()
	before := src.decrypts.Load()
	src.decryptGate.arm(t)
	first, cancel := context.WithCancel(context.Background())
	firstErr, waiterErr := make(chan error, 1), make(chan error, 1)
	open := func(ctx context.Context, out chan<- error) {
		_, err := s.Open(ctx, rec, aad("m", "t"))
		out <- err
	}
	go open(first, firstErr)
	<-src.decryptGate.held // the first caller's unwrap is under way
	go open(context.Background(), waiterErr)
	// Time for the waiter to join that unwrap rather than start its own: it
	// is what made the first caller's error the waiter's.
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up: %v", err)
	}
	src.decryptGate.release()
	if err := <-waiterErr; err != nil {
		t.Fatalf("the waiter got %v", err)
	}
	if n := src.decrypts.Load() - before; n != 1 {
		t.Fatalf("%d unwraps, want the one shared", n)
	}
}

// A record forgotten (deleted) while its open is under way: the open may
// finish, but the record's key is not cached again.
func TestForgetDuringAnOpenIsNotUndone(t *testing.T) {
	s, src, _, _ := setup(t, Config{})
	rec, err := s.Seal(context.Background(), []byte("x"), aad("m", "t"))
	if err != nil {
		t.Fatal(err)
	}
	s.Purge() // the next open unwraps the data key through Vault
	src.decryptGate.arm(t)
	opened := make(chan error, 1)
	go func() {
		_, err := s.Open(context.Background(), rec, aad("m", "t"))
		opened <- err
	}()
	<-src.decryptGate.held
	s.Forget(rec)
	src.decryptGate.release()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if n := s.CachedRecords(); n != 0 {
		t.Fatalf("the forgotten record's key is cached again (%d entries)", n)
	}
}

// A row read before its record was deleted, and opened after the delete's
// Forget, is opened but its key not cached: OpenSince with the drop count
// taken before the read. With no forget between, it is cached as by Open.
func TestOpenSinceARowReadBeforeAForget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forget bool
		cached int
	}{{"forgotten between read and open", true, 0}, {"nothing forgotten", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _, _ := setup(t, Config{})
			rec, err := s.Seal(context.Background(), []byte("x"), aad("m", "t"))
			if err != nil {
				t.Fatal(err)
			}
			s.Purge()
			since := s.Drops() // then the row is read
			if tc.forget {
				s.Forget(rec) // the record is deleted
			}
			pt, err := s.OpenSince(context.Background(), rec, aad("m", "t"), since)
			if err != nil || string(pt) != "x" {
				t.Fatalf("open = %q, %v", pt, err)
			}
			if n := s.CachedRecords(); n != tc.cached {
				t.Fatalf("%d record keys cached, want %d", n, tc.cached)
			}
		})
	}
}

// A new data key that Vault does not unwrap is not left in the store.
func TestDataKeyThatDoesNotUnwrapIsNotKept(t *testing.T) {
	s, src, store, _ := setup(t, Config{RefreshTimeout: 100 * time.Millisecond})
	src.decryptGate.arm(t) // Vault's decrypt hangs past the refresh's bound
	for i := 0; i < 3; i++ {
		if _, err := s.Seal(context.Background(), []byte("x"), aad("m", "t")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("seal %d during the outage: %v", i, err)
		}
	}
	if store.len() != 0 {
		t.Fatalf("%d data keys left stored by failed seals", store.len())
	}
	src.decryptGate.release()
	if _, err := s.Seal(context.Background(), []byte("x"), aad("m", "t")); err != nil {
		t.Fatal(err)
	}
	if store.len() != 1 {
		t.Fatalf("%d data keys stored after the outage, want 1", store.len())
	}
}
