package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

// payment is a POST /transactions body paying amount with stored card pm.
func payment(pm string, amount int64) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "country": "DE",
		"payment_method": map[string]any{"method": "id", "id": pm}}
}

// pay sends POST /transactions through vault-proxy's public listener, as
// a merchant does, and decodes the answer.
func pay(t *testing.T, s *stack.Stack, tok string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body, header...)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("POST /transactions: %d %s", code, raw)
	}
	return code, m
}

// A merchant pays with a stored card through its one base URL: core-api
// creates the transaction, mock-card authorizes it (approved, or declined
// by amount) with the transaction's id as the idempotency reference, and
// the answer is the transaction as the connector left it. The same
// Idempotency-Key sent again is the same transaction and one charge. No
// card number is in any answer, log line or the core database.
func TestCardPayment(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "transactions.write", "transactions.read")
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "123")["id"].(string)
	var answers []map[string]any

	t.Run("approved", func(t *testing.T) {
		code, tx := pay(t, s, tok, payment(pm, 1299))
		answers = append(answers, tx)
		if code != http.StatusCreated || tx["type"] != "transaction" || tx["status"] != "authorization_succeeded" ||
			tx["authorized_amount"] != 1299.0 || tx["captured_amount"] != 0.0 || tx["intent"] != "authorize" {
			t.Fatalf("approval: %d %v", code, tx)
		}
		pmOut := tx["payment_method"].(map[string]any)
		if pmOut["id"] != pm || pmOut["method"] != "card" || pmOut["label"] != "1111" {
			t.Fatalf("payment method: %v", pmOut)
		}
		if st := mockCardStats(t, s, tx["id"].(string)); st.Charges != 1 {
			t.Fatalf("mock-card stats: %+v", st)
		}
	})

	t.Run("intent capture", func(t *testing.T) {
		body := payment(pm, 500)
		body["intent"] = "capture"
		code, tx := pay(t, s, tok, body)
		answers = append(answers, tx)
		if code != http.StatusCreated || tx["status"] != "capture_succeeded" || tx["captured_amount"] != 500.0 {
			t.Fatalf("sale: %d %v", code, tx)
		}
	})

	t.Run("declined by amount", func(t *testing.T) {
		code, tx := pay(t, s, tok, payment(pm, 4051))
		answers = append(answers, tx)
		if code != http.StatusCreated || tx["status"] != "authorization_declined" || tx["error_code"] != "insufficient_funds" ||
			tx["raw_response_code"] != "51" || tx["authorized_amount"] != 0.0 {
			t.Fatalf("decline: %d %v", code, tx)
		}
	})

	t.Run("same Idempotency-Key: one transaction, one charge", func(t *testing.T) {
		code, first := pay(t, s, tok, payment(pm, 777), "Idempotency-Key", "order-777")
		again, second := pay(t, s, tok, payment(pm, 777), "Idempotency-Key", "order-777")
		answers = append(answers, first)
		if code != http.StatusCreated || again != http.StatusCreated || first["id"] != second["id"] {
			t.Fatalf("replay: %d %v, then %d %v", code, first, again, second)
		}
		if st := mockCardStats(t, s, first["id"].(string)); st.Charges != 1 || st.Requests != 1 {
			t.Fatalf("mock-card stats: %+v", st)
		}
	})

	t.Run("100 concurrent requests with one Idempotency-Key: one transaction, one charge", func(t *testing.T) {
		body := payment(pm, 321)
		body["external_identifier"] = "order-concurrent"
		id := payConcurrently(t, s, tok, body, "order-concurrent", 100)
		if id == nil {
			t.Fatal("no request got the transaction")
		}
		got := newCore(s, tok, "").ok(t, http.StatusOK, http.MethodGet, "/transactions?external_identifier=order-concurrent", nil)["items"].([]any)
		if len(got) != 1 {
			t.Fatalf("%d transactions", len(got))
		}
		if st := mockCardStats(t, s, id.(string)); st.Charges != 1 {
			t.Fatalf("mock-card stats: %+v", st)
		}
	})

	t.Run("refused requests", func(t *testing.T) {
		cases := []struct {
			name   string
			body   map[string]any
			status int
			code   string
		}{
			{"unknown field", map[string]any{"amount": 1, "currency": "EUR", "payment_method": map[string]any{"method": "id", "id": pm}, "colour": "red"}, 400, "bad_request"},
			{"card number in metadata", map[string]any{"amount": 1, "currency": "EUR", "payment_method": map[string]any{"method": "id", "id": pm}, "metadata": map[string]any{"k": pan}}, 400, "bad_request"},
			{"unknown payment method", payment("00000000-0000-4000-8000-000000000000", 100), 400, "bad_request"},
			{"a method other than id", map[string]any{"amount": 1, "currency": "EUR", "payment_method": map[string]any{"method": "card", "id": pm}}, 400, "bad_request"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, tc.body)
				if code != tc.status || apiError(t, raw).Code != tc.code {
					t.Fatalf("%d %s", code, raw)
				}
			})
		}
	})

	t.Run("read back: one, its events, lists by filter", func(t *testing.T) {
		core := newCore(s, tok, "")
		approved, declined := answers[0], answers[2]
		got := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+approved["id"].(string), nil)
		if got["status"] != "authorization_succeeded" || got["payment_service_transaction_id"] != approved["payment_service_transaction_id"] {
			t.Fatalf("GET: %v", got)
		}
		events := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+approved["id"].(string)+"/events", nil)["items"].([]any)
		if len(events) != 2 || events[0].(map[string]any)["name"] != "authorization-succeeded" || events[1].(map[string]any)["name"] != "transaction-created" {
			t.Fatalf("events: %v", events)
		}
		list := func(query string) []any {
			t.Helper()
			return core.ok(t, http.StatusOK, http.MethodGet, "/transactions"+query, nil)["items"].([]any)
		}
		if all := list(""); len(all) != 5 {
			t.Fatalf("list: %d items", len(all))
		}
		if d := list("?status=authorization_declined"); len(d) != 1 || d[0].(map[string]any)["id"] != declined["id"] {
			t.Fatalf("declined: %v", d)
		}
		if two := list("?status=authorization_declined&status=capture_succeeded"); len(two) != 2 {
			t.Fatalf("two statuses: %v", two)
		}
		if byPM := list("?payment_method_id=" + pm + "&limit=1"); len(byPM) != 1 {
			t.Fatalf("by payment method: %v", byPM)
		}
		if none := list("?buyer_id=00000000-0000-4000-8000-000000000000"); len(none) != 0 {
			t.Fatalf("by buyer: %v", none)
		}
		for _, tc := range []struct {
			name, path string
			status     int
		}{
			{"unknown transaction", "/transactions/00000000-0000-4000-8000-000000000000", 404},
			{"events of an unknown transaction", "/transactions/00000000-0000-4000-8000-000000000000/events", 404},
			{"id not a UUID", "/transactions/nope", 400},
			{"unknown status", "/transactions?status=paid", 400},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if code, raw := core.do(t, http.MethodGet, tc.path, nil); code != tc.status {
					t.Fatalf("%d %s", code, raw)
				}
			})
		}
		createMerchantAccount(t, s, "other")
		other := newCore(s, s.TokenFor(t, []string{"other"}, "transactions.read"), "other")
		if code, raw := other.do(t, http.MethodGet, "/transactions/"+approved["id"].(string), nil); code != http.StatusNotFound {
			t.Fatalf("another account's transaction: %d %s", code, raw)
		}
	})

	t.Run("capture, then refunds", func(t *testing.T) {
		core := newCore(s, tok, "")
		_, tx := pay(t, s, tok, payment(pm, 2000))
		id := tx["id"].(string)
		captured := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/capture", map[string]any{"amount": 1500})
		answers = append(answers, captured)
		if captured["status"] != "capture_succeeded" || captured["captured_amount"] != 1500.0 || captured["capture_pending_amount"] != 0.0 {
			t.Fatalf("capture: %v", captured)
		}
		code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions/"+id+"/refunds", tok,
			map[string]any{"amount": 600, "reason": "returned"}, "Idempotency-Key", "refund-1")
		var refund map[string]any
		if err := json.Unmarshal(raw, &refund); err != nil || code != http.StatusCreated || refund["type"] != "refund" ||
			refund["status"] != "succeeded" || refund["amount"] != 600.0 || refund["transaction_id"] != id {
			t.Fatalf("refund: %d %s", code, raw)
		}
		answers = append(answers, refund)
		again, raw2 := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions/"+id+"/refunds", tok,
			map[string]any{"amount": 600, "reason": "returned"}, "Idempotency-Key", "refund-1")
		if again != http.StatusCreated || string(raw2) != string(raw) {
			t.Fatalf("refund replayed: %d %s", again, raw2)
		}
		cards, err := s.CoreAPI.Connectors.Cards(connector.MockCardName)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cards.Lookup(context.Background(), connector.CardLookup{MerchantAccountID: "default", PaymentMethodID: pm, Reference: id})
		if err != nil || st.CapturedAmount != 1500 || st.RefundedAmount != 600 || len(st.Refunds) != 1 || st.Refunds[0].Reference != refund["id"] {
			t.Fatalf("the processor's record: %+v %v", st, err)
		}
		after := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
		if after["refunded_amount"] != 600.0 || after["captured_amount"] != 1500.0 {
			t.Fatalf("after the refund: %v", after)
		}
		code, raw = core.do(t, http.MethodPost, "/transactions/"+id+"/refunds", map[string]any{"amount": 901})
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "refund_exceeds_captured" {
			t.Fatalf("refund beyond the captured amount: %d %s", code, raw)
		}
		code, raw = core.do(t, http.MethodPost, "/transactions/"+id+"/void", nil)
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "transaction_not_voidable" {
			t.Fatalf("void of a captured transaction: %d %s", code, raw)
		}
	})

	t.Run("void, then a capture is refused and nothing changes", func(t *testing.T) {
		core := newCore(s, tok, "")
		_, tx := pay(t, s, tok, payment(pm, 800))
		id := tx["id"].(string)
		voided := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/void", nil)
		answers = append(answers, voided)
		if voided["status"] != "authorization_voided" || voided["voided_at"] == nil {
			t.Fatalf("void: %v", voided)
		}
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/capture", map[string]any{})
		if e := apiError(t, raw); code != http.StatusUnprocessableEntity || e.Code != "transaction_not_capturable" {
			t.Fatalf("capture of a voided transaction: %d %s", code, raw)
		}
		if after := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil); after["updated_at"] != voided["updated_at"] || after["captured_amount"] != 0.0 {
			t.Fatalf("after the refused capture: %v", after)
		}
		events := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/events", nil)["items"].([]any)
		if len(events) != 4 || events[0].(map[string]any)["name"] != "void-succeeded" {
			t.Fatalf("events: %v", events)
		}
	})

	t.Run("operations on a transaction that is not there", func(t *testing.T) {
		core := newCore(s, tok, "")
		for _, op := range []string{"capture", "void", "refunds"} {
			code, raw := core.do(t, http.MethodPost, "/transactions/00000000-0000-4000-8000-000000000000/"+op, map[string]any{})
			if code != http.StatusNotFound {
				t.Fatalf("%s: %d %s", op, code, raw)
			}
		}
	})

	all, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	logging.AssertNoPANIn(t, "core-api's answers", string(all), pan)
	logging.AssertNoPANIn(t, "the core database", s.Dump(t, "core"), pan)
	assertNoCardDataLogged(t, s, pan)
}

// payConcurrently sends n identical POST /transactions under one
// Idempotency-Key at once and returns the one transaction's id they
// answer (nil when every one was 409 concurrent_request: the first still
// ran). Any other answer, or two transactions, fails the test.
func payConcurrently(t *testing.T, s *stack.Stack, tok string, body map[string]any, key string, n int) any {
	t.Helper()
	codes, ids := make([]int, n), make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Not pay: a goroutine must not end the test (t.Fatal).
			code, raw := s.Do(t, s.PublicClient, http.MethodPost, s.PublicURL+"/transactions", tok, body, "Idempotency-Key", key)
			var tx map[string]any
			_ = json.Unmarshal(raw, &tx)
			codes[i], ids[i] = code, tx["id"]
		}()
	}
	wg.Wait()
	var id any
	for i, code := range codes {
		switch {
		case code == http.StatusConflict: // concurrent_request: the first still runs
		case code == http.StatusCreated && (id == nil || ids[i] == id):
			id = ids[i]
		default:
			t.Fatalf("request %d: %d %v (first id %v)", i, code, ids[i], id)
		}
	}
	return id
}

// A transaction names its buyer as a payment method does, with `buyer`
// ({id, external_identifier}, or null without one), whichever of buyer_id
// and buyer_external_identifier the payment gave; GET answers the same.
// The buyer's billing postal code goes to the card processor, which
// checks it (AVS: mock-card answers N for 11111).
func TestTransactionBuyerReference(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "buyers.write", "payment-methods.write", "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	buyer := core.ok(t, http.StatusCreated, http.MethodPost, "/buyers", map[string]any{"external_identifier": "customer-7",
		"billing_details": map[string]any{"address": map[string]any{"postal_code": "11111", "country": "DE"}}})
	pm := vaultCard(t, s, tok, "4111111111111111", "123")["id"].(string)
	want := map[string]any{"id": buyer["id"], "external_identifier": "customer-7"}
	for _, tc := range []struct {
		name  string
		field string
		value any
		want  any
		avs   any
	}{
		{"by buyer_id", "buyer_id", buyer["id"], want, "N"},
		{"by buyer_external_identifier", "buyer_external_identifier", "customer-7", want, "N"},
		{"without a buyer", "", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := payment(pm, 1000)
			if tc.field != "" {
				body[tc.field] = tc.value
			}
			code, tx := pay(t, s, tok, body)
			got, present := tx["buyer"]
			if code != http.StatusCreated || !present || !reflect.DeepEqual(got, tc.want) || tx["avs_response_code"] != tc.avs {
				t.Fatalf("POST: %d buyer %v (present %v), avs %v; want %v, avs %v", code, got, present, tx["avs_response_code"], tc.want, tc.avs)
			}
			read := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+tx["id"].(string), nil)
			if !reflect.DeepEqual(read["buyer"], tc.want) || read["buyer_id"] != tx["buyer_id"] {
				t.Fatalf("GET: buyer %v, buyer_id %v", read["buyer"], read["buyer_id"])
			}
		})
	}
}

// A card payment's cart items reach the processor (mock-card records what
// it was sent) as the merchant wrote them, text that looks like a
// placeholder included: vault-proxy fills in the card's own placeholders
// only, so the payment goes through and no card data lands in the cart.
func TestCardPaymentSendsCartItemsToTheProcessor(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "transactions.write")
	pm := vaultCard(t, s, tok, "4111111111111111", "123")["id"].(string)
	body := payment(pm, 1500)
	body["cart_items"] = []map[string]any{
		{"name": "Kettle {{ CARD_NUMBER_1 }}", "quantity": 1, "unit_amount": 1000, "sku": "KET-1", "categories": []string{"kitchen"}},
		{"name": "Mug", "quantity": 2, "unit_amount": 250, "product_type": "physical"},
	}
	code, tx := pay(t, s, tok, body)
	if code != http.StatusCreated || tx["status"] != "authorization_succeeded" {
		t.Fatalf("payment: %d %v", code, tx)
	}
	got := processorRecord(t, s, tx["payment_service_transaction_id"].(string)).CartItems
	if len(got) != 2 || got[0].Name != "Kettle {{ CARD_NUMBER_1 }}" || got[0].Quantity != 1 || got[0].UnitAmount != 1000 ||
		got[0].SKU == nil || *got[0].SKU != "KET-1" || !reflect.DeepEqual(got[0].Categories, []string{"kitchen"}) ||
		got[1].Name != "Mug" || got[1].Quantity != 2 || got[1].ProductType == nil || *got[1].ProductType != "physical" {
		t.Fatalf("mock-card was sent cart items %+v", got)
	}
	s.Logs.AssertNoPAN(t)
}

// A redirect (GCash) and a direct (PayPal-like) payment send their cart
// items to their processor, which records them as sent.
func TestRedirectAndDirectPaymentsSendCartItems(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "transactions.write")
	items := []any{map[string]any{"name": "Kettle {{ CARD_NUMBER_1 }}", "quantity": 1.0, "unit_amount": 1000.0, "sku": "KET-1"}}
	record := func(t *testing.T, url, user, pass, bearer string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		} else {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		record func(t *testing.T, id string) map[string]any
	}{
		{"redirect", gcashPayment(1000, "capture"), func(t *testing.T, id string) map[string]any {
			return record(t, s.MockRedirect.URL()+"/v1/payments/"+id, "", "", connector.MockRedirectSandboxAPIKey)
		}},
		{"direct", directPayment(1000, "capture"), func(t *testing.T, id string) map[string]any {
			return record(t, s.MockDirect.URL()+"/v2/checkout/orders/"+id, "payorch_builtin_sandbox", "sandbox", "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["cart_items"] = items
			code, tx := pay(t, s, tok, tc.body)
			if code != http.StatusCreated || tx["status"] != "buyer_approval_pending" {
				t.Fatalf("payment: %d %v", code, tx)
			}
			if got := tc.record(t, tx["payment_service_transaction_id"].(string))["cart_items"]; !reflect.DeepEqual(got, items) {
				t.Fatalf("the processor was sent cart items %v, want %v", got, items)
			}
		})
	}
}
