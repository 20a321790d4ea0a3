package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

// scenarioCard is the card of the card-number conditions: it must never be
// in core-api's database, its logs or an answer.
const scenarioCard = "4000000000001091"

// fingerprintRE finds card fingerprints as vault-proxy writes them.
var fingerprintRE = regexp.MustCompile(`fp_[A-Za-z0-9_-]+`)

func scenarioBody(auth, result string, conditions map[string]any) map[string]any {
	o := map[string]any{"authentication": map[string]any{"transaction_status": auth}}
	if result != "" {
		o["result"] = map[string]any{"transaction_status": result}
	}
	b := map[string]any{"outcome": o}
	if conditions != nil {
		b["conditions"] = conditions
	}
	return b
}

// scenarioOrder lists the account's scenarios through every page and
// checks their priorities are 1..n.
func scenarioOrder(t *testing.T, core coreClient) []string {
	t.Helper()
	var ids []string
	path := "/three-ds-scenarios?limit=2"
	for {
		page := core.ok(t, http.StatusOK, http.MethodGet, path, nil)
		for _, it := range page["items"].([]any) {
			sc := it.(map[string]any)
			ids = append(ids, sc["id"].(string))
			if int(sc["priority"].(float64)) != len(ids) {
				t.Fatalf("scenario %d has priority %v", len(ids), sc["priority"])
			}
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			return ids
		}
		path = "/three-ds-scenarios?limit=2&cursor=" + next
	}
}

func TestThreeDSScenarios(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "three-ds-scenarios.write", "three-ds-scenarios.read", "payment-methods.write")
	core := newCore(s, tok, "")
	var answers []byte

	a := core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("Y", "", map[string]any{"amount": 1000}))
	b := core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "N", map[string]any{"email_address": "Jane@Example.com"}))
	first := scenarioBody("R", "", map[string]any{"bin": "5555"})
	first["priority"] = 1
	c := core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", first)
	if a["type"] != "three-ds-scenario" || a["outcome"].(map[string]any)["version"] != "2.2.0" || c["priority"].(float64) != 1 {
		t.Fatalf("created: %v / %v", a, c)
	}
	if got, want := scenarioOrder(t, core), []string{c["id"].(string), a["id"].(string), b["id"].(string)}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}

	// A card-number condition goes through vault-proxy, which vaults the
	// number as a record no payment method holds and hands core-api its
	// reference; core-api shows the card's first 6 digits and last 4.
	cards := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/three-ds-scenarios", tok,
		scenarioBody("N", "", map[string]any{"card_number": scenarioCard, "first_name": "Jane"}))
	answers = append(answers, raw...)
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil || code != http.StatusCreated {
		t.Fatalf("card scenario: %d %s", code, raw)
	}
	conds := card["conditions"].(map[string]any)
	cond, _ := conds["card_condition"].(map[string]any)
	if cond == nil || cond["bin"] != "400000" || cond["last4"] != "1091" || conds["first_name"] != "Jane" || card["priority"].(float64) != 4 {
		t.Fatalf("card scenario conditions %v", conds)
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cards+1 {
		t.Fatalf("%d vaulted records, want %d", n, cards+1)
	}
	// A PUT through vault-proxy replaces it, the old record shredded; one
	// without a card passes through as any request.
	code, raw = s.Do(t, s.PublicClient, http.MethodPut, s.PublicURL+"/three-ds-scenarios/"+card["id"].(string), tok,
		map[string]any{"conditions": map[string]any{"card_number": "5555 5555 5555 4444"}, "priority": 2})
	answers = append(answers, raw...)
	if code != http.StatusOK || !strings.Contains(string(raw), `"bin":"555555","last4":"4444"`) || strings.Contains(string(raw), cond["id"].(string)) {
		t.Fatalf("card scenario update: %d %s", code, raw)
	}
	if vaulted(t, s, cond["id"].(string)) != 0 || countRows(t, s.DBs.VaultDSN, "vaulted_cards") != cards+1 {
		t.Fatal("the replaced card condition was not shredded")
	}
	code, raw = s.Do(t, s.PublicClient, http.MethodPut, s.PublicURL+"/three-ds-scenarios/"+card["id"].(string), tok,
		map[string]any{"conditions": map[string]any{"card_number": nil, "last_name": "Doe"}})
	if code != http.StatusOK || !strings.Contains(string(raw), `"card_condition":null`) {
		t.Fatalf("card condition cleared: %d %s", code, raw)
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != cards {
		t.Fatalf("%d vaulted records after the condition was cleared, want %d", n, cards)
	}
	// A scenario core-api refuses leaves no record behind.
	code, raw = s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/three-ds-scenarios", tok,
		scenarioBody("C", "", map[string]any{"card_number": scenarioCard}))
	answers = append(answers, raw...)
	if code != http.StatusBadRequest || countRows(t, s.DBs.VaultDSN, "vaulted_cards") != cards {
		t.Fatalf("refused card scenario: %d %s, %d records", code, raw, countRows(t, s.DBs.VaultDSN, "vaulted_cards"))
	}
	// A card condition's reference is vault-proxy's to give: a payment
	// method's token, or any other, sent to core-api is refused.
	pm := vaultCard(t, s, tok, "5555555555554444", "")

	// Refusals, each with a pointer; never echoing a card number.
	for name, tc := range map[string]struct {
		url, method string
		body        any
		status      int
		pointer     string
	}{
		"C without result":          {s.CoreURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("C", "", nil), 400, "/outcome/result/transaction_status"},
		"result without C":          {s.CoreURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "N", nil), 400, "/outcome/result"},
		"unknown status":            {s.CoreURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("X", "", nil), 400, "/outcome/authentication/transaction_status"},
		"no outcome":                {s.CoreURL + "/three-ds-scenarios", http.MethodPost, map[string]any{"conditions": map[string]any{}}, 400, "/outcome"},
		"bin too long":              {s.CoreURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"bin": "411111111"}), 400, "/conditions/bin"},
		"unknown field":             {s.CoreURL + "/three-ds-scenarios", http.MethodPost, map[string]any{"outcome": scenarioBody("Y", "", nil)["outcome"], "colour": 1}, 400, "/colour"},
		"card number to core-api":   {s.CoreURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"card_number": scenarioCard}), 400, "/conditions/card_number"},
		"not a card number":         {s.PublicURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"card_number": "4000000000001092"}), 400, "/conditions/card_number"},
		"card number and reference": {s.PublicURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"card_number": scenarioCard, "card_condition": map[string]any{"id": pm["id"]}}), 400, "/conditions/card_number"},
		"a payment method's token":  {s.CoreURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"card_condition": map[string]any{"id": pm["id"]}}), 400, "/conditions/card_condition/id"},
		"an unknown reference":      {s.PublicURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"card_condition": map[string]any{"id": "00000000-0000-4000-8000-000000000000"}}), 400, "/conditions/card_condition/id"},
		"card number elsewhere":     {s.PublicURL + "/three-ds-scenarios", http.MethodPost, scenarioBody("Y", "", map[string]any{"external_identifier": scenarioCard}), 400, "/conditions/external_identifier"},
		"move before itself":        {s.CoreURL + "/three-ds-scenarios/" + a["id"].(string) + "/move", http.MethodPost, map[string]any{"before_id": a["id"]}, 400, "/before_id"},
		"move before nothing":       {s.CoreURL + "/three-ds-scenarios/" + a["id"].(string) + "/move", http.MethodPost, map[string]any{"after_id": "00000000-0000-4000-8000-000000000000"}, 400, "/after_id"},
		"priority zero":             {s.CoreURL + "/three-ds-scenarios/" + a["id"].(string), http.MethodPut, map[string]any{"priority": 0}, 400, "/priority"},
		"unknown scenario":          {s.CoreURL + "/three-ds-scenarios/00000000-0000-4000-8000-000000000000", http.MethodGet, nil, 404, ""},
		"upper-case id":             {s.CoreURL + "/three-ds-scenarios/" + strings.ToUpper(a["id"].(string)), http.MethodGet, nil, 400, "scenario_id"},
	} {
		client := http.DefaultClient
		if strings.HasPrefix(tc.url, s.PublicURL) {
			client = s.PublicClient
		}
		code, raw := s.Do(t, client, tc.method, tc.url, tok, tc.body)
		answers = append(answers, raw...)
		e := apiError(t, raw)
		if code != tc.status || (tc.pointer != "" && (len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer)) {
			t.Errorf("%s: %d %s, want %d at %q", name, code, raw, tc.status, tc.pointer)
		}
	}

	// Scopes: reading needs .read, writing .write.
	reader := newCore(s, s.Token(t, "three-ds-scenarios.read"), "")
	if code, _ := reader.do(t, http.MethodPost, "/three-ds-scenarios", scenarioBody("Y", "", nil)); code != http.StatusForbidden {
		t.Errorf("create with read scope: %d", code)
	}
	if code, _ := newCore(s, s.Token(t, "buyers.read"), "").do(t, http.MethodGet, "/three-ds-scenarios", nil); code != http.StatusForbidden {
		t.Errorf("list without scope: %d", code)
	}
	reader.ok(t, http.StatusOK, http.MethodGet, "/three-ds-scenarios/"+a["id"].(string), nil)

	// Update, move, delete.
	up := core.ok(t, http.StatusOK, http.MethodPut, "/three-ds-scenarios/"+a["id"].(string), map[string]any{"outcome": scenarioBody("A", "", nil)["outcome"]})
	if up["outcome"].(map[string]any)["authentication"].(map[string]any)["transaction_status"] != "A" || up["conditions"].(map[string]any)["amount"].(float64) != 1000 {
		t.Fatalf("update: %v", up)
	}
	core.ok(t, http.StatusOK, http.MethodPost, "/three-ds-scenarios/"+b["id"].(string)+"/move", map[string]any{"before_id": c["id"]})
	order := scenarioOrder(t, core)
	if order[0] != b["id"] {
		t.Fatalf("after the move: %v", order)
	}
	core.ok(t, http.StatusNoContent, http.MethodDelete, "/three-ds-scenarios/"+c["id"].(string), nil)
	if code, _ := core.do(t, http.MethodGet, "/three-ds-scenarios/"+c["id"].(string), nil); code != http.StatusNotFound {
		t.Errorf("deleted scenario: %d", code)
	}
	if n := len(scenarioOrder(t, core)); n != len(order)-1 {
		t.Errorf("%d scenarios after the delete, want %d", n, len(order)-1)
	}

	// Another merchant account has none of them.
	newCore(s, s.Token(t, "merchant-accounts.write"), "").ok(t, http.StatusCreated, http.MethodPost, "/merchant-accounts",
		map[string]any{"id": "acct-3ds", "display_name": "3DS"})
	other := newCore(s, tok, "acct-3ds")
	if page := other.ok(t, http.StatusOK, http.MethodGet, "/three-ds-scenarios", nil); len(page["items"].([]any)) != 0 {
		t.Errorf("another account lists %v", page["items"])
	}
	if code, _ := other.do(t, http.MethodGet, "/three-ds-scenarios/"+a["id"].(string), nil); code != http.StatusNotFound {
		t.Errorf("another account's scenario: %d", code)
	}

	// Nothing derived from the condition's number but its BIN 6 and last 4
	// is in core-api's database: no number, no fingerprint (the one
	// payment method of this test is another card's).
	dump := s.Dump(t, "core")
	logging.AssertNoPANIn(t, "the core database", dump, scenarioCard)
	// The payment method's own fingerprint appears wherever it is kept
	// (its row, the outbound events that render it); no other may.
	for _, fp := range fingerprintRE.FindAllString(dump, -1) {
		if fp != pm["fingerprint"] {
			t.Errorf("a fingerprint other than the payment method's in the core database: %s", fp)
		}
	}
	logging.AssertNoPANIn(t, "the answers", string(answers), scenarioCard, "5555555555554444")
	s.Logs.AssertNoPAN(t, scenarioCard, "5555555555554444")
}

// Reorders sent in parallel over HTTP are applied one after another: the
// priorities stay 1..n, each scenario once.
func TestThreeDSScenariosConcurrentReorders(t *testing.T) {
	s := stack.Start(t)
	core := newCore(s, s.Token(t, "three-ds-scenarios.write", "three-ds-scenarios.read"), "")
	var ids []string
	for i := range 8 {
		sc := core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("Y", "", map[string]any{"amount": i}))
		ids = append(ids, sc["id"].(string))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var path string
			var body any
			method := http.MethodPost
			switch i % 4 {
			case 0:
				method, path, body = http.MethodPut, "/three-ds-scenarios/"+ids[i%8], map[string]any{"priority": 1 + i%7}
			case 1:
				path, body = "/three-ds-scenarios/"+ids[i%8]+"/move", map[string]any{"after_id": ids[(i+3)%8]}
			case 2:
				path, body = "/three-ds-scenarios/"+ids[i%8]+"/move", map[string]any{"before_id": ids[(i+5)%8]}
			case 3:
				path, body = "/three-ds-scenarios", map[string]any{"priority": 2, "outcome": scenarioBody("N", "", nil)["outcome"]}
			}
			code, raw := core.do(t, method, path, body)
			if code != http.StatusOK && code != http.StatusCreated {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s %s: %d %s", method, path, code, raw))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	got := scenarioOrder(t, core)
	if len(got) != 16 {
		t.Fatalf("%d scenarios, want 16", len(got))
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("scenario %s listed twice", id)
		}
		seen[id] = true
	}
}
