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
	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/core-api/transactions"
)

// redirectNotification is mock-redirect's notification id of type typ
// about the payment paymentID with reference ref and status, as
// HandleNotification receives it, signed with secret ("": unsigned).
func redirectNotification(id, typ, status, paymentID, ref, secret string) (http.Header, []byte) {
	body, _ := json.Marshal(mockredirect.Notification{ID: id, Type: typ, CreatedAt: time.Now(),
		Data: mockredirect.Payment{ID: paymentID, Reference: ref, Method: coreapi.MethodGCash, Status: status}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	h := http.Header{mockredirect.HeaderTimestamp: {ts}, mockredirect.HeaderNotificationID: {id}}
	if secret != "" {
		h.Set(mockredirect.HeaderSignature, mockredirect.Sign(secret, ts, body))
	}
	return h, body
}

// mock-redirect's notifications go through the one notification seam
// (connector.NotificationConnector, kind authorization.result): verified,
// matched by the reference, recorded once by their id and applied to the
// authorization through the state machine, as every connector's are.
// The steps run in order on one payment waiting for its buyer.
func TestRedirectNotificationThroughTheSeam(t *testing.T) {
	db := postgrestest.New(t)
	s, _ := redirectService(t, db)
	tx, err := s.PayRedirect(ctx, "default", gcash(1300, coreapi.IntentAuthorize))
	if err != nil || tx.Status != coreapi.TransactionBuyerApprovalPending {
		t.Fatalf("created: %+v %v", tx, err)
	}
	pay, builtIn := *tx.PaymentServiceTransactionID, connector.MockRedirectSandboxWebhookSecret
	for _, tc := range []struct {
		name                 string
		connector            string
		id, typ, status, ref string
		secret               string
		want                 transactions.NotificationOutcome
		err                  error
		unmatched, events    int64 // the counter's growth; notification events after the step
		statusAfter          coreapi.TransactionStatus
	}{
		{name: "unsigned", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID,
			err: coreapi.ErrNotificationSignature, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "another secret", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID, secret: "whsec_not_the_configured_one",
			err: coreapi.ErrNotificationSignature, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "a connector that takes no notifications", connector: "mock-nothing", id: "mrn_a", status: "approved", ref: tx.ID, secret: builtIn,
			err: coreapi.ErrNotificationConnector, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "a type that is not the status", connector: connector.MockRedirectName, id: "mrn_a", typ: "payment.declined", status: "approved", ref: tx.ID, secret: builtIn,
			err: coreapi.ErrNotificationMalformed, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "no such transaction", connector: connector.MockRedirectName, id: "mrn_u", status: "approved", ref: uuid.NewString(), secret: builtIn,
			want: transactions.NotificationUnmatched, unmatched: 1, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "a reference that is no transaction id", connector: connector.MockRedirectName, id: "mrn_u", status: "approved", ref: "order-7", secret: builtIn,
			want: transactions.NotificationUnmatched, unmatched: 1, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "approved", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID, secret: builtIn,
			want: transactions.NotificationApplied, events: 1, statusAfter: coreapi.TransactionAuthorizationSucceeded},
		{name: "the same again", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID, secret: builtIn,
			want: transactions.NotificationDuplicate, events: 1, statusAfter: coreapi.TransactionAuthorizationSucceeded},
		{name: "a later decision", connector: connector.MockRedirectName, id: "mrn_d", status: "declined", ref: tx.ID, secret: builtIn,
			want: transactions.NotificationRecorded, events: 2, statusAfter: coreapi.TransactionAuthorizationSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := tc.typ
			if typ == "" {
				typ = "payment." + tc.status
			}
			h, body := redirectNotification(tc.id, typ, tc.status, pay, tc.ref, tc.secret)
			before := s.QR.Unmatched.Load()
			out, err := s.HandleNotification(ctx, tc.connector, "default", h, body, time.Now())
			if out != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("got %q, %v; want %q, %v", out, err, tc.want, tc.err)
			}
			if d := s.QR.Unmatched.Load() - before; d != tc.unmatched {
				t.Fatalf("unmatched counted %d, want %d", d, tc.unmatched)
			}
			got, err := s.Get(ctx, "default", tx.ID)
			if err != nil || got.Status != tc.statusAfter {
				t.Fatalf("after: %+v %v; want %s", got, err, tc.statusAfter)
			}
			if n := notificationEvents(t, s, tx.ID); int64(n) != tc.events {
				t.Fatalf("%d notification events, want %d", n, tc.events)
			}
		})
	}
	evs, err := s.Events(ctx, "default", tx.ID, allPage())
	if err != nil || evs[0].Name != coreapi.EventNotificationReceived || evs[0].Notification.ID != "mrn_d" ||
		evs[1].Name != "authorization-succeeded" || evs[1].Notification == nil || evs[1].Notification.ID != "mrn_a" ||
		evs[1].Notification.Connector != connector.MockRedirectName {
		t.Fatalf("events: %+v %v", evs[:2], err)
	}
}

// A redirect payment whose create has not recorded the connector's
// answer refuses a notification as early (409 on the wire): nothing is
// recorded, and the processor sends it again once the payment waits.
func TestRedirectNotificationEarly(t *testing.T) {
	db := postgrestest.New(t)
	s, _ := redirectService(t, db)
	s.Redirect.BuiltIn = lostRedirect{s.Redirect.BuiltIn.(connector.MockRedirect)}
	tx, err := s.PayRedirect(ctx, "default", gcash(800, coreapi.IntentCapture))
	if err != nil || tx.Status != coreapi.TransactionProcessing {
		t.Fatalf("created: %+v %v", tx, err)
	}
	h, body := redirectNotification("mrn_early", "payment.approved", "approved", "mrp_lost", tx.ID, connector.MockRedirectSandboxWebhookSecret)
	if out, err := s.HandleNotification(ctx, connector.MockRedirectName, "default", h, body, time.Now()); !errors.Is(err, coreapi.ErrNotificationEarly) {
		t.Fatalf("got %q, %v; want ErrNotificationEarly", out, err)
	}
	if n := notificationEvents(t, s, tx.ID); n != 0 {
		t.Fatalf("the early notification left %d events", n)
	}
}
