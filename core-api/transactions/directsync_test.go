package transactions_test

import (
	"context"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
)

// lostDirect is mock-direct's connector whose operations' answers are
// lost: each is sent to the wallet (unless unsent) and answered as
// unknown.
type lostDirect struct {
	connector.MockDirect
	unsent bool
}

func (l lostDirect) Capture(ctx context.Context, r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	return lostOperation(ctx, l.unsent, l.MockDirect.Capture, r)
}

func (l lostDirect) Void(ctx context.Context, r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	return lostOperation(ctx, l.unsent, l.MockDirect.Void, r)
}

func (l lostDirect) Refund(ctx context.Context, r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	return lostOperation(ctx, l.unsent, l.MockDirect.Refund, r)
}

// A direct payment's capture, void or refund whose answer was lost stays
// in flight, its amount reserved; Sync settles it by the wallet's order,
// which lists its captures and refunds by the request id each was sent
// with and shows its void: succeeded when the wallet holds it, failed
// (not_received_by_processor) once SyncMinAge has passed when it does not.
func TestDirectOperationsSync(t *testing.T) {
	db := postgrestest.New(t)
	s, md, base := directService(t, db)
	runOperationsSync(t, s, func(intent string) *coreapi.Transaction {
		s.Direct.BuiltIn = md
		return directAuthorized(t, s, base, 1000, intent)
	}, func(lost, unsent bool) {
		if s.Direct.BuiltIn = md; lost {
			s.Direct.BuiltIn = lostDirect{MockDirect: md, unsent: unsent}
		}
	})
}

// lostOperation sends r with do (unless unsent) and loses the answer.
func lostOperation(ctx context.Context, unsent bool, do func(context.Context, connector.DirectOperation) (coreapi.ConnectorResult, error), r connector.DirectOperation) (coreapi.ConnectorResult, error) {
	if !unsent {
		_, _ = do(ctx, r)
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, connector.ErrOutcomeUnknown
}

// runOperationsSync loses the answer of a capture, void or refund of a
// payment of 1000 authorized by authorized (lose(true, unsent) makes the
// service's connector lose them; lose(false, false) restores it), and
// syncs it: settled by the processor's record of it, failed
// (not_received_by_processor) once SyncMinAge has passed when the
// processor never received it.
func runOperationsSync(t *testing.T, s *transactions.Service, authorized func(intent string) *coreapi.Transaction, lose func(lost, unsent bool)) {
	t.Helper()
	for _, tc := range []struct {
		name     string
		intent   string
		unsent   bool
		op       func(id string) error
		status   coreapi.TransactionStatus
		captured int64
		refunded int64
		event    string
	}{
		{"capture", coreapi.IntentAuthorize, false, func(id string) error {
			_, err := s.CaptureCard(ctx, "default", id, ptr(int64(300)))
			return err
		}, coreapi.TransactionCaptureSucceeded, 300, 0, "capture-succeeded"},
		{"capture never received", coreapi.IntentAuthorize, true, func(id string) error {
			_, err := s.CaptureCard(ctx, "default", id, ptr(int64(300)))
			return err
		}, coreapi.TransactionAuthorizationSucceeded, 0, 0, "capture-failed"},
		{"void", coreapi.IntentAuthorize, false, func(id string) error {
			_, err := s.VoidCard(ctx, "default", id)
			return err
		}, coreapi.TransactionAuthorizationVoided, 0, 0, "void-succeeded"},
		{"void never received", coreapi.IntentAuthorize, true, func(id string) error {
			_, err := s.VoidCard(ctx, "default", id)
			return err
		}, coreapi.TransactionAuthorizationSucceeded, 0, 0, "void-failed"},
		{"refund", coreapi.IntentCapture, false, func(id string) error {
			_, err := s.RefundCard(ctx, "default", id, coreapi.NewRefund{Amount: ptr(int64(250))})
			return err
		}, coreapi.TransactionCaptureSucceeded, 1000, 250, "refund-succeeded"},
		{"refund never received", coreapi.IntentCapture, true, func(id string) error {
			_, err := s.RefundCard(ctx, "default", id, coreapi.NewRefund{Amount: ptr(int64(250))})
			return err
		}, coreapi.TransactionCaptureSucceeded, 1000, 0, "refund-failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SyncMinAge = time.Hour
			tx := authorized(tc.intent)
			lose(true, tc.unsent)
			if err := tc.op(tx.ID); err != nil {
				t.Fatal(err)
			}
			inFlight, err := s.Get(ctx, "default", tx.ID)
			if err != nil || inFlight.CapturePendingAmount+inFlight.RefundPendingAmount == 0 && inFlight.Status != coreapi.TransactionAuthorizationVoidPending {
				t.Fatalf("after the lost answer: %+v %v", inFlight, err)
			}
			lose(false, false)
			got, err := s.Sync(ctx, "default", tx.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.unsent {
				// Young: it may still be on its way.
				if got.UpdatedAt != inFlight.UpdatedAt || got.Status != inFlight.Status {
					t.Fatalf("a young unknown operation was settled: %+v", got)
				}
				s.SyncMinAge = time.Nanosecond
				if got, err = s.Sync(ctx, "default", tx.ID); err != nil {
					t.Fatal(err)
				}
			}
			if got.Status != tc.status || got.CapturedAmount != tc.captured || got.RefundedAmount != tc.refunded ||
				got.CapturePendingAmount != 0 || got.RefundPendingAmount != 0 {
				t.Fatalf("synced: %+v", got)
			}
			evs, err := s.Events(ctx, "default", tx.ID, allPage())
			if err != nil || evs[0].Name != tc.event {
				t.Fatalf("latest event: %+v %v", evs[0], err)
			}
			// Synced again, nothing changes.
			again, err := s.Sync(ctx, "default", tx.ID)
			if err != nil || again.UpdatedAt != got.UpdatedAt {
				t.Fatalf("synced twice: %+v %v", again, err)
			}
		})
	}
}
