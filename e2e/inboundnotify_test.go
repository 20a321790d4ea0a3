package e2e

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/e2e/stack"
)

// The checks every simulator's inbound notifications share at core-api
// (mock-bank's and mock-redirect's alike): a forged one is refused, one
// about no transaction is counted and recorded nowhere.

// refusesForged sends a notification signed with a wrong secret and an
// unsigned one (ids idPrefix + the secret): each is 401 unauthorized and
// neither is counted as unmatched.
func refusesForged(t *testing.T, s *stack.Stack, idPrefix string, send func(secret, id string) (int, []byte)) {
	t.Helper()
	counted := unmatchedCount(t, s)
	for _, secret := range []string{"whsec_not_the_right_one_at_all", ""} {
		code, raw := send(secret, idPrefix+secret)
		if code != http.StatusUnauthorized || !bytes.Contains(raw, []byte(`"code":"unauthorized"`)) {
			t.Fatalf("forged (secret %q): %d %s", secret, code, raw)
		}
	}
	if unmatchedCount(t, s) != counted {
		t.Fatal("a forged notification was counted")
	}
}

// countsUnmatched sends (through send) a rightly signed notification id
// about no transaction: it is 200 unmatched, counted once, and recorded
// as no event.
func countsUnmatched(t *testing.T, s *stack.Stack, id string, send func() (int, []byte)) {
	t.Helper()
	counted := unmatchedCount(t, s)
	code, raw := send()
	if code != http.StatusOK || !bytes.Contains(raw, []byte(`"outcome":"unmatched"`)) {
		t.Fatalf("unmatched: %d %s", code, raw)
	}
	if got := unmatchedCount(t, s); got != counted+1 {
		t.Fatalf("counter %d -> %d", counted, got)
	}
	if n := countRows(t, s.DBs.CoreDSN, "transaction_events WHERE notification_id = '"+id+"'"); n != 0 {
		t.Fatalf("%d events of an unmatched notification", n)
	}
}

// captureAnswerLostThenSynced captures 400 of authorized transaction id
// with the simulator's answer lost on link: the capture stays pending
// until a sync finds it at the simulator, captured once.
func captureAnswerLostThenSynced(t *testing.T, core coreClient, link *walletLink, id string) {
	t.Helper()
	link.arm("answer", "/captures")
	code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/capture", map[string]any{"amount": 400}, "Idempotency-Key", "lost-cap-"+id)
	if code != http.StatusOK || !strings.Contains(string(raw), `"capture_pending_amount":400`) {
		t.Fatalf("capture, answer lost: %d %s", code, raw)
	}
	got := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/sync", nil)
	if got["captured_amount"] != 400.0 || got["capture_pending_amount"] != 0.0 || got["status"] != "capture_succeeded" {
		t.Fatalf("synced: %v", got)
	}
}
