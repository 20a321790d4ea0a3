package mockcard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/simulator"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// received is one notification as the receiver got it.
type received struct {
	header http.Header
	body   []byte
}

// receiver answers 503 to the first send of each notification, then 200,
// so that every result is seen retried with the same id.
func receiver(t *testing.T) (string, <-chan received) {
	ch := make(chan received, 16)
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := r.Header.Get(mockcard.HeaderNotificationID)
		if !seen[id] {
			seen[id] = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ch <- received{r.Header.Clone(), b}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks/mock-card/m1", ch
}

// A pending amount is answered pending, nothing authorized or captured,
// and its result comes by a signed notification to notification_url:
// an authorization's decision, a capture's or refund's settlement. The
// notification holds no card number.
func TestPendingResultsComeByNotification(t *testing.T) {
	const secret = "whsec_mock_card_unit_test"
	s := start(t, mockcard.Config{WebhookSecret: secret, SettleDelay: time.Millisecond, RetryDelay: time.Millisecond})
	url, ch := receiver(t)
	next := func(t *testing.T) (string, map[string]any) {
		t.Helper()
		select {
		case r := <-ch:
			if got := r.header.Get(mockcard.HeaderSignature); got != simulator.Sign(secret, r.header.Get(mockcard.HeaderTimestamp), r.body) {
				t.Fatalf("signature %q", got)
			}
			if strings.Contains(string(r.body), "4111111111111111") {
				t.Fatalf("card number in %s", r.body)
			}
			var n struct {
				ID   string         `json:"id"`
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal(r.body, &n); err != nil || n.ID != r.header.Get(mockcard.HeaderNotificationID) {
				t.Fatalf("notification %s: %v", r.body, err)
			}
			return n.Type, n.Data
		case <-time.After(5 * time.Second):
			t.Fatal("no notification")
		}
		return "", nil
	}
	for _, tc := range []struct {
		name                 string
		amount               int64
		wantType, wantStatus string
		wantDecline          string
	}{
		{"approved", mockcard.AmountPending, "authorization.approved", "authorized", ""},
		{"declined", mockcard.AmountPending + 51, "authorization.declined", "declined", "insufficient_funds"},
		{"failed", mockcard.AmountPending + 96, "authorization.failed", "failed", "processing_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.authorize(t, "k-"+tc.name, request(tc.amount, field("notification_url", url)))
			if a.Status != "pending" || a.AuthorizedAmount != 0 || a.DeclineCode != nil || a.SchemeTransactionID != nil {
				t.Fatalf("answer %+v", a)
			}
			typ, data := next(t)
			got := data["authorization"].(map[string]any)
			if typ != tc.wantType || got["id"] != a.ID || got["status"] != tc.wantStatus || str2(got["decline_code"]) != tc.wantDecline {
				t.Fatalf("%s %v", typ, got)
			}
			if code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations/"+a.ID, "", nil); code != 200 || decode(t, raw).Status != tc.wantStatus {
				t.Fatalf("after: %d %s", code, raw)
			}
		})
	}

	a := s.authorize(t, "k-ops", request(20000, field("notification_url", url)))
	if code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations/"+a.ID+"/captures", "cap-now", map[string]any{"amount": 10000}); code != http.StatusOK || !strings.Contains(string(raw), `"status":"succeeded"`) {
		t.Fatalf("capture: %d %s", code, raw)
	}
	for _, tc := range []struct {
		kind     string
		amount   int64
		wantType string
		captured int64
		refunded int64
	}{
		{"captures", mockcard.AmountOperationPending, "capture.succeeded", 14300, 0},
		{"captures", mockcard.AmountOperationPendingFails, "capture.failed", 14300, 0},
		{"refunds", mockcard.AmountOperationPendingFails, "refund.failed", 14300, 0},
		{"refunds", mockcard.AmountOperationPending, "refund.succeeded", 14300, 4300},
	} {
		t.Run(tc.wantType, func(t *testing.T) {
			code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations/"+a.ID+"/"+tc.kind, "op-"+tc.wantType, map[string]any{"amount": tc.amount})
			if code != http.StatusOK || !strings.Contains(string(raw), `"status":"pending"`) {
				t.Fatalf("answer %d %s", code, raw)
			}
			typ, data := next(t)
			op := data["operation"].(map[string]any)
			after := data["authorization"].(map[string]any)
			if typ != tc.wantType || op["idempotency_key"] != "op-"+tc.wantType || after["captured_amount"] != float64(tc.captured) || after["refunded_amount"] != float64(tc.refunded) {
				t.Fatalf("%s %v %v", typ, op, after)
			}
			if strings.HasSuffix(typ, "failed") && op["failure_code"] != mockcard.OperationFailureCode {
				t.Fatalf("failure code %v", op)
			}
		})
	}
}

func str2(v any) string {
	s, _ := v.(string)
	return s
}

// notification_url must be an absolute http(s) URL.
func TestNotificationURLIsChecked(t *testing.T) {
	s := start(t, mockcard.Config{})
	code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", "k-url", request(1000, field("notification_url", "ftp://x")))
	apiError(t, code, raw, http.StatusBadRequest, "bad_request")
	if !strings.Contains(string(raw), `"pointer":"/notification_url"`) {
		t.Fatalf("%s", raw)
	}
}
