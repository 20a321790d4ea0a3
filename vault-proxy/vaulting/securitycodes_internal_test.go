package vaulting

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/testsupport"
)

// A code is zeroed and dropped at its TTL even when nothing touches the
// holder again (an idle vault after the last card).
func TestIdleCodesAreZeroedAtTheirTTL(t *testing.T) {
	s := NewSecurityCodes(50 * time.Millisecond)
	tok := uuid.New()
	s.Put(tok, []byte("123"), time.Now())
	s.mu.Lock()
	sealed := s.codes[tok].sealed
	s.mu.Unlock()
	testsupport.Eventually(t, "the code dropped at its TTL with no other call", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.codes) == 0
	})
	if !bytes.Equal(sealed, make([]byte, len(sealed))) {
		t.Fatal("the dropped code's sealed bytes were not zeroed")
	}
}

// A code put again replaces the first, whose timer does not drop the
// second.
func TestReplacedCodeKeepsItsOwnTTL(t *testing.T) {
	s := NewSecurityCodes(300 * time.Millisecond)
	tok := uuid.New()
	s.Put(tok, []byte("123"), time.Now())
	time.Sleep(200 * time.Millisecond)
	s.Put(tok, []byte("456"), time.Now())
	time.Sleep(150 * time.Millisecond) // past the first code's TTL
	if got := s.Take(tok, time.Now()); string(got) != "456" {
		t.Fatalf("took %q, want the second code", got)
	}
}
