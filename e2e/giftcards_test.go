package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
)

var giftCardNumbers = []string{"6006491111111111", "6006492222222222", "6006493333333333", "6006494444444444"}

func TestGiftCardsOfABuyerSortedByUsage(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, pmScopes...)
	core := newCore(s, tok, "")
	pub := publicCore(s, tok, "")
	var seen responses
	buyerID := core.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "gc-buyer"})["id"].(string)
	otherBuyer := core.ok(t, 201, "POST", "/buyers", map[string]any{"external_identifier": "gc-other"})["id"].(string)

	exp := expiryIn(2)
	ids := make([]string, len(giftCardNumbers))
	for i, n := range giftCardNumbers {
		body := map[string]any{"method": "gift-card", "number": n, "pin": "1234", "buyer_id": buyerID}
		if i == 0 {
			body["expiration_date"] = exp
		}
		pm := seen.addMap(pub.ok(t, 201, "POST", "/payment-methods", body))
		if pm["method"] != "gift-card" || pm["label"] != n[len(n)-4:] || pm["details"].(map[string]any)["bin"] != n[:6] {
			t.Fatalf("gift card %v", pm)
		}
		ids[i] = pm["id"].(string)
	}
	// Not listed: a card of the same buyer, a gift card of another buyer.
	pub.ok(t, 201, "POST", "/payment-methods", map[string]any{"method": "card", "number": "4111111111111111", "expiration_date": exp, "buyer_id": buyerID})
	pub.ok(t, 201, "POST", "/payment-methods", map[string]any{"method": "gift-card", "number": "6006495555555555", "pin": "9876", "buyer_id": otherBuyer})

	// Usage as transactions will record it. ids[3] is never used.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, u := range []struct {
		i     int
		cit   bool
		after time.Duration
	}{
		{0, false, 1 * time.Minute}, {0, false, 2 * time.Minute}, {0, false, 3 * time.Minute}, // most used, no CIT
		{1, true, 30 * time.Minute},                             // most recent, one CIT
		{2, true, 10 * time.Minute}, {2, true, 5 * time.Minute}, // two CITs
	} {
		if err := s.CoreAPI.DB.RecordUsage(context.Background(), "default", ids[u.i], u.cit, t0.Add(u.after)); err != nil {
			t.Fatal(err)
		}
	}
	tie := []string{ids[0], ids[3]} // never CIT-used: ordered by id
	if tie[0] > tie[1] {
		tie[0], tie[1] = tie[1], tie[0]
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"buyer_id=" + buyerID + "&sort_by=last_used_at", []string{ids[1], ids[2], ids[0], ids[3]}},
		{"buyer_id=" + buyerID, []string{ids[1], ids[2], ids[0], ids[3]}}, // default: last_used_at
		{"buyer_external_identifier=gc-buyer&sort_by=usage_count", []string{ids[0], ids[2], ids[1], ids[3]}},
		{"buyer_id=" + buyerID + "&sort_by=cit_last_used_at", append([]string{ids[1], ids[2]}, tie...)},
		{"buyer_id=" + buyerID + "&sort_by=cit_usage_count", append([]string{ids[2], ids[1]}, tie...)},
	} {
		t.Run(tc.query, func(t *testing.T) {
			list := seen.addMap(core.ok(t, 200, "GET", "/buyers/gift-cards?"+tc.query, nil))
			items := list["items"].([]any)
			if len(list) != 1 || len(items) != len(tc.want) {
				t.Fatalf("list %v", list)
			}
			for i, it := range items {
				if it.(map[string]any)["id"] != tc.want[i] {
					t.Fatalf("order: item %d = %v, want %v", i, it.(map[string]any)["id"], tc.want[i])
				}
			}
		})
	}

	list := seen.addMap(core.ok(t, 200, "GET", "/buyers/gift-cards?buyer_id="+buyerID+"&sort_by=usage_count", nil))
	first := list["items"].([]any)[0].(map[string]any)
	if first["type"] != "gift-card" || first["id"] != ids[0] || first["merchant_account_id"] != "default" ||
		first["bin"] != "600649" || first["sub_bin"] != nil || first["last4"] != "1111" || first["currency"] != nil ||
		first["expiration_date"] != exp || first["balance"] != 10000.0 || first["balance_error_code"] != nil ||
		first["usage_count"] != 3.0 || first["cit_usage_count"] != 0.0 || first["last_used_at"] == nil || first["cit_last_used_at"] != nil {
		t.Fatalf("gift card item %v", first)
	}
	for _, k := range []string{"type", "id", "merchant_account_id", "bin", "sub_bin", "last4", "currency", "expiration_date", "balance",
		"balance_error_code", "last_used_at", "usage_count", "cit_last_used_at", "cit_usage_count"} {
		if _, ok := first[k]; !ok {
			t.Fatalf("gift card item lacks %s: %v", k, first)
		}
	}

	for _, tc := range []struct{ query, pointer string }{
		{"buyer_id=" + buyerID + "&sort_by=created_at", "sort_by"},
		{"buyer_id=" + buyerID + "&sort_by=usage_count&sort_by=last_used_at", "sort_by"},
		{"sort_by=usage_count", "buyer_id"},
		{"buyer_id=nope", "buyer_id"},
		{"buyer_external_identifier=nobody", "buyer_external_identifier"},
	} {
		code, raw := core.do(t, "GET", "/buyers/gift-cards?"+tc.query, nil)
		if e := apiError(t, raw); code != 400 || e.Code != "bad_request" || len(e.Details) != 1 || e.Details[0].Pointer != tc.pointer || e.Details[0].Location != "query" {
			t.Fatalf("%s = %d %s", tc.query, code, raw)
		}
	}
	// Reading needs payment-methods.read (or write).
	if code, _ := newCore(s, s.Token(t, "buyers.read"), "").do(t, "GET", "/buyers/gift-cards?buyer_id="+buyerID, nil); code != 403 {
		t.Fatalf("without payment-methods scope = %d", code)
	}
	newCore(s, s.Token(t, "payment-methods.read"), "").ok(t, 200, "GET", "/buyers/gift-cards?buyer_id="+buyerID, nil)

	// Deleting a gift card shreds number and PIN in the vault.
	if code, raw := core.do(t, http.MethodDelete, "/payment-methods/"+ids[3], nil); code != 204 {
		t.Fatalf("DELETE = %d %s", code, raw)
	}
	if code, _ := internalCard(t, s, "default", ids[3]); code != 404 {
		t.Fatalf("vault still has the gift card: %d", code)
	}
	if items := core.ok(t, 200, "GET", "/buyers/gift-cards?buyer_id="+buyerID, nil)["items"].([]any); len(items) != 3 {
		t.Fatalf("after DELETE: %v", items)
	}

	pans := append([]string{"4111111111111111", "6006495555555555"}, giftCardNumbers...)
	seen.assertNoPAN(t, pans...)
	assertNoCardDataLogged(t, s, pans...)
	logging.AssertNoPANIn(t, "core database dump", s.Dump(t, "core"), pans...)
}
