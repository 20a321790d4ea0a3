package mockcard_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// step is one operation on an authorization and what it must answer.
type step struct {
	name   string
	op     string // captures, voids, refunds
	key    string
	body   any
	status int
	code   string // error code when status is not 200
	// the authorization after a 200
	state                        string
	captured, refunded, captures int64
}

func (s *sim) run(t *testing.T, id string, steps []step) {
	t.Helper()
	for _, st := range steps {
		code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations/"+id+"/"+st.op, st.key, st.body)
		if st.status != http.StatusOK {
			apiError(t, code, raw, st.status, st.code)
			continue
		}
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", st.name, code, raw)
		}
		a := decode(t, raw)
		if a.Status != st.state || a.CapturedAmount != st.captured || a.RefundedAmount != st.refunded || int64(len(a.Captures)) != st.captures {
			t.Fatalf("%s: %s captured %d refunded %d captures %d, want %s %d %d %d", st.name, a.Status, a.CapturedAmount, a.RefundedAmount,
				len(a.Captures), st.state, st.captured, st.refunded, st.captures)
		}
	}
}

func amount(n int64) map[string]any { return map[string]any{"amount": n} }

// Partial and multiple captures up to the authorized amount; refunds up to
// what was captured, never more in total; an operation's key is its own.
func TestCapturesAndRefunds(t *testing.T) {
	s := start(t, mockcard.Config{})
	a := s.authorize(t, "lifecycle", request(10000))
	s.run(t, a.ID, []step{
		{name: "refund before any capture", op: "refunds", key: "r0", body: amount(100), status: 422, code: "authorization_not_refundable"},
		{name: "first partial capture", op: "captures", key: "c1", body: amount(3000), status: 200, state: "captured", captured: 3000, captures: 1},
		{name: "second partial capture", op: "captures", key: "c2", body: amount(5000), status: 200, state: "captured", captured: 8000, captures: 2},
		{name: "beyond the authorized amount", op: "captures", key: "c3", body: amount(2001), status: 422, code: "amount_exceeds_authorized"},
		{name: "zero", op: "captures", key: "c3", body: amount(0), status: 400, code: "bad_request"},
		{name: "no key", op: "captures", key: "", body: amount(1), status: 400, code: "bad_request"},
		{name: "the rest, by omitting the amount", op: "captures", key: "c3", body: map[string]any{}, status: 200, state: "captured", captured: 10000, captures: 3},
		{name: "nothing left", op: "captures", key: "c4", body: amount(1), status: 422, code: "amount_exceeds_authorized"},
		{name: "void after a capture", op: "voids", key: "v1", body: nil, status: 422, code: "authorization_not_voidable"},
		{name: "partial refund", op: "refunds", key: "r1", body: amount(4000), status: 200, state: "captured", captured: 10000, refunded: 4000, captures: 3},
		{name: "beyond what was captured", op: "refunds", key: "r2", body: amount(6001), status: 422, code: "amount_exceeds_captured"},
		{name: "the rest", op: "refunds", key: "r2", body: nil, status: 200, state: "captured", captured: 10000, refunded: 10000, captures: 3},
		{name: "nothing left to refund", op: "refunds", key: "r3", body: amount(1), status: 422, code: "amount_exceeds_captured"},
		{name: "a capture key used again, another amount", op: "captures", key: "c1", body: amount(2999), status: 422, code: "idempotency_key_reused"},
	})

	// A capture key sent again with its body: the answer of the time, byte
	// for byte, and no second capture.
	code, first, _ := s.call(t, http.MethodGet, "/v1/authorizations/"+a.ID, "", nil)
	if code != 200 {
		t.Fatal(code)
	}
	code, again, h := s.call(t, http.MethodPost, "/v1/authorizations/"+a.ID+"/captures", "c1", amount(3000))
	if got := decode(t, again); code != 200 || h.Get("Idempotent-Replayed") != "true" || got.CapturedAmount != 3000 || len(got.Captures) != 1 {
		t.Fatalf("capture replay: %d %s", code, again)
	}
	code, now, _ := s.call(t, http.MethodGet, "/v1/authorizations/"+a.ID, "", nil)
	if code != 200 || !bytes.Equal(now, first) {
		t.Fatalf("a replayed capture changed the authorization:\n%s\n%s", first, now)
	}
	got := decode(t, now)
	if got.Captures[0].IdempotencyKey != "c1" || got.Captures[0].Amount != 3000 || got.Refunds[1].IdempotencyKey != "r2" || got.Refunds[1].Amount != 6000 {
		t.Fatalf("operations: %+v %+v", got.Captures, got.Refunds)
	}
	if st := s.stats(t, "lifecycle"); st.Captures != 3 || st.Refunds != 2 || st.Voids != 0 || st.Key.Charges != 1 {
		t.Fatalf("stats: %+v", st)
	}

	// The same operation key on another authorization is another operation.
	b := s.authorize(t, "lifecycle-2", request(500))
	s.run(t, b.ID, []step{{name: "c1 elsewhere", op: "captures", key: "c1", body: amount(500), status: 200, state: "captured", captured: 500, captures: 1}})
}

// A void releases an authorization with nothing captured; nothing moves on
// a voided, declined or failed one; capture at once leaves nothing to
// capture or void.
func TestVoidsAndStates(t *testing.T) {
	s := start(t, mockcard.Config{})
	a := s.authorize(t, "to-void", request(5000))
	s.run(t, a.ID, []step{
		{name: "void", op: "voids", key: "v1", body: nil, status: 200, state: "voided"},
		{name: "void again, same key", op: "voids", key: "v1", body: "{}", status: 200, state: "voided"},
		{name: "void again, new key", op: "voids", key: "v2", body: nil, status: 422, code: "authorization_not_voidable"},
		{name: "capture a voided one", op: "captures", key: "c1", body: amount(1), status: 422, code: "authorization_not_capturable"},
		{name: "a void with a body", op: "voids", key: "v3", body: amount(1), status: 400, code: "bad_request"},
	})
	code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations/"+a.ID, "", nil)
	if got := decode(t, raw); code != 200 || got.VoidedAt == nil || got.AuthorizedAmount != 5000 {
		t.Fatalf("voided: %d %s", code, raw)
	}

	for _, amt := range []int64{4051, 4096} {
		d := s.authorize(t, "not-approved-"+string(rune('a'+amt%26)), request(amt))
		s.run(t, d.ID, []step{
			{name: "capture", op: "captures", key: "c", body: amount(1), status: 422, code: "authorization_not_capturable"},
			{name: "void", op: "voids", key: "v", status: 422, code: "authorization_not_voidable"},
			{name: "refund", op: "refunds", key: "r", body: amount(1), status: 422, code: "authorization_not_refundable"},
		})
	}

	sale := s.authorize(t, "sale", request(700, field("capture", true)))
	if sale.Status != "captured" || sale.CapturedAmount != 700 || len(sale.Captures) != 0 {
		t.Fatalf("capture at once: %+v", sale)
	}
	s.run(t, sale.ID, []step{
		{name: "capture more", op: "captures", key: "c", body: amount(1), status: 422, code: "amount_exceeds_authorized"},
		{name: "void", op: "voids", key: "v", status: 422, code: "authorization_not_voidable"},
		{name: "refund", op: "refunds", key: "r", body: amount(700), status: 200, state: "captured", captured: 700, refunded: 700},
	})

	code, raw, _ = s.call(t, http.MethodPost, "/v1/authorizations/auth_unknown/captures", "k", amount(1))
	apiError(t, code, raw, http.StatusNotFound, "not_found")
	code, raw, _ = s.call(t, http.MethodGet, "/v1/authorizations/auth_unknown", "", nil)
	apiError(t, code, raw, http.StatusNotFound, "not_found")
}

// Each operation keeps its answer, so an authorization takes a bounded
// number of them.
func TestOperationsPerAuthorizationAreBounded(t *testing.T) {
	s := start(t, mockcard.Config{})
	a := s.authorize(t, "many", request(1000))
	for i := range 100 {
		if code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations/"+a.ID+"/captures", "c"+strconv.Itoa(i), amount(1)); code != http.StatusOK {
			t.Fatalf("capture %d: %d %s", i, code, raw)
		}
	}
	code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations/"+a.ID+"/captures", "c100", amount(1))
	apiError(t, code, raw, http.StatusUnprocessableEntity, "too_many_operations")
	// Sending one of them again still answers.
	if code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations/"+a.ID+"/captures", "c7", amount(1)); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, raw)
	}
}
