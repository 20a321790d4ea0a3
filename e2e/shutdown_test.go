package e2e

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Shutting vault-proxy down while a forward waits on its target: the
// public listener stops taking connections at once, the internal one
// keeps serving while the public one drains (a public request under way
// may need core-api to call it back), the forward runs to its end, and
// its audit record, written after the send, is stored before the spool
// closes.
func TestShutdownDrainsAForwardAndKeepsItsAuditRecord(t *testing.T) {
	s, pki := forwardStack(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	tg := newTarget(t, pki.ca, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}, nil)
	createForwardConfig(t, s, s.Token(t, "vault-forward-configs.write"), tg.Host)
	pm := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")["id"].(string)
	tok := s.Token(t, "vault-forward.write")

	type answer struct {
		status int
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.PublicURL+"/vault-forward", strings.NewReader(`{"n":"{{ CARD_NUMBER_1 }}"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-vault-forward-url", tg.URL+"/pay")
		req.Header.Set("x-vault-forward-payment-methods", pm)
		resp, err := s.PublicClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		resp.Body.Close()
		answered <- answer{status: resp.StatusCode}
	}()
	<-arrived

	closed := make(chan error, 1)
	go func() { closed <- s.VaultProxy.Close() }()
	// The public listener stops taking connections while the forward is
	// still held at the target...
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Plain TCP: whether the listener accepts at all.
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.PublicURL, "https://"), time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the public listener still took connections while draining")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// ... and the internal one still serves core-api meanwhile.
	if code, _ := internalCard(t, s, "default", pm); code != http.StatusOK {
		close(release)
		t.Fatalf("the internal listener during the public drain: %d", code)
	}
	close(release)
	if a := <-answered; a.err != nil || a.status != http.StatusOK {
		t.Fatalf("the forward in flight at shutdown: %d, %v", a.status, a.err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}

	// Close shipped the spool: the record is in the database.
	if n := auditCount(t, s, `action = 'forward' AND outcome = 'success' AND $1 = ANY(tokens::text[])`, pm); n != 1 {
		t.Fatalf("%d audit records of the forward, want 1", n)
	}
}
