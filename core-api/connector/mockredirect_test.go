package connector_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/secret"
)

// Each way a mock-redirect notification fails verification, and those
// that pass, with the payment service's secret or the built-in one; each
// status is the authorization's outcome it reports.
func TestMockRedirectVerifyNotification(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := func(typ, status string) []byte {
		return []byte(`{"id":"mrn_1","type":"` + typ + `","data":{"id":"mrp_1","reference":"ref-1","status":"` + status + `"}}`)
	}
	approved := body("payment.approved", "approved")
	ps := connector.Config{Credentials: connector.Secrets{"webhook_secret": secret.New("whsec_of_the_payment_service")}}
	ts := strconv.FormatInt(now.Unix(), 10)
	headers := func(key, ts string, b []byte) http.Header {
		return http.Header{"Mock-Redirect-Timestamp": {ts}, "Mock-Redirect-Signature": {sign(key, ts, b)}, "Mock-Redirect-Notification-Id": {"mrn_1"}}
	}
	builtIn := connector.MockRedirectSandboxWebhookSecret
	for _, tc := range []struct {
		name    string
		cfg     connector.Config
		h       http.Header
		body    []byte
		want    error
		outcome coreapi.Outcome
	}{
		{"approved, built-in secret", connector.Config{}, headers(builtIn, ts, approved), approved, nil, coreapi.OutcomeSucceeded},
		{"declined", connector.Config{}, headers(builtIn, ts, body("payment.declined", "declined")), body("payment.declined", "declined"), nil, coreapi.OutcomeDeclined},
		{"expired", connector.Config{}, headers(builtIn, ts, body("payment.expired", "expired")), body("payment.expired", "expired"), nil, coreapi.OutcomeFailed},
		{"payment service's secret", ps, headers("whsec_of_the_payment_service", ts, approved), approved, nil, coreapi.OutcomeSucceeded},
		{"the built-in secret for a payment service's payment", ps, headers(builtIn, ts, approved), approved, connector.ErrBadSignature, ""},
		{"another body", connector.Config{}, headers(builtIn, ts, approved), append([]byte(" "), approved...), connector.ErrBadSignature, ""},
		{"no signature", connector.Config{}, http.Header{"Mock-Redirect-Timestamp": {ts}}, approved, connector.ErrBadSignature, ""},
		{"too old", connector.Config{}, headers(builtIn, strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10), approved), approved, connector.ErrBadSignature, ""},
		{"a type that is not the status", connector.Config{}, headers(builtIn, ts, body("payment.approved", "declined")), body("payment.approved", "declined"), connector.ErrNotificationMalformed, ""},
		{"signed but not a notification", connector.Config{}, headers(builtIn, ts, []byte(`{}`)), []byte(`{}`), connector.ErrNotificationMalformed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := connector.MockRedirect{}.VerifyNotification(tc.cfg, tc.h, tc.body, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want == nil && (n.ID != "mrn_1" || n.Reference != "ref-1" || n.Result.Outcome != tc.outcome || n.Result.Reference != "mrp_1" ||
				n.Kind != connector.KindAuthorizationResult || n.ProcessorID != "mrp_1") {
				t.Fatalf("notification %+v", n)
			}
		})
	}
}

// An unverified mock-redirect notification says which authorization it
// answers (the payment's reference), whatever else it holds: the
// signature, checked next, decides the rest.
func TestMockRedirectParseNotification(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want connector.NotificationSubject
		err  error
	}{
		{"approved", `{"id":"mrn_1","type":"payment.approved","data":{"id":"mrp_1","reference":"ref-1","status":"approved"}}`,
			connector.NotificationSubject{Kind: connector.KindAuthorizationResult, Reference: "ref-1", ProcessorID: "mrp_1"}, nil},
		{"no payment id yet", `{"data":{"reference":"ref-1"}}`,
			connector.NotificationSubject{Kind: connector.KindAuthorizationResult, Reference: "ref-1"}, nil},
		{"no reference", `{"id":"mrn_1","type":"payment.approved","data":{"id":"mrp_1","status":"approved"}}`, connector.NotificationSubject{}, connector.ErrNotificationMalformed},
		{"not JSON", `payment.approved`, connector.NotificationSubject{}, connector.ErrNotificationMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := connector.MockRedirect{}.ParseNotification([]byte(tc.body))
			if sub != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("got %+v, %v; want %+v, %v", sub, err, tc.want, tc.err)
			}
		})
	}
}

// The windows: 7 days by default or the configuration's
// approval_window_hours, 30 days at most; the connection option's
// override read from its validated value.
func TestMockRedirectWindows(t *testing.T) {
	m := connector.MockRedirect{}
	if w := m.Windows(connector.Config{}); w.Default != 7*24*time.Hour || w.Max != 30*24*time.Hour {
		t.Fatalf("built-in windows %+v", w)
	}
	if w := m.Windows(connector.Config{Settings: connector.Values{"approval_window_hours": int64(36)}}); w.Default != 36*time.Hour {
		t.Fatalf("configured window %+v", w)
	}
	var v coreapi.Problems
	opts := m.Schemas().ConnectionOptions.Validate("/connection_options/mock-redirect", json.RawMessage(`{"approval_expires_at":"2031-01-02T03:04:05+01:00"}`), &v)
	at := m.ApprovalOverride(opts)
	if v.Err() != nil || at == nil || !at.Equal(time.Date(2031, 1, 2, 2, 4, 5, 0, time.UTC)) {
		t.Fatalf("override %v (%v)", at, v.Err())
	}
	m.Schemas().ConnectionOptions.Validate("/connection_options/mock-redirect", json.RawMessage(`{"approval_expires_at":"in a week"}`), &v)
	if v.Err() == nil {
		t.Fatal("a malformed override was accepted")
	}
	if m.ApprovalOverride(connector.Values{}) != nil {
		t.Fatal("an override without one")
	}
}
