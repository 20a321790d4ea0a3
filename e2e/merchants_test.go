package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/testsupport"
)

func TestMerchantAccountAdministration(t *testing.T) {
	s := stack.Start(t)
	admin := newCore(s, s.Token(t, "merchant-accounts.write"), "")

	a := admin.ok(t, 201, "POST", "/merchant-accounts", map[string]any{"id": "acme", "display_name": "Acme"})
	if a["type"] != "merchant-account" || a["id"] != "acme" || a["display_name"] != "Acme" || a["created_at"] == nil || len(a) != 5 {
		t.Fatalf("created %v", a)
	}
	admin.ok(t, 200, "GET", "/merchant-accounts/acme", nil)
	l := admin.ok(t, 200, "GET", "/merchant-accounts", nil)
	if items := l["items"].([]any); len(items) != 2 || items[0].(map[string]any)["id"] != "acme" || items[1].(map[string]any)["id"] != "default" {
		t.Fatalf("list %v", l)
	}

	code, raw := admin.do(t, "POST", "/merchant-accounts", map[string]any{"id": "acme", "display_name": "Again"})
	if e := apiError(t, raw); code != 409 || e.Code != "duplicate_record" || e.ResourceID != "acme" {
		t.Fatalf("duplicate: %d %s", code, raw)
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		pointer            string
	}{
		{"bad id", "POST", "/merchant-accounts", map[string]any{"id": "Acme Corp", "display_name": "x"}, 400, "/id"},
		// An id goes into every URL, log line and audit row: no card
		// number, however it is wrapped.
		{"a card number between hex letters as id", "POST", "/merchant-accounts", map[string]any{"id": "a4111111111111111a", "display_name": "x"}, 400, "/id"},
		{"a card number grouped with underscores as id", "POST", "/merchant-accounts", map[string]any{"id": "4111_1111_1111_1111", "display_name": "x"}, 400, "/id"},
		{"missing id", "POST", "/merchant-accounts", map[string]any{"display_name": "x"}, 400, "/id"},
		{"missing display_name", "POST", "/merchant-accounts", map[string]any{"id": "x"}, 400, "/display_name"},
		{"unknown field", "POST", "/merchant-accounts", map[string]any{"id": "x", "display_name": "x", "owner": "x"}, 400, "/owner"},
		{"id is immutable", "PUT", "/merchant-accounts/acme", map[string]any{"id": "other"}, 400, "/id"},
		{"display_name cannot be cleared", "PUT", "/merchant-accounts/acme", map[string]any{"display_name": nil}, 400, "/display_name"},
		{"display_name too long", "PUT", "/merchant-accounts/acme", map[string]any{"display_name": string(make([]byte, 201))}, 400, "/display_name"},
		{"unknown account", "PUT", "/merchant-accounts/nope", map[string]any{"display_name": "x"}, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := admin.do(t, tc.method, tc.path, tc.body)
			e := apiError(t, raw)
			if code != tc.status || (tc.pointer != "" && (len(e.Details) != 1 || e.Details[0].Pointer != tc.pointer)) {
				t.Fatalf("got %d %s", code, raw)
			}
		})
	}
	u := admin.ok(t, 200, "PUT", "/merchant-accounts/acme", map[string]any{"display_name": "Acme Ltd"})
	if u["display_name"] != "Acme Ltd" || u["created_at"] != a["created_at"] {
		t.Fatalf("updated %v", u)
	}

	// Scopes: buyer scopes do not administer accounts; read cannot write.
	for _, tok := range []string{s.Token(t, "buyers.write"), s.Token(t, "merchant-accounts.read")} {
		code, _ := newCore(s, tok, "").do(t, "DELETE", "/merchant-accounts/acme", nil)
		if code != 403 {
			t.Fatalf("DELETE without merchant-accounts.write: %d", code)
		}
	}
	if code, _ := newCore(s, "", "").do(t, "GET", "/merchant-accounts", nil); code != 401 {
		t.Fatalf("no token: %d", code)
	}

	// An account with buyers is not deleted; once empty it is, and its
	// header stops working at once.
	buyers := newCore(s, s.Token(t, "buyers.write"), "acme")
	b := buyers.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "x"})
	code, raw = admin.do(t, "DELETE", "/merchant-accounts/acme", nil)
	if e := apiError(t, raw); code != 409 || e.Code != "resource_in_use" {
		t.Fatalf("DELETE with buyers: %d %s", code, raw)
	}
	buyers.ok(t, 204, "DELETE", "/buyers/"+b["id"].(string), nil)
	admin.ok(t, 204, "DELETE", "/merchant-accounts/acme", nil)
	if code, _ := admin.do(t, "GET", "/merchant-accounts/acme", nil); code != 404 {
		t.Fatalf("GET deleted account: %d", code)
	}
	if code, _ := buyers.do(t, "GET", "/buyers", nil); code != 404 {
		t.Fatalf("buyers of a deleted account: %d", code)
	}
}

// Two accounts hold the same resources; neither can see or touch the
// other's, and a resource of another account is 404, never 403.
func TestMerchantIsolation(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "alpha")
	createMerchantAccount(t, s, "beta")
	tok := s.Token(t, "buyers.write")
	a, b := newCore(s, tok, "alpha"), newCore(s, tok, "beta")

	ba := a.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Same", "external_identifier": "same"})
	bb := b.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": "Same", "external_identifier": "same"})
	if ba["merchant_account_id"] != "alpha" || bb["merchant_account_id"] != "beta" {
		t.Fatalf("%v %v", ba, bb)
	}
	for _, tc := range []struct {
		client coreClient
		theirs map[string]any
	}{{a, bb}, {b, ba}} {
		id := tc.theirs["id"].(string)
		for _, req := range []struct {
			method string
			body   any
		}{{"GET", nil}, {"PUT", map[string]any{"display_name": "hijacked"}}, {"DELETE", nil}} {
			code, raw := tc.client.do(t, req.method, "/buyers/"+id, req.body)
			if e := apiError(t, raw); code != 404 || e.Code != "not_found" {
				t.Fatalf("%s other account's buyer as %s: %d %s", req.method, tc.client.merchant, code, raw)
			}
		}
		l := tc.client.ok(t, 200, "GET", "/buyers?search=same", nil)
		items := l["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["id"] == id {
			t.Fatalf("%s lists %v", tc.client.merchant, items)
		}
		l = tc.client.ok(t, 200, "GET", "/buyers?external_identifier=same", nil)
		if items := l["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] == id {
			t.Fatalf("%s filters to %v", tc.client.merchant, items)
		}
	}
	// Untouched by the other account's attempts.
	for _, c := range []struct {
		client coreClient
		mine   map[string]any
	}{{a, ba}, {b, bb}} {
		if got := c.client.ok(t, 200, "GET", "/buyers/"+c.mine["id"].(string), nil); got["display_name"] != "Same" {
			t.Fatalf("changed: %v", got)
		}
	}

	// A token restricted to alpha: 403 on beta, whatever the route.
	onlyAlpha := s.TokenFor(t, []string{"alpha"}, "buyers.write", "merchant-accounts.write")
	ra, rb := newCore(s, onlyAlpha, "alpha"), newCore(s, onlyAlpha, "beta")
	ra.ok(t, 200, "GET", "/buyers/"+ba["id"].(string), nil)
	for _, req := range []struct{ method, path string }{
		{"GET", "/buyers"}, {"GET", "/buyers/" + bb["id"].(string)}, {"POST", "/buyers"},
		{"GET", "/merchant-accounts/beta"}, {"PUT", "/merchant-accounts/beta"}, {"DELETE", "/merchant-accounts/beta"},
		{"GET", "/merchant-accounts/gamma"},
	} {
		code, raw := rb.do(t, req.method, req.path, map[string]any{})
		if e := apiError(t, raw); code != 403 || e.Code != "forbidden" {
			t.Fatalf("%s %s with a token for alpha: %d %s", req.method, req.path, code, raw)
		}
	}
	code, raw := ra.do(t, "POST", "/merchant-accounts", map[string]any{"id": "gamma", "display_name": "G"})
	if code != 403 {
		t.Fatalf("creating another account with a restricted token: %d %s", code, raw)
	}
	ra.ok(t, 200, "GET", "/merchant-accounts/alpha", nil)
	l := ra.ok(t, 200, "GET", "/merchant-accounts", nil)
	if items := l["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != "alpha" {
		t.Fatalf("restricted token lists %v", items)
	}
}

// accountWithConfigs starts a stack with the merchant account id, and
// returns an administrator's client and one for the account's vault-forward
// configs.
func accountWithConfigs(t *testing.T, id string) (*stack.Stack, coreClient, coreClient) {
	t.Helper()
	s := stack.Start(t)
	createMerchantAccount(t, s, id)
	admin := newCore(s, s.Token(t, "merchant-accounts.write"), "")
	configs := coreClient{s: s, c: s.PublicClient, base: s.PublicURL + "/vault-forward/configs",
		token: s.Token(t, "vault-forward-configs.write", "vault-forward-configs.read"), merchant: id}
	return s, admin, configs
}

// What vault-proxy holds for an account counts as much as core-api's own
// rows: an account with a vault-forward config (sealed credentials
// included) is not deleted, or a later account with the same id would
// inherit the config.
func TestMerchantAccountDeleteAsksTheVault(t *testing.T) {
	s, admin, configs := accountWithConfigs(t, "acme")

	c := configs.ok(t, 201, "POST", "", map[string]any{"display_name": "Processor", "hosts": []string{"api.processor.example"}})
	code, raw := admin.do(t, "DELETE", "/merchant-accounts/acme", nil)
	if code != 409 {
		t.Fatalf("DELETE with a vault-forward config = %d %s, want 409", code, raw)
	}
	if e := apiError(t, raw); e.Code != "resource_in_use" || !strings.Contains(e.Message, "vault-forward-configs: 1") {
		t.Fatalf("DELETE with a vault-forward config: %s, want resource_in_use naming it", raw)
	}
	admin.ok(t, 200, "GET", "/merchant-accounts/acme", nil) // still there

	configs.ok(t, 204, "DELETE", "/"+c["id"].(string), nil)
	admin.ok(t, 204, "DELETE", "/merchant-accounts/acme", nil)
	createMerchantAccount(t, s, "acme")
	if l := configs.ok(t, 200, "GET", "", nil); len(l["items"].([]any)) != 0 {
		t.Fatalf("the new account acme lists the old one's configs: %v", l["items"])
	}
}

// A deleted bank payment method leaves its revoked mandate behind as the
// record of the revocation; that record does not keep the account alive,
// and it survives the account, out of reach of a later account with the
// same id. A live mandate (with its payment method) still keeps it.
func TestMerchantAccountDeleteKeepsRevokedMandates(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "bank1")
	admin := newCore(s, s.Token(t, "merchant-accounts.write"), "")
	tok := s.Token(t, append(pmScopes, "payment-methods.read")...)
	pub, core := publicCore(s, tok, "bank1"), newCore(s, tok, "bank1")
	achWithMandate := map[string]any{"method": "bank", "scheme": "ach", "account_number": "000123456789", "routing_number": "011000015",
		"account_type": "checking", "account_holder_name": "Jane Doe", "mandate": map[string]any{"recurring": true}}
	mandateOf := func(t *testing.T, pm map[string]any) string {
		t.Helper()
		m, _ := pm["mandate"].(map[string]any)
		if m == nil || m["status"] != "pending" { // live until the bank's notification activates it
			t.Fatalf("no pending mandate: %v", pm)
		}
		return m["id"].(string)
	}

	pm := pub.ok(t, 201, "POST", "/payment-methods", achWithMandate)
	mandateID := mandateOf(t, pm)
	core.ok(t, 204, "DELETE", "/payment-methods/"+pm["id"].(string), nil)
	admin.ok(t, 204, "DELETE", "/merchant-accounts/bank1", nil)

	conn, err := pgx.Connect(context.Background(), s.DBs.CoreDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var status, pmID string
	if err := conn.QueryRow(context.Background(), `SELECT status, payment_method_id::text FROM mandates_of_deleted_accounts
		WHERE merchant_account_id = 'bank1' AND id = $1`, mandateID).Scan(&status, &pmID); err != nil || status != "revoked" || pmID != pm["id"] {
		t.Fatalf("the revoked mandate's record after the account's deletion: %q %q %v", status, pmID, err)
	}
	createMerchantAccount(t, s, "bank1")
	if _, err := s.CoreAPI.DB.Mandate(context.Background(), "bank1", mandateID); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("the new account bank1 reaches the old one's mandate: %v", err)
	}

	mandateOf(t, pub.ok(t, 201, "POST", "/payment-methods", achWithMandate))
	code, raw := admin.do(t, "DELETE", "/merchant-accounts/bank1", nil)
	if e := apiError(t, raw); code != 409 || e.Code != "resource_in_use" ||
		!strings.Contains(e.Message, "payment-methods: 1") || !strings.Contains(e.Message, "mandates: 1") {
		t.Fatalf("DELETE with a live mandate = %d %s, want 409 resource_in_use naming the payment method and its mandate", code, raw)
	}
}

// A deleted account's id is closed in the vault zone: nothing new is
// stored under it, and a later account with the same id starts with the
// vault holding nothing of the old one's, its audit trail included.
func TestMerchantAccountIDReusedStartsCleanInTheVault(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "acme")
	admin := newCore(s, s.Token(t, "merchant-accounts.write"), "")
	tok := s.Token(t, append(pmScopes, "payment-methods.read", "audit-events.read", "vault-forward-configs.write", "vault-forward-configs.read")...)
	pub, core := publicCore(s, tok, "acme"), newCore(s, tok, "acme")
	configs := coreClient{s: s, c: s.PublicClient, base: s.PublicURL + "/vault-forward/configs", token: tok, merchant: "acme"}
	config := map[string]any{"display_name": "Processor", "hosts": []string{"api.processor.example"}}
	card := map[string]any{"method": "card", "number": "4111111111111111", "expiration_date": futureExpiry()}
	auditTrail := func(t *testing.T) []any {
		t.Helper()
		s.FlushAudit(t)
		return pub.ok(t, 200, "GET", "/audit-events?limit=100", nil)["items"].([]any)
	}
	old := pub.ok(t, 201, "POST", "/payment-methods", card)
	core.ok(t, 204, "DELETE", "/payment-methods/"+old["id"].(string), nil)
	if len(auditTrail(t)) == 0 {
		t.Fatal("the first account left no audit event; the test proves nothing")
	}
	admin.ok(t, 204, "DELETE", "/merchant-accounts/acme", nil)

	code, raw := configs.do(t, "POST", "", config)
	if e := apiError(t, raw); code != 404 || e.Code != "not_found" || e.Message != "merchant account not found" {
		t.Fatalf("a config for the deleted account = %d %s, want 404 merchant account not found", code, raw)
	}
	code, raw = pub.do(t, "POST", "/payment-methods", card)
	if e := apiError(t, raw); code != 404 || e.Message != "merchant account not found" {
		t.Fatalf("a card for the deleted account = %d %s, want 404 merchant account not found", code, raw)
	}
	if n := vaultCount(t, s, `SELECT (SELECT count(*) FROM forward_configs WHERE merchant_account_id = 'acme') +
		(SELECT count(*) FROM vaulted_cards WHERE merchant_account_id = 'acme')`); n != 0 {
		t.Fatalf("the refused config or card was stored (%d)", n)
	}

	createMerchantAccount(t, s, "acme")
	if items := auditTrail(t); len(items) != 0 {
		t.Fatalf("the new account acme reads the old one's audit trail: %v", items)
	}
	configs.ok(t, 201, "POST", "", config)
	pm := pub.ok(t, 201, "POST", "/payment-methods", card)
	items := auditTrail(t)
	if len(items) != 1 {
		t.Fatalf("the new account's audit trail has %d events, want its one vaulting: %v", len(items), items)
	}
	if ids, _ := items[0].(map[string]any)["payment_method_ids"].([]any); len(ids) != 1 || ids[0] != pm["id"] {
		t.Fatalf("the new account's audit event %v, want the vaulting of %s", items[0], pm["id"])
	}
}

// A deletion that vault-proxy allowed but core-api's database then refused
// leaves the account as it was in both zones: vault-proxy's closure is
// cancelled, so the account still takes vault-forward configs.
func TestMerchantAccountDeleteFailedAfterTheVaultClosedIt(t *testing.T) {
	s, admin, configs := accountWithConfigs(t, "acme")

	// A row core-api does not count but its database's foreign key keeps:
	// the delete fails after vault-proxy's closure.
	s.DBs.ExecAsOwner(t, s.DBs.Core, `CREATE TABLE e2e_account_holds (merchant_account_id text REFERENCES merchant_accounts (id));
		INSERT INTO e2e_account_holds VALUES ('acme')`)
	code, raw := admin.do(t, "DELETE", "/merchant-accounts/acme", nil)
	if e := apiError(t, raw); code != 409 || e.Code != "resource_in_use" {
		t.Fatalf("DELETE refused by the database = %d %s, want 409 resource_in_use", code, raw)
	}
	admin.ok(t, 200, "GET", "/merchant-accounts/acme", nil)
	configs.ok(t, 201, "POST", "", map[string]any{"display_name": "Processor", "hosts": []string{"api.processor.example"}})
}

// A record the vault still holds under a deleted account's id (left by a
// failure, or stored before deletions closed ids) keeps the id from being
// reused, or the new account would hold it; once it is gone, the id can be
// reused.
func TestMerchantAccountIDNotReusedWhileTheVaultHoldsRecords(t *testing.T) {
	s, admin, _ := accountWithConfigs(t, "acme")
	admin.ok(t, 204, "DELETE", "/merchant-accounts/acme", nil)
	// A card of another account, moved under the deleted id.
	stray := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")["id"]
	vault := dbConn(t, s.DBs.VaultDSN)
	if _, err := vault.Exec(context.Background(), `UPDATE vaulted_cards SET merchant_account_id = 'acme' WHERE id = $1`, stray); err != nil {
		t.Fatal(err)
	}

	code, raw := admin.do(t, "POST", "/merchant-accounts", map[string]any{"id": "acme", "display_name": "Acme again"})
	if e := apiError(t, raw); code != 409 || e.Code != "resource_in_use" || !strings.Contains(e.Message, "payment-methods: 1") {
		t.Fatalf("re-creating acme over a vaulted card = %d %s, want 409 resource_in_use naming it", code, raw)
	}
	admin.ok(t, 404, "GET", "/merchant-accounts/acme", nil)
	if _, err := vault.Exec(context.Background(), `DELETE FROM vaulted_cards WHERE id = $1`, stray); err != nil {
		t.Fatal(err)
	}
	createMerchantAccount(t, s, "acme")
}

// A DELETE whose client gives up while vault-proxy waits to close the id
// (here behind a config insert's lock) leaves the account as it was in
// both zones: core-api waits for the close's answer whatever the client
// does, and cancels the closure when its own transaction then fails.
func TestMerchantAccountDeleteLeftByItsClientDuringTheClose(t *testing.T) {
	s, admin, configs := accountWithConfigs(t, "acme")
	ctx := context.Background()
	vault := dbConn(t, s.DBs.VaultDSN)
	lock := `pg_advisory_lock_shared(hashtextextended('merchant-account:' || 'acme', 0))`
	if _, err := vault.Exec(ctx, `SELECT `+lock); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodDelete, s.CoreURL+"/merchant-accounts/acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin.token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("DELETE answered %d while vault-proxy could not close the id", resp.StatusCode)
	}
	// The close goes on well after the client left: a cancellation sent
	// when it left would come before it.
	time.Sleep(time.Second)
	if _, err := vault.Exec(ctx, `SELECT pg_advisory_unlock_shared(hashtextextended('merchant-account:' || 'acme', 0))`); err != nil {
		t.Fatal(err)
	}

	testsupport.Eventually(t, "the closure to be cancelled", func() bool {
		var closed bool
		err := vault.QueryRow(ctx, `SELECT closed FROM merchant_account_closures WHERE merchant_account_id = 'acme'`).Scan(&closed)
		return err == nil && !closed
	})
	admin.ok(t, 200, "GET", "/merchant-accounts/acme", nil)
	configs.ok(t, 201, "POST", "", map[string]any{"display_name": "Processor", "hosts": []string{"api.processor.example"}})
}

// Two deletions of one account, the first failing after vault-proxy closed
// the id: its cancellation waits for the account's row, so it cannot undo
// the second deletion's closure between that one's close and its commit.
func TestMerchantAccountFailedDeletionLeavesAnothersClosure(t *testing.T) {
	s, admin, configs := accountWithConfigs(t, "acme")
	// The first deletion fails a second after vault-proxy closed the id;
	// the second takes two seconds to delete the row.
	s.DBs.ExecAsOwner(t, s.DBs.Core, `CREATE SEQUENCE e2e_deletions;
		CREATE FUNCTION e2e_slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('e2e_deletions') = 1 THEN PERFORM pg_sleep(1); RAISE EXCEPTION 'e2e: the first deletion fails'; END IF;
			PERFORM pg_sleep(2); RETURN OLD;
		END $$;
		CREATE TRIGGER e2e_slow_delete BEFORE DELETE ON merchant_accounts FOR EACH ROW EXECUTE FUNCTION e2e_slow_delete()`)
	// The cancellation takes half a second to reach the row, as a slow
	// link would.
	s.DBs.ExecAsOwner(t, s.DBs.Vault, `CREATE FUNCTION e2e_slow_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF current_query() NOT LIKE '%ON CONFLICT%' THEN PERFORM pg_sleep(0.5); END IF; RETURN NULL; END $$;
		CREATE TRIGGER e2e_slow_cancel BEFORE UPDATE ON merchant_account_closures FOR EACH STATEMENT EXECUTE FUNCTION e2e_slow_cancel()`)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = admin.do(t, "DELETE", "/merchant-accounts/acme", nil)
		}()
		time.Sleep(300 * time.Millisecond)
	}
	wg.Wait()
	if codes[0] != 500 || codes[1] != 204 {
		t.Fatalf("DELETE answers %v, want the first failing and the second deleting", codes)
	}
	admin.ok(t, 404, "GET", "/merchant-accounts/acme", nil)
	code, raw := configs.do(t, "POST", "", map[string]any{"display_name": "Processor", "hosts": []string{"api.processor.example"}})
	if code != 404 {
		t.Fatalf("a config for the deleted account = %d %s, want 404: its closure was undone", code, raw)
	}
}

// dbConn connects to one of the stack's databases for the test's length.
func dbConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
