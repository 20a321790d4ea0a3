package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
	"github.com/payorch/tokenizer/card"
)

// ntTemplate asks for a card's network token, its expiry and a cryptogram.
const ntTemplate = `{"t":"{{ CARD_NETWORK_TOKEN_1 }}","e":"{{ CARD_NETWORK_TOKEN_EXPIRATION_DATE_MM_1 }}/{{ CARD_NETWORK_TOKEN_EXPIRATION_DATE_YY_1 }}","c":"{{ CARD_CRYPTOGRAM_1 }}"}`

// ntOrEmptyTemplate is the same with the _OR_EMPTY_STRING forms.
const ntOrEmptyTemplate = `{"t":"{{ CARD_NETWORK_TOKEN_OR_EMPTY_STRING_1 }}","e":"{{ CARD_NETWORK_TOKEN_EXPIRATION_DATE_OR_EMPTY_STRING_1 }}","c":"{{ CARD_CRYPTOGRAM_OR_EMPTY_STRING_1 }}","n":"{{ CARD_EXPIRATION_DATE_1 }}"}`

type ntSent struct{ T, E, C, N string }

func ntDetokenize(t *testing.T, s *stack.Stack, id, body string) (int, []byte) {
	t.Helper()
	return detokenize(t, s, "default", zone.DetokenizeRequest{Destination: "mock-processor", Method: "POST", Path: "/v1/payments",
		Body: body, PaymentMethod: []string{id}, Purpose: "authorization", Headers: map[string]string{"content-type": "application/json"}})
}

func (p *processor) lastNT(t *testing.T) ntSent {
	t.Helper()
	var got ntSent
	if err := json.Unmarshal([]byte(p.last()), &got); err != nil {
		t.Fatalf("processor received invalid JSON: %v", err)
	}
	return got
}

func ntCall(t *testing.T, s *stack.Stack, tok, method, path string, merchant string) (int, map[string]any, []byte) {
	t.Helper()
	var hdr []string
	if merchant != "" {
		hdr = []string{accountid.Header, merchant}
	}
	code, raw := s.Do(t, s.PublicClient, method, s.PublicURL+path, tok, nil, hdr...)
	var m map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return code, m, raw
}

func wantPlaceholderError(t *testing.T, code int, raw []byte, placeholder string) {
	t.Helper()
	if code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", code, raw)
	}
	e, err := apierror.Parse(raw)
	if err != nil || len(e.Details) != 1 || e.Details[0].Pointer != "{{ "+placeholder+" }}" ||
		e.Details[0].Type != "value_error.placeholder.value_unavailable" || !strings.Contains(e.Message, placeholder) {
		t.Fatalf("error does not name %s as unavailable: %s", placeholder, raw)
	}
}

// Network-token placeholders through the detokenized call path: the
// sandbox token service provisions on first use, the processor gets a
// network token (not the card number) with its expiry and a fresh
// cryptogram; suspension and provisioning failures fail the plain
// placeholders and empty the _OR_EMPTY_STRING ones.
func TestNetworkTokenPlaceholdersReachTheProcessor(t *testing.T) {
	proc := newProcessor(t)
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	pmTok := s.Token(t, "payment-methods.write")
	ntTok := s.Token(t, "network-tokens.read", "network-tokens.write")
	const pan = "4111111111111111"
	const failingPAN = "4000000000000119" // sandbox test card: the TSP declines it
	id := vaultCard(t, s, pmTok, pan, "")["id"].(string)

	code, raw := ntDetokenize(t, s, id, ntTemplate)
	if code != 200 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}
	first := proc.lastNT(t)
	if first.T == pan || len(first.T) != 16 || !card.Luhn([]byte(first.T)) || card.DetectScheme([]byte(first.T)) != card.SchemeVisa {
		t.Fatal("the processor did not receive a Luhn-valid visa network token distinct from the card number")
	}
	var exp card.Expiry
	if err := exp.UnmarshalText([]byte(first.E)); err != nil || exp.Expired(time.Now()) {
		t.Fatalf("network token expiry %q (%v)", first.E, err)
	}
	if raw, err := base64.StdEncoding.DecodeString(first.C); len(first.C) != 28 || err != nil || len(raw) != 20 {
		t.Fatalf("cryptogram %q", first.C)
	}
	dpans := []string{first.T}

	// The second use: the same token, a new cryptogram.
	if code, raw := ntDetokenize(t, s, id, ntTemplate); code != 200 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}
	second := proc.lastNT(t)
	if second.T != first.T || second.E != first.E || second.C == first.C || len(second.C) != 28 {
		t.Fatalf("second use: same token %v, same expiry %v, new cryptogram %v", second.T == first.T, second.E == first.E, second.C != first.C)
	}

	// One cryptogram per card per request: named twice, the same one
	// (it is single-use at the network), and still new for this request.
	if code, raw := ntDetokenize(t, s, id, `{"c":"{{ CARD_CRYPTOGRAM_1 }}","n":"{{ CARD_CRYPTOGRAM_1 }}"}`); code != 200 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}
	if twice := proc.lastNT(t); twice.C != twice.N || len(twice.C) != 28 || twice.C == second.C {
		t.Fatalf("a cryptogram named twice in one request: same %v, new %v", twice.C == twice.N, twice.C != second.C)
	}

	// It is the payment method's one token, shown by its last 4 only.
	code, list, raw := ntCall(t, s, ntTok, "GET", "/payment-methods/"+id+"/network-tokens", "")
	items, _ := list["items"].([]any)
	if code != 200 || len(items) != 1 {
		t.Fatalf("list: %d %s", code, raw)
	}
	nt := items[0].(map[string]any)
	if nt["status"] != "active" || nt["label"] != first.T[12:] || nt["scheme"] != "visa" || nt["expiration_date"] != first.E {
		t.Fatalf("listed token %v", nt)
	}
	ntID := nt["id"].(string)

	// Suspended: the plain placeholder fails and nothing is sent; the
	// _OR_EMPTY_STRING forms are "" and the request is sent.
	if code, _, raw := ntCall(t, s, ntTok, "POST", "/payment-methods/"+id+"/network-tokens/"+ntID+"/suspend", ""); code != 200 {
		t.Fatalf("suspend: %d %s", code, raw)
	}
	hits := proc.hits.Load()
	code, raw = ntDetokenize(t, s, id, ntTemplate)
	wantPlaceholderError(t, code, raw, "CARD_NETWORK_TOKEN_1")
	if proc.hits.Load() != hits {
		t.Fatal("a request with an unavailable network token was sent")
	}
	if code, raw := ntDetokenize(t, s, id, ntOrEmptyTemplate); code != 200 {
		t.Fatalf("or-empty while suspended: %d %s", code, raw)
	}
	if got := proc.lastNT(t); got.T != "" || got.E != "" || got.C != "" || got.N != futureExpiry() {
		t.Fatalf("or-empty while suspended sent %+v", got)
	}
	// Resumed: the same token again.
	if code, _, raw := ntCall(t, s, ntTok, "POST", "/payment-methods/"+id+"/network-tokens/"+ntID+"/resume", ""); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	if code, raw := ntDetokenize(t, s, id, ntOrEmptyTemplate); code != 200 || proc.lastNT(t).T != first.T {
		t.Fatalf("after resume: %d %s", code, raw)
	}

	// A card the sandbox TSP declines: the plain placeholder is a 400 that
	// names it, nothing is sent; the _OR_EMPTY_STRING forms are "".
	failing := vaultCard(t, s, pmTok, failingPAN, "")["id"].(string)
	hits = proc.hits.Load()
	code, raw = ntDetokenize(t, s, failing, `{"t":"{{ CARD_NETWORK_TOKEN_1 }}"}`)
	wantPlaceholderError(t, code, raw, "CARD_NETWORK_TOKEN_1")
	code, raw = ntDetokenize(t, s, failing, `{"c":"{{ CARD_CRYPTOGRAM_1 }}"}`)
	wantPlaceholderError(t, code, raw, "CARD_CRYPTOGRAM_1")
	if proc.hits.Load() != hits {
		t.Fatal("a request with a failed provisioning was sent")
	}
	if code, raw := ntDetokenize(t, s, failing, ntOrEmptyTemplate); code != 200 {
		t.Fatalf("or-empty with a failing card: %d %s", code, raw)
	}
	if got := proc.lastNT(t); got.T != "" || got.E != "" || got.C != "" || got.N != futureExpiry() || proc.hits.Load() != hits+1 {
		t.Fatalf("or-empty with a failing card sent %+v", got)
	}
	// Provisioning it through the API: 422, the card number not echoed.
	code, body, raw := ntCall(t, s, ntTok, "POST", "/payment-methods/"+failing+"/network-tokens", "")
	if code != 422 || body["code"] != "network_token_provisioning_failed" {
		t.Fatalf("provisioning a declined card: %d %s", code, raw)
	}
	logging.AssertNoPANIn(t, "provisioning error", string(raw), failingPAN)

	// Deleted: the next use provisions a new token.
	if code, _, raw := ntCall(t, s, ntTok, "DELETE", "/payment-methods/"+id+"/network-tokens/"+ntID, ""); code != 204 {
		t.Fatalf("delete: %d %s", code, raw)
	}
	if code, raw := ntDetokenize(t, s, id, ntTemplate); code != 200 {
		t.Fatalf("after delete: %d %s", code, raw)
	}
	renewed := proc.lastNT(t)
	if renewed.T == first.T || !card.Luhn([]byte(renewed.T)) || renewed.T == pan {
		t.Fatal("after delete the next use did not provision a new token")
	}
	dpans = append(dpans, renewed.T)

	// Card numbers and token values: in no log line, in neither database
	// in clear; cryptograms are stored nowhere.
	pans := append([]string{pan, failingPAN}, dpans...)
	assertNoCardDataLogged(t, s, pans...)
	vaultDump := s.Dump(t, "vault")
	if !strings.Contains(vaultDump, "network_tokens") {
		t.Fatal("the vault dump has no network tokens; the test proves nothing")
	}
	logging.AssertNoPANIn(t, "vault database dump", vaultDump, pans...)
	logging.AssertNoPANIn(t, "core database dump", s.Dump(t, "core"), pans...)
	for _, c := range []string{first.C, second.C, renewed.C} {
		if strings.Contains(vaultDump, c) {
			t.Fatal("a cryptogram was stored")
		}
	}
}

var ntFields = regexp.MustCompile(`^(type|id|merchant_account_id|payment_method_id|provider|status|scheme|label|expiration_date|created_at|updated_at)$`)

// The lifecycle endpoints: scopes, status codes, tenancy.
func TestNetworkTokenLifecycleEndpoints(t *testing.T) {
	s := stack.Start(t)
	pmTok := s.Token(t, "payment-methods.write")
	read := s.Token(t, "network-tokens.read")
	write := s.Token(t, "network-tokens.write")
	both := s.Token(t, "network-tokens.read", "network-tokens.write")
	id := vaultCard(t, s, pmTok, "5555555555554444", "")["id"].(string)
	base := "/payment-methods/" + id + "/network-tokens"

	for _, tc := range []struct {
		name, token, method, path string
		status                    int
	}{
		{"no token", "", "GET", base, 401},
		{"payment-methods scope lists", pmTok, "GET", base, 403},
		{"read scope provisions", read, "POST", base, 403},
		{"another resource's write scope lists", s.Token(t, "vault-forward.write"), "GET", base, 403},
		{"unknown payment method", both, "GET", "/payment-methods/7f0c1d2e-0000-4000-8000-000000000000/network-tokens", 404},
		{"malformed payment method id", both, "POST", "/payment-methods/not-a-uuid/network-tokens", 400},
		{"malformed network token id", both, "POST", base + "/42/suspend", 400},
		{"upper-case payment method id", both, "GET", "/payment-methods/" + strings.ToUpper(id) + "/network-tokens", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, raw := ntCall(t, s, tc.token, tc.method, tc.path, "")
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, raw)
			}
			if _, err := apierror.Parse(raw); err != nil {
				t.Fatalf("not the error envelope: %s", raw)
			}
		})
	}

	code, list, raw := ntCall(t, s, read, "GET", base, "")
	if code != 200 || len(list["items"].([]any)) != 0 {
		t.Fatalf("empty list: %d %s", code, raw)
	}
	code, nt, raw := ntCall(t, s, write, "POST", base, "")
	if code != 201 || nt["type"] != "network-token" || nt["status"] != "active" || nt["scheme"] != "mastercard" ||
		nt["payment_method_id"] != id || nt["merchant_account_id"] != "default" || nt["provider"] != "sandbox" {
		t.Fatalf("provision: %d %s", code, raw)
	}
	for k := range nt {
		if !ntFields.MatchString(k) {
			t.Fatalf("unexpected field %q in a network token", k)
		}
	}
	if label, _ := nt["label"].(string); !regexp.MustCompile(`^\d{4}$`).MatchString(label) {
		t.Fatalf("label %q", label)
	}
	if !regexp.MustCompile(`^(0[1-9]|1[0-2])/\d\d$`).MatchString(nt["expiration_date"].(string)) {
		t.Fatalf("expiration_date %v", nt["expiration_date"])
	}
	ntID := nt["id"].(string)
	ntPath := base + "/" + ntID
	if code, again, raw := ntCall(t, s, write, "POST", base, ""); code != 200 || again["id"] != ntID {
		t.Fatalf("provision again: %d %s", code, raw)
	}
	if code, got, raw := ntCall(t, s, read, "GET", ntPath, ""); code != 200 || got["id"] != ntID {
		t.Fatalf("get: %d %s", code, raw)
	}

	// Another merchant account: 404 everywhere, nothing changes.
	for _, r := range []struct{ method, path string }{
		{"GET", base}, {"POST", base}, {"GET", ntPath}, {"POST", ntPath + "/suspend"}, {"POST", ntPath + "/resume"}, {"DELETE", ntPath},
	} {
		if code, _, raw := ntCall(t, s, both, r.method, r.path, "other"); code != 404 {
			t.Fatalf("%s %s as another merchant: %d %s", r.method, r.path, code, raw)
		}
	}
	if code, _, raw := ntCall(t, s, both, "GET", base+"/7f0c1d2e-0000-4000-8000-000000000000", ""); code != 404 {
		t.Fatalf("unknown network token: %d %s", code, raw)
	}

	if code, got, raw := ntCall(t, s, read, "POST", ntPath+"/suspend", ""); code != 403 || got["code"] != "forbidden" {
		t.Fatalf("suspend with read scope: %d %s", code, raw)
	}
	if code, got, raw := ntCall(t, s, write, "POST", ntPath+"/suspend", ""); code != 200 || got["status"] != "suspended" {
		t.Fatalf("suspend: %d %s", code, raw)
	}
	if code, got, raw := ntCall(t, s, write, "POST", base, ""); code != 200 || got["id"] != ntID || got["status"] != "suspended" {
		t.Fatalf("provision while suspended returns the suspended token: %d %s", code, raw)
	}
	if code, got, raw := ntCall(t, s, write, "POST", ntPath+"/resume", ""); code != 200 || got["status"] != "active" {
		t.Fatalf("resume: %d %s", code, raw)
	}
	if code, _, raw := ntCall(t, s, read, "DELETE", ntPath, ""); code != 403 {
		t.Fatalf("delete with read scope: %d %s", code, raw)
	}
	if code, _, raw := ntCall(t, s, write, "DELETE", ntPath, ""); code != 204 || len(raw) != 0 {
		t.Fatalf("delete: %d %s", code, raw)
	}
	if code, got, raw := ntCall(t, s, write, "POST", ntPath+"/resume", ""); code != 422 || got["code"] != "network_token_deleted" {
		t.Fatalf("resume a deleted token: %d %s", code, raw)
	}
	code, fresh, raw := ntCall(t, s, write, "POST", base, "")
	if code != 201 || fresh["id"] == ntID {
		t.Fatalf("provision after delete: %d %s", code, raw)
	}
	code, list, raw = ntCall(t, s, read, "GET", base, "")
	items, _ := list["items"].([]any)
	if code != 200 || len(items) != 2 || items[0].(map[string]any)["status"] != "deleted" || items[1].(map[string]any)["id"] != fresh["id"] {
		t.Fatalf("list after delete: %d %s", code, raw)
	}

	// Only cards have network tokens.
	gift := struct{ ID string }{}
	code, raw = s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", pmTok,
		map[string]any{"method": "gift-card", "number": "6006491111111111", "pin": "1234"})
	if code != 201 || json.Unmarshal(raw, &gift) != nil {
		t.Fatalf("vault gift card: %d %s", code, raw)
	}
	if code, got, raw := ntCall(t, s, write, "POST", "/payment-methods/"+gift.ID+"/network-tokens", ""); code != 400 || got["code"] != "bad_request" {
		t.Fatalf("gift card network token: %d %s", code, raw)
	}

	// Deleting the payment method takes its network tokens with it.
	if code, raw := s.Do(t, s.PublicClient, "DELETE", s.PublicURL+"/payment-methods/"+id, s.Token(t, "payment-methods.write"), nil); code != 204 {
		t.Fatalf("delete payment method: %d %s", code, raw)
	}
	if code, _, raw := ntCall(t, s, read, "GET", base, ""); code != 404 {
		t.Fatalf("tokens of a deleted payment method: %d %s", code, raw)
	}
	if n := countRows(t, s.DBs.VaultDSN, "network_tokens"); n != 0 {
		t.Fatalf("%d network tokens outlived their payment method", n)
	}
	// ... having deleted the live one at its token service first, audited
	// (the first was deleted by hand above).
	s.FlushAudit(t)
	if n := auditCount(t, s, `action = 'network-token' AND purpose = 'delete' AND outcome = 'success' AND $1 = ANY(tokens)`, id); n != 2 {
		t.Fatalf("%d network token deletions audited, want 2", n)
	}
	assertNoCardDataLogged(t, s, "5555555555554444")
}

// A network token provisioned while its card is being deleted: a
// detokenized call that reached the card provisions after the deletion's
// DeleteAll. The vault keeps the card until that token too is deleted at
// its token service (the deletion's next round), so every token the TSP
// issued is deleted there, audited, and none goes silently with the card.
func TestCardDeletionRacingANetworkTokenProvisioning(t *testing.T) {
	proc := newProcessor(t)
	s := stack.Start(t, stack.WithDestinations("mock-processor="+proc.srv.URL, proc.caFile))
	id := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")["id"].(string)
	ctx := context.Background()
	connect := func() *pgx.Conn {
		t.Helper()
		conn, err := pgx.Connect(ctx, s.DBs.VaultDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		return conn
	}

	// The pause: this transaction holds the card row's KEY SHARE lock, as
	// a network token insert's foreign key check does, so the deletion,
	// past its DeleteAll, waits where it deletes the card.
	tx, err := connect().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT FROM vaulted_cards WHERE id = $1 FOR KEY SHARE`, id); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		body string
		err  error
	}
	deleted := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodDelete, s.InternalURL+"/internal/cards/"+id, nil)
		req.Header.Set(accountid.Header, "default")
		req.Header.Set(zone.ActorHeader, "test")
		resp, err := s.InternalClient.Do(req)
		if err != nil {
			deleted <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		deleted <- answer{resp.StatusCode, string(b), err}
	}()
	watch := connect()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting bool
		if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%vaulted_cards%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deletion never came to wait for the card row")
		}
	}

	// Now the detokenized call provisions a token and stores it.
	if code, raw := ntDetokenize(t, s, id, ntTemplate); code != 200 {
		t.Fatalf("detokenize during the deletion: %d %s", code, raw)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if a := <-deleted; a.err != nil || a.code != http.StatusNoContent {
		t.Fatalf("delete: %d %s %v", a.code, a.body, a.err)
	}

	if n := countRows(t, s.DBs.VaultDSN, "network_tokens"); n != 0 {
		t.Fatalf("%d network tokens outlived their card", n)
	}
	s.FlushAudit(t)
	for _, c := range []struct {
		where string
		want  int
	}{
		// The token the TSP issued is deleted there: the sandbox keeps no
		// state, so the audit trail is the record of it.
		{`action = 'network-token' AND purpose = 'provision' AND outcome = 'success'`, 1},
		{`action = 'network-token' AND purpose = 'delete' AND outcome = 'success'`, 1},
		// The card was kept once, then deleted.
		{`action = 'delete' AND outcome = 'failure: live_network_token'`, 1},
		{`action = 'delete' AND outcome = 'success'`, 1},
	} {
		if n := auditCount(t, s, c.where+` AND $1 = ANY(tokens)`, id); n != c.want {
			t.Errorf("%d audit events where %s, want %d", n, c.where, c.want)
		}
	}
}
