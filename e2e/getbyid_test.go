package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/payorch/e2e/stack"
)

// unknownID is a well-formed id no record has.
const unknownID = "00000000-0000-4000-8000-000000000000"

// oneByID checks a GET /{id} route against its list: the record reads
// back exactly as the list rendered it, another merchant account's and
// an unknown id are 404 not_found, and a malformed id is 400 at the path
// parameter param with the route's rule type. path makes the route's path
// from an id; item is the record as its list answered it.
func oneByID(t *testing.T, core, other coreClient, path func(id string) string, item map[string]any, unknown, malformed, param, rule string) {
	t.Helper()
	id := item["id"].(string)
	t.Run("found", func(t *testing.T) {
		if got := core.ok(t, http.StatusOK, http.MethodGet, path(id), nil); !reflect.DeepEqual(got, item) {
			t.Fatalf("GET %s = %v\nthe list has %v", path(id), got, item)
		}
	})
	for _, tc := range []struct {
		name   string
		c      coreClient
		id     string
		status int
		code   string
	}{
		{"another account's", other, id, http.StatusNotFound, "not_found"},
		{"unknown", core, unknown, http.StatusNotFound, "not_found"},
		{"malformed", core, malformed, http.StatusBadRequest, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := tc.c.do(t, http.MethodGet, path(tc.id), nil)
			e := apiError(t, raw)
			if code != tc.status || e.Status != tc.status || e.Code != tc.code {
				t.Fatalf("GET %s = %d %s, want %d %s", path(tc.id), code, raw, tc.status, tc.code)
			}
			if tc.status != http.StatusBadRequest {
				return
			}
			if len(e.Details) != 1 || e.Details[0].Location != "path" || e.Details[0].Pointer != param || e.Details[0].Type != rule {
				t.Fatalf("details %+v, want one at path %s of type %s", e.Details, param, rule)
			}
		})
	}
}

// otherAccount makes merchant account "other" and a client of it with
// scopes.
func otherAccount(t *testing.T, s *stack.Stack, scopes ...string) coreClient {
	t.Helper()
	createMerchantAccount(t, s, "other")
	return newCore(s, s.TokenFor(t, []string{"other"}, scopes...), "other")
}

// GET /transactions/{transaction_id}/events/{event_id} reads one event
// of the transaction's list; an event under another transaction is not
// found either.
func TestTransactionEventsGetOne(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, txnScopes...)
	pm := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
	core := newCore(s, tok, "")
	id := authorized(t, s, tok, pm, 3000, "")
	another := authorized(t, s, tok, pm, 100, "")
	other := otherAccount(t, s, "transactions.read")

	items := listItems(t, core, "/transactions/"+id+"/events")
	if len(items) == 0 {
		t.Fatal("the transaction has no events")
	}
	for _, ev := range items {
		oneByID(t, core, other, func(e string) string { return "/transactions/" + id + "/events/" + e }, ev,
			unknownID, "nope", "event_id", "type_error.uuid")
	}
	t.Run("under another transaction", func(t *testing.T) {
		path := "/transactions/" + another + "/events/" + items[0]["id"].(string)
		if code, raw := core.do(t, http.MethodGet, path, nil); code != http.StatusNotFound || apiError(t, raw).Code != "not_found" {
			t.Fatalf("GET %s = %d %s", path, code, raw)
		}
	})
	t.Run("malformed transaction id", func(t *testing.T) {
		path := "/transactions/nope/events/" + items[0]["id"].(string)
		if code, raw := core.do(t, http.MethodGet, path, nil); code != http.StatusBadRequest || apiError(t, raw).Details[0].Pointer != "transaction_id" {
			t.Fatalf("GET %s = %d %s", path, code, raw)
		}
	})
}

// GET /mandates/{mandate_id} reads a mandate as its payment method shows
// it, and still once the payment method is deleted (revoked).
func TestMandateGetOne(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, bankScopes...)
	core := newCore(s, tok, "")
	pm := publicCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", achMandate)["id"].(string)
	mandate := core.ok(t, http.StatusOK, http.MethodGet, "/payment-methods/"+pm, nil)["mandate"].(map[string]any)
	if mandate["type"] != "mandate" {
		t.Fatalf("the payment method's mandate %v", mandate)
	}
	path := func(id string) string { return "/mandates/" + id }
	oneByID(t, core, otherAccount(t, s, "payment-methods.read"), path, mandate,
		"mbm_unknown", strings.Repeat("m", 256), "mandate_id", "value_error.any_str.max_length")

	core.ok(t, http.StatusNoContent, http.MethodDelete, "/payment-methods/"+pm, nil)
	if got := core.ok(t, http.StatusOK, http.MethodGet, path(mandate["id"].(string)), nil); got["status"] != "revoked" || got["revoked_at"] == nil {
		t.Fatalf("the mandate of a deleted payment method: %v", got)
	}
	if code, raw := core.do(t, http.MethodGet, path(strings.Repeat("m", 256))+"/events", nil); code != http.StatusBadRequest ||
		apiError(t, raw).Details[0].Pointer != "mandate_id" {
		t.Fatalf("events of an overlong mandate id: %d %s", code, raw)
	}
}

// GET /audit-events/{id} (vault-proxy) reads one event of the audit log
// as its list renders it, under the list's own scope.
func TestAuditEventGetOne(t *testing.T) {
	s := stack.Start(t)
	vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")
	pub := publicCore(s, s.Token(t, "audit-events.read"), "")
	createMerchantAccount(t, s, "other")
	other := publicCore(s, s.TokenFor(t, []string{"other"}, "audit-events.read"), "other")
	items := listItems(t, pub, "/audit-events")
	if len(items) == 0 {
		t.Fatal("the audit log is empty")
	}
	path := func(id string) string { return "/audit-events/" + id }
	oneByID(t, pub, other, path, items[0], "9223372036854775807", "01", "id", "type_error.integer")
	for _, tc := range []struct {
		name   string
		c      coreClient
		method string
		status int
	}{
		{"another scope", publicCore(s, s.Token(t, "payment-methods.write"), ""), http.MethodGet, http.StatusForbidden},
		{"another method", pub, http.MethodDelete, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, raw := tc.c.do(t, tc.method, path(items[0]["id"].(string)), nil); code != tc.status || apiError(t, raw).Status != tc.status {
				t.Fatalf("%s = %d %s, want %d", tc.method, code, raw, tc.status)
			}
		})
	}
}

// GET /events/{event_id} answers an outbound event's payload byte for
// byte as its delivery carried it.
func TestEventsGetOne(t *testing.T) {
	s := stack.Start(t, withWebhooks())
	c := newCore(s, s.Token(t, webhookScopes...), "default")
	h := newHookReceiver(t)
	c.ok(t, http.StatusCreated, http.MethodPost, "/webhook-subscriptions", map[string]any{"url": h.srv.URL + "/hooks"})
	c.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"display_name": "Ana"})
	r := h.await(t, "buyer.created", func(r hookRequest) bool { return r.Name == "buyer.created" })

	path := func(id string) string { return "/events/" + id }
	if code, raw := c.do(t, http.MethodGet, path(r.ID), nil); code != http.StatusOK || !bytes.Equal(raw, r.Body) {
		t.Fatalf("GET %s = %d %s\nthe delivery sent %s", path(r.ID), code, raw, r.Body)
	}
	var delivered map[string]any
	if err := json.Unmarshal(r.Body, &delivered); err != nil {
		t.Fatal(err)
	}
	oneByID(t, c, otherAccount(t, s, "webhook-subscriptions.read"), path, delivered, unknownID, "nope", "event_id", "type_error.uuid")
}
