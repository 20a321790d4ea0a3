package transactions_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/core-api/transactions"
)

// redirectApproved is a gcash payment of amount with intent that its
// buyer approved at mock-redirect, the notification applied.
func redirectApproved(t *testing.T, s *transactions.Service, m *mockredirect.Main, amount int64, intent string) *coreapi.Transaction {
	t.Helper()
	tx, err := s.PayRedirect(ctx, "default", gcash(amount, intent))
	if err != nil {
		t.Fatal(err)
	}
	sandboxDecide(t, m, *tx.PaymentServiceTransactionID, "approve")
	if tx, err = s.Get(ctx, "default", tx.ID); err != nil || tx.CapturableAmount()+tx.CapturedAmount != amount {
		t.Fatalf("approved: %+v %v", tx, err)
	}
	return tx
}

// Captures, voids and refunds of redirect payments go through the state
// machine's reserve and settle to the real mock-direct over HTTP, as a
// direct payment's; what mock-redirect refuses is settled as declined,
// its amount freed.
func TestRedirectOperations(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	runOperations(t, db, s, func(amount int64, intent string) *coreapi.Transaction {
		return redirectApproved(t, s, m, amount, intent)
	})

	t.Run("refused by the processor", func(t *testing.T) {
		tx := redirectApproved(t, s, m, 800, coreapi.IntentAuthorize)
		rc := connector.MockRedirect{BaseURL: m.URL()}
		if res, err := rc.Void(ctx, connector.DirectOperation{OrderID: *tx.PaymentServiceTransactionID, Reference: "elsewhere"}); err != nil || res.Outcome != coreapi.OutcomeSucceeded {
			t.Fatalf("void at mock-redirect: %+v %v", res, err)
		}
		got, err := s.CaptureCard(ctx, "default", tx.ID, ptr(int64(100)))
		if err != nil || got.CapturedAmount != 0 || got.CapturePendingAmount != 0 || got.Status != coreapi.TransactionAuthorizationSucceeded {
			t.Fatalf("capture: %+v %v", got, err)
		}
		h := historyOf(t, s, "default", tx.ID)
		if last := h.events[len(h.events)-1]; last.Name != "capture-declined" || deref(last.RawResponseCode) != "payment_voided" {
			t.Fatalf("events: %+v", h.events)
		}
	})

	// Before the buyer decided there is nothing to capture, void or
	// refund: the state machine refuses, and nothing reaches mock-redirect.
	t.Run("waiting for the buyer", func(t *testing.T) {
		tx, err := s.PayRedirect(ctx, "default", gcash(700, coreapi.IntentAuthorize))
		if err != nil {
			t.Fatal(err)
		}
		before := snap(t, db, s, tx.ID)
		_, capErr := s.CaptureCard(ctx, "default", tx.ID, nil)
		_, voidErr := s.VoidCard(ctx, "default", tx.ID)
		_, refErr := s.RefundCard(ctx, "default", tx.ID, coreapi.NewRefund{})
		for err, code := range map[error]string{capErr: coreapi.CodeTransactionNotCapturable, voidErr: coreapi.CodeTransactionNotVoidable,
			refErr: coreapi.CodeTransactionNotRefundable} {
			if te := (*coreapi.TransitionError)(nil); !errors.As(err, &te) || te.Code != code {
				t.Fatalf("%v, want %s", err, code)
			}
		}
		if !reflect.DeepEqual(snap(t, db, s, tx.ID), before) {
			t.Fatal("a refusal changed the transaction")
		}
	})
}

// lostRedirectOps is mock-redirect's connector whose operations' answers
// are lost: each is sent (unless unsent) and answered as unknown.
type lostRedirectOps struct {
	connector.MockRedirect
	unsent bool
}

func (l lostRedirectOps) Capture(ctx context.Context, r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	return lostOperation(ctx, l.unsent, l.MockRedirect.Capture, r)
}

func (l lostRedirectOps) Void(ctx context.Context, r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	return lostOperation(ctx, l.unsent, l.MockRedirect.Void, r)
}

func (l lostRedirectOps) Refund(ctx context.Context, r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	return lostOperation(ctx, l.unsent, l.MockRedirect.Refund, r)
}

// A redirect payment's capture, void or refund whose answer was lost is
// settled by Sync from mock-redirect's record of the payment, as a direct
// payment's.
func TestRedirectOperationsSync(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	rc := connector.MockRedirect{BaseURL: m.URL()}
	runOperationsSync(t, s, func(intent string) *coreapi.Transaction {
		s.Redirect.BuiltIn = rc
		return redirectApproved(t, s, m, 1000, intent)
	}, func(lost, unsent bool) {
		if s.Redirect.BuiltIn = rc; lost {
			s.Redirect.BuiltIn = lostRedirectOps{MockRedirect: rc, unsent: unsent}
		}
	})
}
