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

func (m *memStore) len() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.keys) }

// countingSource counts Vault calls so tests can prove the hot path makes none.
type countingSource struct {
	KeySource
	datakeys, decrypts atomic.Int64
}

func (c *countingSource) WrappedDataKey(ctx context.Context, key string) (string, error) {
	c.datakeys.Add(1)
	return c.KeySource.WrappedDataKey(ctx, key)
}

func (c *countingSource) Decrypt(ctx context.Context, key, ct string) ([]byte, error) {
	c.decrypts.Add(1)
	return c.KeySource.Decrypt(ctx, key, ct)
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
	el.put([]byte("w1"), raw, nil, time.Now())
	el.put([]byte("w2"), []byte{4}, nil, time.Now())
	if !bytes.Equal(raw, []byte{0, 0, 0}) {
		t.Fatal("evicted record key was not zeroed")
	}
}
