package connector_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/secret"
)

// Each mock-card notification type is read as its kind, with the
// transaction's reference (from the authorization's idempotency key),
// the operation's for a capture or refund, and the result that settles
// it; a type contradicted by its object, a forged or stale signature,
// and the built-in secret for a payment service with its own are
// refused.
func TestMockCardVerifyNotification(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	txID, opID := uuid.NewString(), uuid.NewString()
	auth := func(status, decline string) string {
		d := "null"
		if decline != "" {
			d = `"` + decline + `"`
		}
		return `"authorization":{"type":"authorization","id":"auth_1","idempotency_key":"` + connector.MockCardKey(txID) +
			`","status":"` + status + `","response_code":"00","decline_code":` + d + `}`
	}
	op := func(status, failure string) string {
		f := "null"
		if failure != "" {
			f = `"` + failure + `"`
		}
		return `,"operation":{"id":"cap_1","idempotency_key":"` + connector.MockCardKey(opID) + `","amount":4300,"status":"` + status + `","failure_code":` + f + `}`
	}
	body := func(typ, data string) []byte {
		return []byte(`{"id":"ntf_1","type":"` + typ + `","data":{` + data + `}}`)
	}
	headers := func(key, ts string, b []byte) http.Header {
		return http.Header{"Mock-Card-Timestamp": {ts}, "Mock-Card-Signature": {sign(key, ts, b)}, "Mock-Card-Notification-Id": {"ntf_1"}}
	}
	builtIn := connector.MockCardSandboxWebhookSecret
	ps := connector.Config{Credentials: connector.Secrets{"webhook_secret": secret.New("whsec_of_the_payment_service")}}
	approved := body("authorization.approved", auth("authorized", ""))
	for _, tc := range []struct {
		name    string
		cfg     connector.Config
		key     string
		ts      string
		body    []byte
		want    error
		kind    connector.NotificationKind
		outcome coreapi.Outcome
		errCode string
	}{
		{"authorization approved", connector.Config{}, builtIn, ts, approved, nil, connector.KindAuthorizationResult, coreapi.OutcomeSucceeded, ""},
		{"authorization declined", connector.Config{}, builtIn, ts, body("authorization.declined", auth("declined", "insufficient_funds")), nil, connector.KindAuthorizationResult, coreapi.OutcomeDeclined, "insufficient_funds"},
		{"authorization failed", connector.Config{}, builtIn, ts, body("authorization.failed", auth("failed", "processing_error")), nil, connector.KindAuthorizationResult, coreapi.OutcomeFailed, "processing_error"},
		{"capture succeeded", connector.Config{}, builtIn, ts, body("capture.succeeded", auth("captured", "")+op("succeeded", "")), nil, connector.KindCaptureResult, coreapi.OutcomeSucceeded, ""},
		{"capture failed", connector.Config{}, builtIn, ts, body("capture.failed", auth("authorized", "")+op("failed", "acquirer_refused")), nil, connector.KindCaptureResult, coreapi.OutcomeFailed, "acquirer_refused"},
		{"refund succeeded", connector.Config{}, builtIn, ts, body("refund.succeeded", auth("captured", "")+op("succeeded", "")), nil, connector.KindRefundResult, coreapi.OutcomeSucceeded, ""},
		{"refund failed", connector.Config{}, builtIn, ts, body("refund.failed", auth("captured", "")+op("failed", "acquirer_refused")), nil, connector.KindRefundResult, coreapi.OutcomeFailed, "acquirer_refused"},
		{"the payment service's secret", ps, "whsec_of_the_payment_service", ts, approved, nil, connector.KindAuthorizationResult, coreapi.OutcomeSucceeded, ""},
		{"the built-in secret for a payment service with its own", ps, builtIn, ts, approved, connector.ErrBadSignature, "", "", ""},
		{"a wrong secret", connector.Config{}, "whsec_forged_forged_forged", ts, approved, connector.ErrBadSignature, "", "", ""},
		{"too old", connector.Config{}, builtIn, strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10), approved, connector.ErrBadSignature, "", "", ""},
		{"a type its authorization contradicts", connector.Config{}, builtIn, ts, body("authorization.approved", auth("declined", "do_not_honor")), connector.ErrNotificationMalformed, "", "", ""},
		{"a type its operation contradicts", connector.Config{}, builtIn, ts, body("capture.succeeded", auth("captured", "")+op("pending", "")), connector.ErrNotificationMalformed, "", "", ""},
		{"a capture without its operation", connector.Config{}, builtIn, ts, body("capture.succeeded", auth("captured", "")), connector.ErrNotificationMalformed, "", "", ""},
		{"an unknown type", connector.Config{}, builtIn, ts, body("chargeback.opened", auth("captured", "")), connector.ErrNotificationMalformed, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := connector.MockCard{}.VerifyNotification(tc.cfg, headers(tc.key, tc.ts, tc.body), tc.body, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				return
			}
			wantOp := ""
			if tc.kind != connector.KindAuthorizationResult {
				wantOp = opID
			}
			if n.ID != "ntf_1" || n.Kind != tc.kind || n.Reference != txID || n.ProcessorID != "auth_1" || n.OperationReference != wantOp ||
				n.Result.Outcome != tc.outcome || n.Result.ErrorCode != tc.errCode {
				t.Fatalf("notification %+v", n)
			}
			sub, err := connector.MockCard{}.ParseNotification(tc.body)
			if err != nil || sub != n.NotificationSubject {
				t.Fatalf("parsed %+v %v", sub, err)
			}
		})
	}
}
