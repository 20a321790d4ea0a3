package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/simulator"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// cardNotify sends body to core-api as a mock-card notification id,
// signed with secret ("": unsigned).
func cardNotify(t *testing.T, s *stack.Stack, merchant, secret, id string, body []byte) (int, []byte) {
	t.Helper()
	h := []string{mockcard.HeaderNotificationID, id}
	if secret != "" {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		h = append(h, mockcard.HeaderTimestamp, ts, mockcard.HeaderSignature, simulator.Sign(secret, ts, body))
	}
	return s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/webhooks/mock-card/"+merchant, "", body, h...)
}

// A card processor's asynchronous results, end to end: mock-card (its
// own HTTP server behind vault-proxy's detokenized call) answers a
// pending amount's authorization pending, and a pending operation
// amount's capture or refund pending, then sends each result as a
// signed notification to core-api's inbound route, which applies it
// through the state machine: an authorization approved, another
// declined, a capture settled, a refund failed. The same notification
// again is a duplicate, a forged one 401; neither the notifications nor
// anything core-api stores holds the card number.
func TestCardResultsByNotification(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write", "transactions.write", "transactions.read")
	core := newCore(s, tok, "")
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "123")["id"].(string)
	get := func(t *testing.T, id string) map[string]any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id, nil)
	}
	latest := func(t *testing.T, id string) map[string]any {
		t.Helper()
		return core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+id+"/events?limit=100", nil)["items"].([]any)[0].(map[string]any)
	}
	// await polls transaction id until done holds (the notification has
	// come), for up to 10 s.
	await := func(t *testing.T, id string, done func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			tx := get(t, id)
			if done(tx) || time.Now().After(deadline) {
				return tx
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// notified checks that the latest event of id is name, made by a
	// mock-card notification, and returns the notification.
	var stored []string
	notified := func(t *testing.T, id, name string) map[string]any {
		t.Helper()
		ev := latest(t, id)
		n, _ := ev["notification"].(map[string]any)
		if ev["name"] != name || n == nil || n["connector"] != connector.MockCardName || !strings.HasPrefix(n["id"].(string), "ntf_") {
			t.Fatalf("latest event: %v", ev)
		}
		if h := n["raw_headers"].(map[string]any); h[mockcard.HeaderSignature] == nil {
			t.Fatalf("raw headers: %v", h)
		}
		stored = append(stored, n["raw_body"].(string))
		return n
	}

	for _, tc := range []struct {
		name      string
		amount    int64
		status    string
		event     string
		errorCode any
	}{
		{"a pending authorization approved by notification", mockcard.AmountPending, "authorization_succeeded", "authorization-succeeded", nil},
		{"a pending authorization declined by notification", mockcard.AmountPending + 51, "authorization_declined", "authorization-declined", "insufficient_funds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, tx := pay(t, s, tok, payment(pm, tc.amount))
			if code != http.StatusCreated || tx["status"] != "processing" || tx["authorized_amount"] != 0.0 {
				t.Fatalf("pending authorization: %d %v", code, tx)
			}
			id := tx["id"].(string)
			if ev := latest(t, id); ev["name"] != "authorization-pending" {
				t.Fatalf("latest event: %v", ev)
			}
			got := await(t, id, func(tx map[string]any) bool { return tx["status"] != "processing" })
			if got["status"] != tc.status || got["error_code"] != tc.errorCode {
				t.Fatalf("after the notification: %v", got)
			}
			notified(t, id, tc.event)
		})
	}

	code, tx := pay(t, s, tok, payment(pm, 20000))
	if code != http.StatusCreated || tx["status"] != "authorization_succeeded" {
		t.Fatalf("authorization: %d %v", code, tx)
	}
	id, merchant := tx["id"].(string), tx["merchant_account_id"].(string)
	core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/capture", map[string]any{"amount": 10000})

	var captured map[string]any // the capture's notification, as stored
	t.Run("a pending capture settled by notification", func(t *testing.T) {
		got := core.ok(t, http.StatusOK, http.MethodPost, "/transactions/"+id+"/capture", map[string]any{"amount": mockcard.AmountOperationPending})
		if got["capture_pending_amount"] != float64(mockcard.AmountOperationPending) || got["captured_amount"] != 10000.0 {
			t.Fatalf("pending capture: %v", got)
		}
		got = await(t, id, func(tx map[string]any) bool { return tx["capture_pending_amount"] == 0.0 })
		if got["captured_amount"] != 14300.0 || got["status"] != "capture_succeeded" {
			t.Fatalf("after the notification: %v", got)
		}
		captured = notified(t, id, "capture-succeeded")
	})

	t.Run("a pending refund failed by notification", func(t *testing.T) {
		code, raw := core.do(t, http.MethodPost, "/transactions/"+id+"/refunds", map[string]any{"amount": mockcard.AmountOperationPendingFails})
		if code != http.StatusCreated || !strings.Contains(string(raw), `"status":"processing"`) {
			t.Fatalf("pending refund: %d %s", code, raw)
		}
		got := await(t, id, func(tx map[string]any) bool { return tx["refund_pending_amount"] == 0.0 })
		if got["refunded_amount"] != 0.0 || got["captured_amount"] != 14300.0 {
			t.Fatalf("after the notification: %v", got)
		}
		notified(t, id, "refund-failed")
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if refund := core.ok(t, http.StatusOK, http.MethodGet, "/refunds/"+r["id"].(string), nil); refund["status"] != "failed" || refund["error_code"] != mockcard.OperationFailureCode {
			t.Fatalf("refund: %v", refund)
		}
	})

	t.Run("the same notification again is a duplicate", func(t *testing.T) {
		before := latest(t, id)
		code, raw := cardNotify(t, s, merchant, connector.MockCardSandboxWebhookSecret, captured["id"].(string), []byte(captured["raw_body"].(string)))
		if code != http.StatusOK || !strings.Contains(string(raw), `"outcome":"duplicate"`) {
			t.Fatalf("duplicate: %d %s", code, raw)
		}
		if after := latest(t, id); after["id"] != before["id"] {
			t.Fatalf("a duplicate recorded %v", after)
		}
	})

	t.Run("a forged notification is 401", func(t *testing.T) {
		body := strings.Replace(captured["raw_body"].(string), captured["id"].(string), "ntf_forged", 1)
		refusesForged(t, s, "ntf_forged", func(secret, nid string) (int, []byte) {
			return cardNotify(t, s, merchant, secret, "ntf_forged", []byte(body))
		})
	})

	t.Run("no card number in a notification or the core database", func(t *testing.T) {
		logging.AssertNoPANIn(t, "the stored notifications", strings.Join(stored, "\n"), pan)
		logging.AssertNoPANIn(t, "the core database", s.Dump(t, "core"), pan)
	})
}
