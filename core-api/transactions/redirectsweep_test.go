package transactions_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
)

// A notification lost while the buyer decides does not wait for the
// reference's expiry: the sweep looks up a redirect payment waiting for
// its buyer longer than SyncMinAge at mock-redirect and settles the
// decision it finds; one still undecided is left as it is.
func TestRedirectLostNotificationBySweep(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	s.QR = &transactions.QR{NotificationBaseURL: "http://127.0.0.1:1"} // nothing listens: every notification is lost
	w := &transactions.Sweeper{Service: s, Store: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	approved, err := s.PayRedirect(ctx, "default", gcash(1300, coreapi.IntentCapture))
	if err != nil {
		t.Fatal(err)
	}
	undecided, err := s.PayRedirect(ctx, "default", gcash(1400, coreapi.IntentCapture))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(m.URL()+"/sandbox/payments/"+*approved.PaymentServiceTransactionID+"/approve", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, err := s.Get(ctx, "default", approved.ID); err != nil || got.Status != coreapi.TransactionBuyerApprovalPending {
		t.Fatalf("the notification was not lost: %+v %v", got, err)
	}

	s.SyncMinAge = time.Hour // younger than the minimum age: left alone
	if res, err := w.Run(ctx); err != nil || res.Synced != 0 {
		t.Fatalf("sweep of young payments: %+v %v", res, err)
	}
	s.SyncMinAge = time.Nanosecond
	if res, err := w.Run(ctx); err != nil || res.Synced != 2 || res.Failed != 0 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	got, err := s.Get(ctx, "default", approved.ID)
	if err != nil || got.Status != coreapi.TransactionCaptureSucceeded || got.CapturedAmount != 1300 {
		t.Fatalf("approved, after the sweep: %+v %v", got, err)
	}
	evs, err := s.Events(ctx, "default", approved.ID, allPage())
	if err != nil || evs[0].Name != "sale-succeeded" || evs[0].Notification != nil {
		t.Fatalf("latest event: %+v %v", evs[0], err)
	}
	if still, err := s.Get(ctx, "default", undecided.ID); err != nil || still.Status != coreapi.TransactionBuyerApprovalPending || !still.UpdatedAt.Equal(undecided.UpdatedAt) {
		t.Fatalf("undecided, after the sweep: %+v %v", still, err)
	}
}
