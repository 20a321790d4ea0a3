package transactions_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/simulator"
)

// cardNotification is a mock-card notification of typ about the
// authorization sent with reference txID (status authStatus) and, for a
// capture or refund, the operation sent with opRef (status opStatus),
// signed with the public sandbox secret.
func cardNotification(t *testing.T, id, typ, txID, authStatus, opRef, opStatus string) (map[string][]string, []byte) {
	t.Helper()
	data := map[string]any{"authorization": map[string]any{"type": "authorization", "id": "auth_1",
		"idempotency_key": connector.MockCardKey(txID), "status": authStatus, "response_code": "00"}}
	if opRef != "" {
		data["operation"] = map[string]any{"id": "op_1", "idempotency_key": connector.MockCardKey(opRef), "amount": 4300, "status": opStatus, "failure_code": "acquirer_refused"}
	}
	body, err := json.Marshal(map[string]any{"id": id, "type": typ, "data": data})
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return http.Header{"Mock-Card-Notification-Id": {id}, "Mock-Card-Timestamp": {ts},
		"Mock-Card-Signature": {simulator.Sign(connector.MockCardSandboxWebhookSecret, ts, body)}}, body
}

// A card processor's asynchronous results go through the one
// notification seam, each kind to its step of the state machine, in
// order on one card payment: an authorization's result before the
// connector's pending answer is recorded is early; after it, it answers
// the authorization (authorization-succeeded); a capture's and a
// refund's settle the operation they name (capture-succeeded,
// refund-failed); the same id again is a duplicate; a result naming no
// operation of the payment is only recorded; one about no payment is
// unmatched.
func TestCardResultsThroughTheSeam(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	mc := connector.MockCard{}
	s.Connectors, s.Cards = connector.NewRegistry(mc), mc
	pm := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111"})
	tx, err := s.Create(ctx, "default", coreapi.NewTransaction{Amount: 20000, Currency: "EUR", PaymentMethodID: &pm, Intent: coreapi.IntentAuthorize})
	if err != nil {
		t.Fatal(err)
	}
	var captureID, refundID string
	for _, tc := range []struct {
		name        string
		before      func(t *testing.T) // what the payment's own requests did first
		id, typ     string
		auth        string
		op, opState func() string // the operation's reference; its status at mock-card
		want        transactions.NotificationOutcome
		err         error
		event       string // the latest event's name after it, "" for none new
		check       func(t *testing.T, got *coreapi.Transaction)
	}{
		{name: "authorization result before the answer is recorded", id: "ntf_a", typ: "authorization.approved", auth: "authorized",
			err: coreapi.ErrNotificationEarly},
		{name: "authorization approved", id: "ntf_a", typ: "authorization.approved", auth: "authorized",
			before: func(t *testing.T) {
				got, _, err := s.ApplyAuthorization(ctx, "default", tx.ID, coreapi.ConnectorResult{Outcome: coreapi.OutcomePending, Reference: "auth_1"})
				if err != nil || got.Status != coreapi.TransactionProcessing {
					t.Fatalf("pending: %+v %v", got, err)
				}
			},
			want: transactions.NotificationApplied, event: "authorization-succeeded",
			check: func(t *testing.T, got *coreapi.Transaction) {
				if got.Status != coreapi.TransactionAuthorizationSucceeded || got.AuthorizedAmount != 20000 {
					t.Fatalf("%+v", got.TransactionState)
				}
			}},
		{name: "the same again", id: "ntf_a", typ: "authorization.approved", auth: "authorized", want: transactions.NotificationDuplicate},
		{name: "capture succeeded", id: "ntf_c", typ: "capture.succeeded", auth: "captured", op: func() string { return captureID }, opState: func() string { return "succeeded" },
			before: func(t *testing.T) {
				_, c, err := s.ReserveCapture(ctx, "default", tx.ID, ptr(int64(4300)))
				if err != nil {
					t.Fatal(err)
				}
				captureID = c.ID
			},
			want: transactions.NotificationApplied, event: "capture-succeeded",
			check: func(t *testing.T, got *coreapi.Transaction) {
				if got.Status != coreapi.TransactionCaptureSucceeded || got.CapturedAmount != 4300 || got.CapturePendingAmount != 0 {
					t.Fatalf("%+v", got.TransactionState)
				}
			}},
		{name: "refund failed", id: "ntf_r", typ: "refund.failed", auth: "captured", op: func() string { return refundID }, opState: func() string { return "failed" },
			before: func(t *testing.T) {
				_, r, err := s.ReserveRefund(ctx, "default", tx.ID, coreapi.NewRefund{Amount: ptr(int64(1000))})
				if err != nil {
					t.Fatal(err)
				}
				refundID = r.ID
			},
			want: transactions.NotificationApplied, event: "refund-failed",
			check: func(t *testing.T, got *coreapi.Transaction) {
				r, err := s.GetRefund(ctx, "default", refundID)
				if got.RefundPendingAmount != 0 || got.RefundedAmount != 0 || err != nil || r.Status != coreapi.OperationFailed || *r.ErrorCode != "acquirer_refused" {
					t.Fatalf("%+v, refund %+v %v", got.TransactionState, r, err)
				}
			}},
		{name: "a capture result naming no capture of the payment", id: "ntf_x", typ: "capture.succeeded", auth: "captured",
			op: func() string { return uuid.NewString() }, opState: func() string { return "succeeded" },
			want: transactions.NotificationRecorded, event: coreapi.EventNotificationReceived},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before(t)
			}
			op, opState := "", ""
			if tc.op != nil {
				op, opState = tc.op(), tc.opState()
			}
			before, err := s.Events(ctx, "default", tx.ID, allPage())
			if err != nil {
				t.Fatal(err)
			}
			h, body := cardNotification(t, tc.id, tc.typ, tx.ID, tc.auth, op, opState)
			out, err := s.HandleNotification(ctx, connector.MockCardName, "default", h, body, time.Now())
			if out != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("got %q, %v; want %q, %v", out, err, tc.want, tc.err)
			}
			evs, err := s.Events(ctx, "default", tx.ID, allPage())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.event == "" && len(evs) != len(before):
				t.Fatalf("recorded %+v", evs[0])
			case tc.event != "" && (evs[0].Name != tc.event || evs[0].Notification == nil || evs[0].Notification.ID != tc.id || evs[0].Notification.Connector != connector.MockCardName):
				t.Fatalf("latest event %+v", evs[0])
			}
			if tc.check != nil {
				got, err := s.Get(ctx, "default", tx.ID)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, got)
			}
		})
	}

	t.Run("about no payment: unmatched", func(t *testing.T) {
		h, body := cardNotification(t, "ntf_u", "authorization.approved", uuid.NewString(), "authorized", "", "")
		if out, err := s.HandleNotification(ctx, connector.MockCardName, "default", h, body, time.Now()); out != transactions.NotificationUnmatched || err != nil {
			t.Fatalf("got %q, %v", out, err)
		}
	})
}
