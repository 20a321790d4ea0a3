package transactions_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/core-api/transactions"
)

// racingBank is mock-bank's connector whose charge is paid, and notified,
// before CreateQR returns: the notification reaches core-api while the
// creation has not recorded the connector's answer.
type racingBank struct {
	connector.MockBank
	s     *transactions.Service
	early error // what the notification sent during CreateQR got
	sent  []byte
	hdr   http.Header
}

func (b *racingBank) CreateQR(_ context.Context, r connector.QRCharge) (coreapi.ConnectorResult, error) {
	body, _ := json.Marshal(mockbank.Notification{ID: "mbn_race", Type: "qr_charge.paid", CreatedAt: time.Now(),
		Data: mockbank.Charge{ID: "mbq_race", Reference: r.Reference, Amount: r.Amount, Currency: r.Currency, Status: "paid"}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	b.sent, b.hdr = body, http.Header{"Mock-Bank-Timestamp": {ts}, "Mock-Bank-Notification-Id": {"mbn_race"},
		"Mock-Bank-Signature": {mockbank.Sign(connector.MockBankSandboxWebhookSecret, ts, body)}}
	_, b.early = b.s.HandleNotification(ctx, connector.MockBankName, r.MerchantAccountID, b.hdr, b.sent, time.Now())
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeCapturePending, Reference: "mbq_race", QRCode: "000201-race",
		ExpiresAt: time.Now().Add(time.Minute)}, nil
}

// A notification that arrives before the creation records the
// connector's answer is refused as early (409 on the wire) and recorded
// nowhere; sent again, as the processor does, it captures the payment,
// once.
func TestNotificationRacingTheCreation(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	bank := &racingBank{s: s}
	reg := connector.NewRegistry(bank)
	s.Connectors, s.QR = reg, &transactions.QR{BuiltIn: bank, NotificationBaseURL: "http://core.invalid"}
	s.PaymentServices = noPaymentServices{}

	tx, err := s.PayByQR(ctx, "default", coreapi.NewTransaction{Amount: 1500, Currency: "BRL", Method: ptr(coreapi.MethodPix)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(bank.early, coreapi.ErrNotificationEarly) {
		t.Fatalf("notification during the creation: %v, want ErrNotificationEarly", bank.early)
	}
	if tx.Status != coreapi.TransactionCapturePending || tx.QRCode == nil || tx.ApprovalExpiresAt == nil {
		t.Fatalf("created: %+v", tx)
	}
	if n := notificationEvents(t, s, tx.ID); n != 0 {
		t.Fatalf("the early notification left %d events", n)
	}
	for i, want := range []transactions.NotificationOutcome{transactions.NotificationApplied, transactions.NotificationDuplicate} {
		out, err := s.HandleNotification(ctx, connector.MockBankName, "default", bank.hdr, bank.sent, time.Now())
		if err != nil || out != want {
			t.Fatalf("send %d: %v, %v; want %s", i+1, out, err, want)
		}
	}
	tx, err = s.Get(ctx, "default", tx.ID)
	if err != nil || tx.Status != coreapi.TransactionCaptureSucceeded || tx.CapturedAmount != 1500 || tx.CapturePendingAmount != 0 {
		t.Fatalf("after the notification: %+v, %v", tx, err)
	}
	if n := notificationEvents(t, s, tx.ID); n != 1 {
		t.Fatalf("%d notification events, want 1", n)
	}

	// Another notification (a new id) about the settled charge is
	// recorded, the status unchanged.
	body, _ := json.Marshal(mockbank.Notification{ID: "mbn_again", Type: "qr_charge.paid", CreatedAt: time.Now(),
		Data: mockbank.Charge{ID: "mbq_race", Reference: tx.ID, Amount: 1500, Currency: "BRL", Status: "paid"}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	h := http.Header{"Mock-Bank-Timestamp": {ts}, "Mock-Bank-Signature": {mockbank.Sign(connector.MockBankSandboxWebhookSecret, ts, body)}}
	if out, err := s.HandleNotification(ctx, connector.MockBankName, "default", h, body, time.Now()); err != nil || out != transactions.NotificationRecorded {
		t.Fatalf("a later notification: %v, %v", out, err)
	}
	evs, err := s.Events(ctx, "default", tx.ID, allPage())
	if err != nil || evs[0].Name != coreapi.EventNotificationReceived || evs[0].StatusBefore != coreapi.TransactionCaptureSucceeded ||
		evs[0].StatusAfter != coreapi.TransactionCaptureSucceeded || evs[0].Notification == nil || evs[0].Notification.ID != "mbn_again" {
		t.Fatalf("latest event: %+v, %v", evs[0], err)
	}
	if got, _ := s.Get(ctx, "default", tx.ID); got.CapturedAmount != 1500 {
		t.Fatalf("captured %d after a later notification", got.CapturedAmount)
	}
}

// noPaymentServices is a merchant account without payment services: the
// built-in sandbox connector takes its payments.
type noPaymentServices struct{}

func (noPaymentServices) ForPayment(context.Context, string, *string, string) (*coreapi.PaymentService, connector.Config, error) {
	return nil, connector.Config{}, nil
}

func (noPaymentServices) ForOperation(context.Context, string, string) (*coreapi.PaymentService, connector.Config, error) {
	return nil, connector.Config{}, coreapi.ErrNotFound
}

func notificationEvents(t *testing.T, s *transactions.Service, id string) int {
	t.Helper()
	evs, err := s.Events(ctx, "default", id, allPage())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Notification != nil {
			n++
		}
	}
	return n
}
