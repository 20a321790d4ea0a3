package vaulting

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"sync"
	"time"

	"github.com/google/uuid"
)

// SecurityCodes holds card security codes in memory only (PCI DSS 3.3.1:
// never stored after authorization), encrypted under a process-lifetime key,
// for at most one use or TTL, whichever comes first, then zeroed.
type SecurityCodes struct {
	ttl  time.Duration
	aead cipher.AEAD

	mu        sync.Mutex
	codes     map[uuid.UUID]heldCode
	nextPurge time.Time
}

type heldCode struct {
	sealed  []byte
	expires time.Time
	// timer zeroes the code at its TTL even if nothing else touches the
	// holder again: the sweep in purgeLocked runs only on Put, Take and
	// Len, and an idle vault would otherwise keep the last codes for good.
	timer *time.Timer
}

// NewSecurityCodes returns an empty holder; ttl defaults to 15 minutes.
func NewSecurityCodes(ttl time.Duration) *SecurityCodes {
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	b, _ := aes.NewCipher(key)
	a, _ := cipher.NewGCM(b)
	clear(key)
	return &SecurityCodes{ttl: ttl, aead: a, codes: map[uuid.UUID]heldCode{}}
}

// Put holds code for token, encrypted, for the holder's TTL; it copies
// code.
func (s *SecurityCodes) Put(token uuid.UUID, code []byte, now time.Time) {
	s.PutUntil(token, code, now, now.Add(s.ttl))
}

// PutUntil holds code for token until expires, never longer than the
// holder's TTL from now; it copies code. An expiry already passed holds
// nothing.
func (s *SecurityCodes) PutUntil(token uuid.UUID, code []byte, now, expires time.Time) {
	if limit := now.Add(s.ttl); expires.After(limit) {
		expires = limit
	}
	ttl := expires.Sub(now)
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := s.aead.Seal(nonce, nonce, code, token[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purgeLocked(now)
	s.dropLocked(token)
	if ttl <= 0 {
		clear(sealed)
		return
	}
	h := heldCode{sealed: sealed, expires: expires}
	h.timer = time.AfterFunc(ttl, func() { s.expire(token, sealed) })
	s.codes[token] = h
}

// ChallengeKey is the key a security code is held under while the 3-D
// Secure challenge of transaction id, paid with the card of token, waits
// for the buyer: only the authorization that resumes that transaction
// names it, so no other payment with the card can take the code.
func ChallengeKey(token uuid.UUID, transactionID string) uuid.UUID {
	return uuid.NewSHA1(token, []byte("payorch 3-D Secure challenge\x00"+transactionID))
}

// expire drops token's code when its timer fires, if it is still the code
// the timer was set for (a later Put replaces it with its own timer).
func (s *SecurityCodes) expire(token uuid.UUID, sealed []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.codes[token]; ok && &h.sealed[0] == &sealed[0] {
		s.dropLocked(token)
	}
}

// dropLocked zeroes and forgets token's code, if held.
func (s *SecurityCodes) dropLocked(token uuid.UUID) {
	if h, ok := s.codes[token]; ok {
		h.timer.Stop()
		clear(h.sealed)
		delete(s.codes, token)
	}
}

// Take returns the code for token once, then forgets it. Nil when there is
// none or it expired.
func (s *SecurityCodes) Take(token uuid.UUID, now time.Time) []byte {
	s.mu.Lock()
	h, ok := s.codes[token]
	if ok {
		h.timer.Stop()
	}
	delete(s.codes, token)
	s.purgeLocked(now)
	s.mu.Unlock()
	if !ok || !now.Before(h.expires) {
		clear(h.sealed)
		return nil
	}
	n := s.aead.NonceSize()
	code, err := s.aead.Open(nil, h.sealed[:n], h.sealed[n:], token[:])
	clear(h.sealed)
	if err != nil {
		return nil
	}
	return code
}

// Held reports whether a code for token is held and unexpired; it does
// not use it.
func (s *SecurityCodes) Held(token uuid.UUID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.codes[token]
	return ok && now.Before(h.expires)
}

// Delete forgets token's code.
func (s *SecurityCodes) Delete(token uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(token)
}

// Len is how many codes are held (tests, metrics).
func (s *SecurityCodes) Len(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextPurge = time.Time{}
	s.purgeLocked(now)
	return len(s.codes)
}

// purgeLocked sweeps expired codes at most every 30 seconds, so a busy
// vault does not scan the whole map on every card; Take checks expiry itself.
func (s *SecurityCodes) purgeLocked(now time.Time) {
	if now.Before(s.nextPurge) {
		return
	}
	s.nextPurge = now.Add(30 * time.Second)
	for t, h := range s.codes {
		if !now.Before(h.expires) {
			s.dropLocked(t)
		}
	}
}
