// Package envelope encrypts card records with keys that Vault transit
// protects, without a Vault round trip per card.
//
// Three levels:
//
//	transit key (in Vault, never leaves it)
//	  └─ data key: AES-256, from transit/datakey/wrapped; its wrapped form is
//	     stored in the vault database, its plaintext cached in memory only,
//	     bounded in time and use count, zeroed on eviction
//	       └─ record key: AES-256, random per record, sealed by the data key
//	          and stored in the record's row
//	            └─ record: sealed by the record key
//
// Every seal binds associated data (merchant account and token id) at both
// record levels, so a ciphertext or wrapped record key copied onto another
// row does not open. Deleting a row destroys its record key: the record is
// crypto-shredded even where its ciphertext survives elsewhere. Rotating the
// transit key rewraps data keys inside Vault without exposing records.
package envelope

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// KeySource is Vault transit (tokenizer/transit.Client implements it).
type KeySource interface {
	WrappedDataKey(ctx context.Context, key string) (string, error)
	Decrypt(ctx context.Context, key, ciphertext string) ([]byte, error)
}

// KeyStore persists wrapped data keys (the vault database implements it).
type KeyStore interface {
	SaveDataKey(ctx context.Context, id uuid.UUID, wrapped string) error
	LoadDataKey(ctx context.Context, id uuid.UUID) (wrapped string, err error)
}

// KeyDeleter is a KeyStore that can also remove a data key. When the store
// has it, a new data key that was stored but could not be unwrapped is
// removed again, so that a Vault decrypt outage does not leave a row behind
// for every seal attempted during it.
type KeyDeleter interface {
	DeleteDataKey(ctx context.Context, id uuid.UUID) error
}

// Config bounds how long and how often a data key stays in memory.
type Config struct {
	TransitKey string        // e.g. transit.CardKey
	MaxUses    int           // encryptions (seal) or decryptions (open) per cached key; default 1,000,000
	MaxAge     time.Duration // default 1h
	CacheSize  int           // unwrapped data keys held for opening; default 256
	// RecordCacheSize bounds the opened record keys kept for hot records;
	// default 10,000; negative disables the cache.
	RecordCacheSize int
	// RefreshTimeout bounds one shared fetch or unwrap of a data key. It
	// runs apart from the context of the caller that started it, so that
	// one caller giving up fails neither the others waiting for the key
	// nor the call itself; default 30s.
	RefreshTimeout time.Duration
	Now            func() time.Time // default time.Now
}

// Sealed is an encrypted record as it is stored.
type Sealed struct {
	DataKeyID  uuid.UUID
	WrappedKey []byte // nonce || AES-GCM(data key, record key)
	Ciphertext []byte // nonce || AES-GCM(record key, plaintext)
}

// ErrOpen is returned for every record that fails authentication: tampered,
// copied to another row, or sealed under another key. It says nothing more.
var ErrOpen = errors.New("envelope: record does not authenticate")

// Sealer seals and opens records. It is safe for concurrent use.
type Sealer struct {
	src   KeySource
	store KeyStore
	cfg   Config

	// mu guards the fields below and is never held across a Vault or
	// database call: a caller waits for those through a flight, on its own
	// context.
	mu         sync.Mutex
	current    *dataKey               // sealing key
	cache      map[uuid.UUID]*dataKey // opening keys, including current
	order      []uuid.UUID            // insertion order for eviction
	loading    map[uuid.UUID]*flight  // one unwrap per key at a time
	refreshing *flight                // one new sealing key at a time
	records    *recordCache
}

type dataKey struct {
	id      uuid.UUID
	raw     []byte
	aead    cipher.AEAD
	expires time.Time
	uses    int
}

// flight is one data key fetch or unwrap under way, shared by every caller
// that needs its key; each waits for it on its own context.
type flight struct {
	done chan struct{}
	key  *dataKey
	err  error
}

// wait returns the flight's outcome, or ctx's error if ctx ends first.
func (f *flight) wait(ctx context.Context) (*dataKey, error) {
	select {
	case <-f.done:
		return f.key, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// New returns a Sealer; it calls Vault lazily, on the first seal or open.
func New(src KeySource, store KeyStore, cfg Config) *Sealer {
	if cfg.MaxUses <= 0 {
		cfg.MaxUses = 1_000_000
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Hour
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 256
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RecordCacheSize == 0 {
		cfg.RecordCacheSize = 10_000
	}
	if cfg.RefreshTimeout <= 0 {
		cfg.RefreshTimeout = 30 * time.Second
	}
	return &Sealer{src: src, store: store, cfg: cfg, cache: map[uuid.UUID]*dataKey{}, loading: map[uuid.UUID]*flight{},
		records: newRecordCache(cfg.RecordCacheSize, cfg.MaxAge, cfg.MaxUses)}
}

// Seal encrypts plaintext for the row that aad identifies.
func (s *Sealer) Seal(ctx context.Context, plaintext, aad []byte) (Sealed, error) {
	dk, err := s.sealingKey(ctx)
	if err != nil {
		return Sealed{}, err
	}
	recordKey := make([]byte, 32)
	if _, err := rand.Read(recordKey); err != nil {
		return Sealed{}, err
	}
	defer clear(recordKey)
	rk, err := newAEAD(recordKey)
	if err != nil {
		return Sealed{}, err
	}
	return Sealed{
		DataKeyID:  dk.id,
		WrappedKey: seal(dk.aead, recordKey, aad),
		Ciphertext: seal(rk, plaintext, aad),
	}, nil
}

// Open decrypts a record sealed for the row that aad identifies. The caller
// owns the returned slice and should clear it after use. A caller that read
// the row from the database uses OpenSince instead.
func (s *Sealer) Open(ctx context.Context, rec Sealed, aad []byte) ([]byte, error) {
	return s.open(ctx, rec, aad, nil)
}

// Drops counts the record keys forgotten so far (Forget, Purge). A caller
// takes it before it reads a record's row and gives it to OpenSince.
func (s *Sealer) Drops() uint64 { return s.records.dropCount() }

// OpenSince is Open for a row read after Drops returned since. If a record
// key was forgotten since, the row may be of a record deleted meanwhile,
// whose Forget came before this open: the key opened is then not cached,
// where Open would bring it back for up to MaxAge.
func (s *Sealer) OpenSince(ctx context.Context, rec Sealed, aad []byte, since uint64) ([]byte, error) {
	return s.open(ctx, rec, aad, &since)
}

func (s *Sealer) open(ctx context.Context, rec Sealed, aad []byte, rowSince *uint64) ([]byte, error) {
	cached, since := s.records.get(rec.WrappedKey, s.cfg.Now())
	if rowSince != nil {
		since = *rowSince
	}
	if cached != nil {
		pt, err := open(cached, rec.Ciphertext, aad)
		if err != nil {
			return nil, ErrOpen
		}
		return pt, nil
	}
	dk, err := s.openingKey(ctx, rec.DataKeyID)
	if err != nil {
		return nil, err
	}
	recordKey, err := open(dk.aead, rec.WrappedKey, aad)
	if err != nil {
		return nil, ErrOpen
	}
	rk, err := newAEAD(recordKey)
	if err != nil {
		clear(recordKey)
		return nil, err
	}
	pt, err := open(rk, rec.Ciphertext, aad)
	if err != nil {
		clear(recordKey)
		return nil, ErrOpen
	}
	s.records.put(rec.WrappedKey, recordKey, rk, s.cfg.Now(), since)
	return pt, nil
}

// Forget drops a record's cached key; call it when the record is deleted.
// An Open of the record already under way does not cache the key again.
func (s *Sealer) Forget(rec Sealed) { s.records.forget(rec.WrappedKey) }

// sealingKey returns the current data key, fetching a new one from Vault
// when the current one has reached its age or use bound.
func (s *Sealer) sealingKey(ctx context.Context) (*dataKey, error) {
	for {
		s.mu.Lock()
		if dk := s.current; dk != nil && s.usableLocked(dk) {
			dk.uses++
			s.mu.Unlock()
			return dk, nil
		}
		// A new key is needed about once an hour: concurrent sealers wait
		// for one fetch rather than each fetch their own.
		f := s.refreshing
		if f == nil {
			f = &flight{done: make(chan struct{})}
			s.refreshing = f
			s.launch(ctx, f, s.newSealingKey, func() {
				s.refreshing = nil
				if f.err == nil {
					s.current = f.key
					s.insertLocked(f.key)
				}
			})
		}
		s.mu.Unlock()
		if _, err := f.wait(ctx); err != nil {
			return nil, err
		}
		// Take a use of the new key under the lock, as every sealer does, so
		// that the use bound holds however many were waiting.
	}
}

// newSealingKey fetches a data key from Vault, stores it and unwraps it.
func (s *Sealer) newSealingKey(ctx context.Context) (*dataKey, error) {
	wrapped, err := s.src.WrappedDataKey(ctx, s.cfg.TransitKey)
	if err != nil {
		return nil, fmt.Errorf("envelope: new data key: %w", err)
	}
	// Stored before it is unwrapped: a key rotation that retires the
	// version wrapping it (keys rotate -retire) then either finds it
	// stored and rewraps it, or raised the bound first, and the unwrap
	// below fails, so no card is sealed under a key that could never be
	// unwrapped again. (A key stored but not unwrapped seals nothing.)
	id := uuid.New()
	if err := s.store.SaveDataKey(ctx, id, wrapped); err != nil {
		return nil, fmt.Errorf("envelope: save data key: %w", err)
	}
	raw, err := s.src.Decrypt(ctx, s.cfg.TransitKey, wrapped)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("envelope: unwrap new data key: %w", err), s.discard(ctx, id))
	}
	dk, err := s.newDataKey(id, raw, s.cfg.Now())
	if err != nil {
		return nil, errors.Join(err, s.discard(ctx, id))
	}
	return dk, nil
}

// discard removes a stored data key that could not be unwrapped. That is
// safe: no record refers to it, since only this refresh knows its id until
// it becomes the sealing key, which it now never will (and the database's
// foreign keys refuse to remove a key a record refers to). It gets a
// deadline of its own, because the refresh may have failed by running out
// of its own.
func (s *Sealer) discard(ctx context.Context, id uuid.UUID) error {
	d, ok := s.store.(KeyDeleter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RefreshTimeout)
	defer cancel()
	if err := d.DeleteDataKey(ctx, id); err != nil {
		return fmt.Errorf("envelope: remove the data key that did not unwrap: %w", err)
	}
	return nil
}

// openingKey returns the unwrapped data key id from the cache, or unwraps it
// through Vault once, however many callers ask at the same time.
func (s *Sealer) openingKey(ctx context.Context, id uuid.UUID) (*dataKey, error) {
	s.mu.Lock()
	if dk, ok := s.cache[id]; ok {
		if s.usableLocked(dk) {
			dk.uses++
			s.mu.Unlock()
			return dk, nil
		}
		s.evictLocked(id)
	}
	f, ok := s.loading[id]
	if !ok {
		f = &flight{done: make(chan struct{})}
		s.loading[id] = f
		s.launch(ctx, f, func(ctx context.Context) (*dataKey, error) { return s.unwrap(ctx, id) }, func() {
			delete(s.loading, id)
			if f.err == nil {
				s.insertLocked(f.key)
			}
		})
	}
	s.mu.Unlock()
	return f.wait(ctx)
}

// launch runs fetch for f in its own goroutine, under ctx's values but not
// its cancellation and bounded by RefreshTimeout: the caller that started
// the flight is only one of those waiting for it, and its deadline or
// cancellation must not become the others' error. install runs under s.mu
// with f's outcome before the waiters see it.
func (s *Sealer) launch(ctx context.Context, f *flight, fetch func(context.Context) (*dataKey, error), install func()) {
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RefreshTimeout)
		defer cancel()
		f.key, f.err = fetch(ctx)
		s.mu.Lock()
		install()
		s.mu.Unlock()
		close(f.done)
	}()
}

// usableLocked reports whether dk is within its age and use bounds.
func (s *Sealer) usableLocked(dk *dataKey) bool {
	return dk.uses < s.cfg.MaxUses && s.cfg.Now().Before(dk.expires)
}

func (s *Sealer) unwrap(ctx context.Context, id uuid.UUID) (*dataKey, error) {
	wrapped, err := s.store.LoadDataKey(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("envelope: load data key: %w", err)
	}
	raw, err := s.src.Decrypt(ctx, s.cfg.TransitKey, wrapped)
	if err != nil {
		return nil, fmt.Errorf("envelope: unwrap data key: %w", err)
	}
	return s.newDataKey(id, raw, s.cfg.Now())
}

func (s *Sealer) newDataKey(id uuid.UUID, raw []byte, now time.Time) (*dataKey, error) {
	aead, err := newAEAD(raw)
	if err != nil {
		clear(raw)
		return nil, err
	}
	return &dataKey{id: id, raw: raw, aead: aead, expires: now.Add(s.cfg.MaxAge)}, nil
}

func (s *Sealer) insertLocked(dk *dataKey) {
	if _, ok := s.cache[dk.id]; ok {
		s.evictLocked(dk.id)
	}
	for len(s.cache) >= s.cfg.CacheSize && len(s.order) > 0 {
		s.evictLocked(s.order[0])
	}
	s.cache[dk.id] = dk
	s.order = append(s.order, dk.id)
}

// evictLocked forgets a data key and zeroes its bytes. The expanded AES key
// schedule inside cipher.AEAD cannot be reached to zero; it becomes garbage
// with the AEAD. That is a limit of Go's crypto, stated here honestly.
func (s *Sealer) evictLocked(id uuid.UUID) {
	dk, ok := s.cache[id]
	if !ok {
		return
	}
	delete(s.cache, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	if s.current == dk {
		s.current = nil
	}
	clear(dk.raw)
}

// Purge drops every cached data key and record key (tests, key rotation,
// shutdown).
func (s *Sealer) Purge() {
	s.records.purge()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.order) > 0 {
		s.evictLocked(s.order[0])
	}
}

// Cached reports how many unwrapped data keys are in memory.
func (s *Sealer) Cached() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cache)
}

// CachedRecords reports how many opened record keys are in memory.
func (s *Sealer) CachedRecords() int { return s.records.len() }

func newAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func seal(a cipher.AEAD, plaintext, aad []byte) []byte {
	out := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return a.Seal(out, out, plaintext, aad)
}

func open(a cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < a.NonceSize()+a.Overhead() {
		return nil, ErrOpen
	}
	n := a.NonceSize()
	return a.Open(nil, sealed[:n], sealed[n:], aad)
}
