package e2e

import (
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/payorch/e2e/stack"
)

// walk reads a list forward with limit, then back from its last page
// through previous_cursor, and returns the ids each way in display order.
// It fails t if a page's cursors are not null exactly at the ends.
func walk(t *testing.T, c coreClient, path string, limit int) (forward, backward []string) {
	t.Helper()
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	var last pageOf
	for n := 0; ; n++ {
		p := getPage(t, c, path, q)
		if (n == 0) != (p.PreviousCursor == nil) {
			t.Fatalf("%s page %d: previous_cursor %v", path, n, p.PreviousCursor)
		}
		forward = append(forward, idsOf(p)...)
		last = p
		if p.NextCursor == nil {
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	backward = idsOf(last)
	for p := last; p.PreviousCursor != nil; {
		q.Set("cursor", *p.PreviousCursor)
		p = getPage(t, c, path, q)
		if p.NextCursor == nil {
			t.Fatalf("%s: a backward page has no next_cursor", path)
		}
		backward = append(idsOf(p), backward...)
	}
	return forward, backward
}

// vault-proxy's lists (forwarding configs, audit events) page by keyset
// with signed cursors, as core-api's do (docs/api-conventions.md): a walk goes
// both ways, and a cursor is refused with 400 on `cursor` when it is
// changed, a bare id (the old form), or presented to another list or
// another merchant account.
func TestVaultProxyListCursors(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "other")
	tok := s.Token(t, "vault-forward-configs.write", "audit-events.read", "payment-methods.write")
	configs := publicCore(s, tok, "")
	other := publicCore(s, tok, "other")

	var created []string
	for i := range 5 {
		c := configs.ok(t, 201, "POST", "/vault-forward/configs", map[string]any{"display_name": "c" + strconv.Itoa(i), "hosts": []string{"api.example"}})
		created = append(created, c["id"].(string))
	}
	other.ok(t, 201, "POST", "/vault-forward/configs", map[string]any{"display_name": "x", "hosts": []string{"api.example"}})
	forward, backward := walk(t, configs, "/vault-forward/configs", 2)
	if !slices.Equal(forward, created) || !slices.Equal(backward, created) {
		t.Fatalf("configs, oldest first: forward %v, backward %v, want %v", forward, backward, created)
	}

	for _, pan := range []string{"4111111111111111", "5555555555554444", "378282246310005"} {
		vaultCard(t, s, tok, pan, "")
	}
	s.FlushAudit(t)
	forward, backward = walk(t, configs, "/audit-events", 1)
	if len(forward) != 3 || !slices.Equal(forward, backward) {
		t.Fatalf("audit events: forward %v, backward %v", forward, backward)
	}
	for i := 1; i < len(forward); i++ {
		a, _ := strconv.Atoi(forward[i-1])
		b, _ := strconv.Atoi(forward[i])
		if a <= b {
			t.Fatalf("audit events not newest first: %v", forward)
		}
	}

	cfgCursor := *getPage(t, configs, "/vault-forward/configs", url.Values{"limit": {"2"}}).NextCursor
	auditCursor := *getPage(t, configs, "/audit-events", url.Values{"limit": {"1"}}).NextCursor
	flipped := []byte(cfgCursor)
	flipped[len(flipped)/2] ^= 1
	cases := []struct {
		name   string
		client coreClient
		path   string
		cursor string
	}{
		{"a changed cursor", configs, "/vault-forward/configs", string(flipped)},
		{"a config id, the old bare cursor", configs, "/vault-forward/configs", created[1]},
		{"an audit event id, the old bare cursor", configs, "/audit-events", forward[0]},
		{"a configs cursor on the audit list", configs, "/audit-events", cfgCursor},
		{"an audit cursor on the configs list", configs, "/vault-forward/configs", auditCursor},
		{"another merchant account's configs cursor", other, "/vault-forward/configs", cfgCursor},
		{"another merchant account's audit cursor", other, "/audit-events", auditCursor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := tc.client.do(t, "GET", tc.path+"?"+url.Values{"cursor": {tc.cursor}}.Encode(), nil)
			if e := apiError(t, raw); code != 400 || e.Code != "bad_request" || len(e.Details) != 1 || e.Details[0].Pointer != "cursor" {
				t.Fatalf("%d %s, want 400 with a detail on cursor", code, raw)
			}
		})
	}
	// A refused cursor changed nothing: the list reads as before.
	if again, _ := walk(t, configs, "/vault-forward/configs", 2); !slices.Equal(again, created) {
		t.Fatalf("configs after the refusals: %v", again)
	}
}
