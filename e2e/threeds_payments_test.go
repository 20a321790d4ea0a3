package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
	vpapp "github.com/payorch/vault-proxy/app"
)

// threeDSPayment is a card payment of amount asking for 3-D Secure of
// tdsAmount.
func threeDSPayment(pm string, amount, tdsAmount int64) map[string]any {
	b := payment(pm, amount)
	b["three_d_secure"] = map[string]any{"amount": tdsAmount}
	return b
}

// eventNames are transaction id's events, oldest first.
func eventNames(t *testing.T, core coreClient, id string) []string {
	t.Helper()
	var names []string
	for _, e := range core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/events", nil)["items"].([]any) {
		names = append([]string{e.(map[string]any)["name"].(string)}, names...)
	}
	return names
}

// Every outcome of the simulator's scenarios, through the HTTP API: a
// frictionless Y or A continues to mock-card with a mock CAVV and the
// scheme's ECI; a challenge waits for the buyer and its completion over
// HTTP applies the scenario's result; N, R, U and timeout end the payment
// before any authorization, with their codes; each step is an event.
func TestThreeDSPayments(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "three-ds-scenarios.write", "payment-methods.write", "transactions.write", "transactions.read", "buyers.write")
	core := newCore(s, tok, "")
	const visa, mastercard = "4111111111111111", "5555555555554444"
	visaPM := vaultCard(t, s, tok, visa, "")["id"].(string)
	mcPM := vaultCard(t, s, tok, mastercard, "")["id"].(string)
	buyer := core.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"billing_details": map[string]any{
		"first_name": "Jane", "last_name": "Doe", "email_address": "Jane.Doe@example.com"}})["id"].(string)

	// The card's scenario goes through vault-proxy (its number is card
	// data); the others straight to core-api.
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/three-ds-scenarios", tok,
		scenarioBody("A", "", map[string]any{"card_number": mastercard, "external_identifier": "mc-attempt"}))
	var cardScenario map[string]any
	if err := json.Unmarshal(raw, &cardScenario); err != nil || code != http.StatusCreated {
		t.Fatalf("card scenario: %d %s", code, raw)
	}
	core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "Y", map[string]any{"email_address": "jane.doe@EXAMPLE.com", "amount": 1007}))
	for amount, o := range map[int64][2]string{1003: {"N", ""}, 1004: {"R", ""}, 1005: {"U", ""}, 1006: {"timeout", ""},
		1008: {"C", "N"}, 1009: {"C", "timeout"}, 1010: {"Y", ""}} {
		core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody(o[0], o[1], map[string]any{"amount": amount}))
	}

	type want struct {
		status, tdsStatus, method, errorCode, eci string
		events                                    []string
	}
	authenticated := []string{"transaction-created", "three-d-secure-authenticated", "authorization-succeeded"}
	for name, tc := range map[string]struct {
		body map[string]any
		want want
	}{
		"no scenario: frictionless Y": {threeDSPayment(visaPM, 1001, 1001), want{"authorization_succeeded", "Y", "frictionless", "", "05", authenticated}},
		"Y, amount above":             {threeDSPayment(visaPM, 1010, 5000), want{"authorization_succeeded", "Y", "frictionless", "", "05", authenticated}},
		"A by card":                   {withExternalID(threeDSPayment(mcPM, 1001, 1001), "mc-attempt"), want{"authorization_succeeded", "A", "frictionless", "", "01", authenticated}},
		"A card, other payment":       {withExternalID(threeDSPayment(visaPM, 1001, 1001), "mc-attempt"), want{"authorization_succeeded", "Y", "frictionless", "", "05", authenticated}},
		"N":                           {threeDSPayment(visaPM, 1003, 1003), want{"authorization_declined", "N", "frictionless", "three_d_secure_not_authenticated", "", []string{"transaction-created", "three-d-secure-declined"}}},
		"R":                           {threeDSPayment(visaPM, 1004, 1004), want{"authorization_declined", "R", "frictionless", "three_d_secure_rejected", "", []string{"transaction-created", "three-d-secure-declined"}}},
		"U":                           {threeDSPayment(visaPM, 1005, 1005), want{"authorization_failed", "U", "frictionless", "three_d_secure_unavailable", "", []string{"transaction-created", "three-d-secure-failed"}}},
		"timeout":                     {threeDSPayment(visaPM, 1006, 1006), want{"authorization_failed", "timeout", "frictionless", "three_d_secure_timeout", "", []string{"transaction-created", "three-d-secure-failed"}}},
	} {
		t.Run(name, func(t *testing.T) {
			code, tx := pay(t, s, tok, tc.body)
			if code != http.StatusCreated {
				t.Fatalf("pay: %d %v", code, tx)
			}
			checkThreeDS(t, tx, tc.want.status, tc.want.tdsStatus, tc.want.method, tc.want.errorCode, tc.want.eci, tc.body["three_d_secure"].(map[string]any)["amount"].(int64))
			if got := eventNames(t, core, tx["id"].(string)); !slices.Equal(got, tc.want.events) {
				t.Errorf("events %v, want %v", got, tc.want.events)
			}
			if tc.want.eci == "" {
				return
			}
			// mock-card received the authentication with the authorization.
			rec := processorRecord(t, s, tx["payment_service_transaction_id"].(string))
			tds := tx["three_d_secure"].(map[string]any)["response_data"].(map[string]any)
			if rec.ThreeDSecure == nil || rec.ThreeDSecure.CAVV != tds["cavv"] || rec.ThreeDSecure.ECI != tc.want.eci || rec.ThreeDSecure.Status != tc.want.tdsStatus {
				t.Errorf("mock-card got %+v, the transaction says %v", rec.ThreeDSecure, tds)
			}
		})
	}

	challenge := func(t *testing.T, amount int64) map[string]any {
		t.Helper()
		body := threeDSPayment(visaPM, amount, amount)
		body["buyer_id"] = buyer
		code, tx := pay(t, s, tok, body)
		if code != http.StatusCreated {
			t.Fatalf("pay: %d %v", code, tx)
		}
		checkThreeDS(t, tx, "buyer_approval_pending", "C", "challenge", "", "", amount)
		if got := eventNames(t, core, tx["id"].(string)); !slices.Equal(got, []string{"transaction-created", "three-d-secure-challenge-requested"}) {
			t.Errorf("events %v", got)
		}
		return tx
	}
	complete := func(t *testing.T, tx map[string]any) (int, map[string]any) {
		t.Helper()
		url := tx["payment_method"].(map[string]any)["approval_url"].(string)
		if !strings.HasPrefix(url, s.PublicURL+"/three-ds-challenges/"+tx["id"].(string)+"?token=") {
			t.Fatalf("approval_url %s", url)
		}
		// The buyer's browser opens the page, then sends its form.
		page, err := s.PublicClient.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		html, _ := io.ReadAll(page.Body)
		page.Body.Close()
		if page.StatusCode != http.StatusOK || !strings.Contains(string(html), `<form method="post"`) {
			t.Fatalf("challenge page: %d %s", page.StatusCode, html)
		}
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, url, "", nil)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return code, m
	}
	for name, tc := range map[string]struct {
		amount int64
		want   want
	}{
		"challenge Y": {1007, want{"authorization_succeeded", "Y", "challenge", "", "05",
			[]string{"transaction-created", "three-d-secure-challenge-requested", "three-d-secure-authenticated", "authorization-succeeded"}}},
		"challenge N": {1008, want{"authorization_declined", "N", "challenge", "three_d_secure_challenge_failed", "",
			[]string{"transaction-created", "three-d-secure-challenge-requested", "three-d-secure-declined"}}},
		"challenge timeout": {1009, want{"authorization_failed", "timeout", "challenge", "three_d_secure_challenge_timeout", "",
			[]string{"transaction-created", "three-d-secure-challenge-requested", "three-d-secure-failed"}}},
	} {
		t.Run(name, func(t *testing.T) {
			tx := challenge(t, tc.amount)
			code, done := complete(t, tx)
			if code != http.StatusOK {
				t.Fatalf("complete: %d %v", code, done)
			}
			checkThreeDS(t, done, tc.want.status, tc.want.tdsStatus, tc.want.method, tc.want.errorCode, tc.want.eci, tc.amount)
			if got := eventNames(t, core, tx["id"].(string)); !slices.Equal(got, tc.want.events) {
				t.Errorf("events %v, want %v", got, tc.want.events)
			}
			// Once completed, the challenge cannot be completed again.
			if code, again := complete(t, tx); code != http.StatusConflict || again["code"] != "completion_token_used" {
				t.Errorf("second completion: %d %v", code, again)
			}
		})
	}

	// A forged or another transaction's token changes nothing.
	t.Run("challenge tokens", func(t *testing.T) {
		a, b := challenge(t, 1007), challenge(t, 1007)
		urlA := a["payment_method"].(map[string]any)["approval_url"].(string)
		tokA := urlA[strings.Index(urlA, "token="):]
		for name, tc := range map[string]struct {
			url    string
			status int
			code   string
		}{
			"forged":        {s.PublicURL + "/three-ds-challenges/" + a["id"].(string) + "?token=tc1.AAAA.BBBB", 403, "completion_token_invalid"},
			"another's":     {s.PublicURL + "/three-ds-challenges/" + b["id"].(string) + "?" + tokA, 403, "completion_token_mismatch"},
			"no token":      {s.PublicURL + "/three-ds-challenges/" + a["id"].(string), 400, "bad_request"},
			"direct's kind": {s.PublicURL + "/transactions/" + a["id"].(string) + "/complete?" + tokA, 403, "completion_token_invalid"},
		} {
			method := http.MethodPost
			if strings.Contains(tc.url, "/complete") {
				method = http.MethodGet
			}
			code, raw := s.Do(t, s.PublicClient, method, tc.url, "", nil)
			if code != tc.status || apiError(t, raw).Code != tc.code {
				t.Errorf("%s: %d %s", name, code, raw)
			}
		}
		if tx := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+a["id"].(string), nil); tx["status"] != "buyer_approval_pending" {
			t.Errorf("after refusals: %v", tx["status"])
		}
	})

	// three_d_secure.amount below the transaction's is 422 with a pointer
	// to it; other bad values are 400; nothing is created.
	t.Run("refusals", func(t *testing.T) {
		for name, tc := range map[string]struct {
			body    map[string]any
			status  int
			code    string
			pointer string
		}{
			"amount below":   {threeDSPayment(visaPM, 1001, 1000), 422, "three_d_secure_amount_too_low", "/three_d_secure/amount"},
			"amount zero":    {threeDSPayment(visaPM, 1001, 0), 400, "bad_request", "/three_d_secure/amount"},
			"amount missing": {withThreeDS(payment(visaPM, 1001), map[string]any{}), 400, "bad_request", "/three_d_secure/amount"},
			"unknown field":  {withThreeDS(payment(visaPM, 1001), map[string]any{"amount": 1001, "cavv": "x"}), 400, "bad_request", "/three_d_secure/cavv"},
			"pix":            {withThreeDS(map[string]any{"amount": 1001, "currency": "BRL", "payment_method": map[string]any{"method": "pix"}}, map[string]any{"amount": 1001}), 400, "bad_request", "/three_d_secure"},
		} {
			code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, tc.body)
			e := apiError(t, raw)
			if code != tc.status || e.Code != tc.code || len(e.Details) == 0 || e.Details[0].Pointer != tc.pointer {
				t.Errorf("%s: %d %s", name, code, raw)
			}
		}
	})

	// Deleting the card's scenario shreds its vaulted number; the card's
	// payments then match no scenario.
	t.Run("deleting the card's scenario", func(t *testing.T) {
		ref := cardScenario["conditions"].(map[string]any)["card_condition"].(map[string]any)["id"].(string)
		if vaulted(t, s, ref) != 1 {
			t.Fatal("the card condition is not vaulted")
		}
		// Every authentication that carried the card condition was a
		// detokenized call to mock-3ds, audited with the payment's card
		// first and the condition's record after it.
		s.FlushAudit(t)
		conn, err := pgx.Connect(context.Background(), s.DBs.VaultDSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var calls int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = 'detokenize'
			AND purpose = '3ds-authentication' AND outcome = 'success' AND tokens = ARRAY[$1, $2]::uuid[]`, mcPM, ref).Scan(&calls); err != nil || calls == 0 {
			t.Fatalf("%d audited authentications of the card with its condition (%v)", calls, err)
		}
		core.ok(t, http.StatusNoContent, http.MethodDelete, "/three-ds-scenarios/"+cardScenario["id"].(string), nil)
		if vaulted(t, s, ref) != 0 {
			t.Fatal("the deleted scenario's card condition was not shredded")
		}
		code, tx := pay(t, s, tok, withExternalID(threeDSPayment(mcPM, 1001, 1001), "mc-attempt"))
		if code != http.StatusCreated {
			t.Fatalf("pay: %d %v", code, tx)
		}
		checkThreeDS(t, tx, "authorization_succeeded", "Y", "frictionless", "", "02", 1001)
	})

	logging.AssertNoPANIn(t, "the core database", s.Dump(t, "core"), visa, mastercard)
	s.Logs.AssertNoPAN(t, visa, mastercard)
}

func withExternalID(b map[string]any, id string) map[string]any {
	b["external_identifier"] = id
	return b
}

func withThreeDS(b map[string]any, tds map[string]any) map[string]any {
	b["three_d_secure"] = tds
	return b
}

// checkThreeDS checks a transaction's status, error code and 3-D Secure
// summary; eci "" means no response data.
func checkThreeDS(t *testing.T, tx map[string]any, status, tdsStatus, method, errorCode, eci string, amount int64) {
	t.Helper()
	tds, _ := tx["three_d_secure"].(map[string]any)
	if tx["status"] != status || tds == nil || tds["status"] != tdsStatus || tds["method"] != method || tds["version"] == "" ||
		int64(tds["amount"].(float64)) != amount {
		t.Fatalf("transaction %v %v: three_d_secure %v", tx["status"], tx["error_code"], tds)
	}
	if got, _ := tx["error_code"].(string); got != errorCode {
		t.Errorf("error_code %q, want %q", got, errorCode)
	}
	rd, _ := tds["response_data"].(map[string]any)
	if eci == "" {
		if rd != nil {
			t.Errorf("response_data %v, want null", rd)
		}
		return
	}
	cavv, _ := rd["cavv"].(string)
	if b, err := base64.StdEncoding.DecodeString(cavv); err != nil || len(cavv) != 28 || len(b) != 20 || rd["eci"] != eci {
		t.Errorf("response_data %v, want a 28-character CAVV and ECI %s", rd, eci)
	}
}

// A challenge the buyer never completes: its transaction says until when
// it waits (approval_expires_at), and once that has passed the sweep
// fails it as a challenge's timeout; completing it then is 409.
func TestThreeDSChallengeExpiry(t *testing.T) {
	s := stack.Start(t, withSync(200*time.Millisecond, time.Hour))
	tok := s.Token(t, "three-ds-scenarios.write", "payment-methods.write", "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	pm := vaultCard(t, s, tok, "4111111111111111", "")["id"].(string)
	core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "Y", nil))
	code, tx := pay(t, s, tok, threeDSPayment(pm, 1200, 1200))
	if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" {
		t.Fatalf("pay: %d %v", code, tx)
	}
	expires, err := time.Parse(time.RFC3339, tx["approval_expires_at"].(string))
	if err != nil || time.Until(expires) < 14*time.Minute || time.Until(expires) > 16*time.Minute {
		t.Fatalf("approval_expires_at %v (%v), want in 15 minutes", tx["approval_expires_at"], err)
	}
	// The buyer's 15 minutes pass.
	conn, err := pgx.Connect(context.Background(), s.DBs.CoreDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE transactions SET approval_expires_at = now() - interval '1 second' WHERE id = $1`, tx["id"]); err != nil {
		t.Fatal(err)
	}
	id := tx["id"].(string)
	for deadline := time.Now().Add(20 * time.Second); tx["status"] == "buyer_approval_pending" && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		tx = core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
	}
	checkThreeDS(t, tx, "authorization_failed", "timeout", "challenge", "three_d_secure_challenge_timeout", "", 1200)
	if got := eventNames(t, core, id); !slices.Equal(got, []string{"transaction-created", "three-d-secure-challenge-requested", "three-d-secure-failed"}) {
		t.Errorf("events %v", got)
	}
	url := tx["payment_method"].(map[string]any)["approval_url"].(string)
	if code, raw := s.Do(t, s.PublicClient, http.MethodPost, url, "", nil); code != http.StatusConflict {
		t.Errorf("completing an expired challenge: %d %s", code, raw)
	}
}

// A challenged payment resumes as a frictionless one would have gone: a
// card given in full with its security code and connection options
// through vault-proxy waits on its challenge; once the buyer completes
// it, mock-card's authorization carries the option's effect (the soft
// descriptor) and shows the security code was presented (cvv_result),
// and vault-proxy holds the code no longer (a second use is refused). A
// hold that ended before the buyer came back (vault-proxy's TTL, short
// here) authorizes without the code. A challenge that ends without an
// authorization (declined, failed) has core-api tell vault-proxy, which
// wipes the code at once rather than at the hold's expiry. The card
// number and the code are in no log line, answer or core database dump.
func TestThreeDSChallengeResumesWithOptionsAndCode(t *testing.T) {
	const ttl = 5 * time.Second
	s := stack.Start(t, func(v *vpapp.Config, _ *coreapp.Config) { v.SecurityCodeTTL = ttl })
	tok := s.Token(t, "three-ds-scenarios.write", "payment-methods.write", "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	const pan, code = "4111111111111111", "837"
	core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "N", map[string]any{"amount": 1303}))
	core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "timeout", map[string]any{"amount": 1304}))
	core.ok(t, http.StatusCreated, http.MethodPost, "/three-ds-scenarios", scenarioBody("C", "Y", nil))
	var seen responses

	challenged := func(t *testing.T, amount int64) (tx map[string]any, pm uuid.UUID) {
		t.Helper()
		body := cardPayment(pan, code, amount)
		body["three_d_secure"] = map[string]any{"amount": amount}
		body["connection_options"] = map[string]any{"mock-card": map[string]any{"soft_descriptor": "ORDER 42"}}
		status, tx := pay(t, s, tok, body)
		seen.addMap(tx)
		if status != http.StatusCreated {
			t.Fatalf("pay: %d %v", status, tx)
		}
		checkThreeDS(t, tx, "buyer_approval_pending", "C", "challenge", "", "", amount)
		pm = uuid.MustParse(tx["payment_method"].(map[string]any)["id"].(string))
		// The code went from the payment's own hold to the challenge's.
		if s.VaultProxy.Cards.SecurityCodeHeld(pm) || !s.VaultProxy.Cards.SecurityCodeHeldFor(pm, tx["id"].(string)) {
			t.Fatal("the security code is not held for the challenge")
		}
		return tx, pm
	}
	complete := func(t *testing.T, tx map[string]any) map[string]any {
		t.Helper()
		status, raw := s.Do(t, s.PublicClient, http.MethodPost, tx["payment_method"].(map[string]any)["approval_url"].(string), "", nil)
		var done map[string]any
		if err := json.Unmarshal(raw, &done); err != nil || status != http.StatusOK {
			t.Fatalf("complete: %d %s", status, raw)
		}
		seen.addMap(done)
		checkThreeDS(t, done, "authorization_succeeded", "Y", "challenge", "", "05", int64(tx["three_d_secure"].(map[string]any)["amount"].(float64)))
		return done
	}

	t.Run("with the options and the code", func(t *testing.T) {
		tx, pm := challenged(t, 1301)
		done := complete(t, tx)
		rec := processorRecord(t, s, done["payment_service_transaction_id"].(string))
		if rec.SoftDescriptor == nil || *rec.SoftDescriptor != "ORDER 42" {
			t.Errorf("mock-card's soft descriptor %v, want the connection option's", rec.SoftDescriptor)
		}
		if rec.CVVResult == nil || *rec.CVVResult != "M" || done["cvv_response_code"] != "M" {
			t.Errorf("cvv result %v (transaction %v), want M: the code was not presented", rec.CVVResult, done["cvv_response_code"])
		}
		if rec.ThreeDSecure == nil || rec.ThreeDSecure.ECI != "05" {
			t.Errorf("mock-card's 3-D Secure data %+v", rec.ThreeDSecure)
		}
		// Used once: vault-proxy holds it no longer, and a second call
		// asking for it is refused before anything is sent.
		if s.VaultProxy.Cards.SecurityCodeHeldFor(pm, tx["id"].(string)) {
			t.Error("the security code is still held after the authorization")
		}
		status, raw := detokenize(t, s, "default", zone.DetokenizeRequest{Destination: stack.MockCardDestination, Method: http.MethodPost,
			Path: "/v1/authorizations", Body: authorizationBody(1301, true), PaymentMethod: []string{pm.String()}, Purpose: "authorization",
			SecurityCodeFor: tx["id"].(string), Headers: map[string]string{"content-type": "application/json", "idempotency-key": "second-use",
				"authorization": "Bearer " + connector.MockCardSandboxAPIKey}})
		if status != http.StatusBadRequest || !strings.Contains(string(raw), "CARD_SECURITY_CODE_1") {
			t.Errorf("a second use of the code: %d %s", status, raw)
		}
	})

	for amount, want := range map[int64]string{1303: "authorization_declined", 1304: "authorization_failed"} {
		t.Run("a challenge ending in "+want+" wipes the code at once", func(t *testing.T) {
			tx, pm := challenged(t, amount)
			status, raw := s.Do(t, s.PublicClient, http.MethodPost, tx["payment_method"].(map[string]any)["approval_url"].(string), "", nil)
			var done map[string]any
			if err := json.Unmarshal(raw, &done); err != nil || status != http.StatusOK || done["status"] != want {
				t.Fatalf("complete: %d %s, want %s", status, raw, want)
			}
			seen.addMap(done)
			// Well within the hold's expiry (the TTL, and the challenge's
			// 15 minutes): only core-api's word can have ended it.
			if s.VaultProxy.Cards.SecurityCodeHeldFor(pm, tx["id"].(string)) {
				t.Error("the security code is still held after the challenge ended without an authorization")
			}
		})
	}

	t.Run("a hold that ended goes without the code", func(t *testing.T) {
		tx, pm := challenged(t, 1302)
		// The buyer takes longer than vault-proxy holds the code; the
		// hold's timer wipes it.
		time.Sleep(ttl + 500*time.Millisecond)
		if s.VaultProxy.Cards.SecurityCodeHeldFor(pm, tx["id"].(string)) {
			t.Fatal("the security code is held past its hold")
		}
		done := complete(t, tx)
		rec := processorRecord(t, s, done["payment_service_transaction_id"].(string))
		if rec.CVVResult != nil || done["cvv_response_code"] != nil {
			t.Errorf("cvv result %v (transaction %v), want none: no code", rec.CVVResult, done["cvv_response_code"])
		}
		if rec.SoftDescriptor == nil || *rec.SoftDescriptor != "ORDER 42" {
			t.Errorf("mock-card's soft descriptor %v, want the connection option's", rec.SoftDescriptor)
		}
	})

	seen.assertNoPAN(t, pan)
	for i, body := range seen {
		assertNoSecurityCode(t, fmt.Sprintf("answer %d", i), body, code)
	}
	for _, db := range []string{"core", "vault"} {
		dump := s.Dump(t, db)
		logging.AssertNoPANIn(t, "the "+db+" database", dump, pan)
		assertNoSecurityCode(t, "the "+db+" database", dump, code)
	}
	assertNoCardDataLogged(t, s, pan)
	assertNoSecurityCode(t, "the logs", s.Logs.String(), code)
}
