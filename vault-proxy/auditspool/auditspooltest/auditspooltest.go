// Package auditspooltest opens a real audit spool for tests, in a
// temporary directory, shipping to the test's database.
package auditspooltest

import (
	"testing"

	"github.com/payorch/vault-proxy/auditspool"
)

// Open opens a spool that ships to sink and closes it (draining it into
// sink) when the test ends, before cleanups registered earlier, such as
// closing the database, run.
func Open(tb testing.TB, sink auditspool.Sink) *auditspool.Spool {
	tb.Helper()
	s, err := auditspool.Open(tb.TempDir(), sink, auditspool.Options{})
	if err != nil {
		tb.Fatalf("audit spool: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("audit spool: close: %v", err)
		}
	})
	return s
}
