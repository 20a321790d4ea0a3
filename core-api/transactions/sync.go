package transactions

import (
	"context"
	"errors"
	"log/slog"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/periodic"
)

// ErrorCodeNotReceived is the error_code of an authorization, capture,
// void or refund that the processor has no record of once
// DefaultSyncMinAge (Service.SyncMinAge) has passed since it was
// requested: it never reached the processor (core-api died before the
// call, or the processor refused it without recording it), and it never
// will, since its reference is not sent again (a retry of the request
// resumes it instead). It is settled as failed, which frees its amount.
const ErrorCodeNotReceived = "not_received_by_processor"

// DefaultSyncMinAge is how long an operation in flight is left alone
// before the processor's silence about it counts as its failure: longer
// than any call to a connector lasts (vault-proxy gives up on the
// processor after at most 60 s, a request's deadline is at most 55 s and
// a draining instance waits 75 s for its last requests).
const DefaultSyncMinAge = 5 * time.Minute

func (s *Service) syncMinAge() time.Duration {
	if s.SyncMinAge > 0 {
		return s.SyncMinAge
	}
	return DefaultSyncMinAge
}

// Sync asks the card connector what became of what is in flight on card
// payment id (an authorization still processing, a void pending, captures
// and refunds processing) and settles it with the answer through
// ApplyAuthorization, SettleVoid, SettleCapture and SettleRefund. It
// only asks (the Lookup, by the transaction's id, of the connector its
// payment service names, as a capture's would be sent to):
// it never sends an operation again, so it never charges. A transaction
// with nothing in flight is returned as it is.
//
// What the processor has no record of is left in flight while it may
// still be on its way, and settled as failed (ErrorCodeNotReceived) once
// SyncMinAge has passed since it was requested. A lookup that fails is a
// *coreapi.ConnectorError, and nothing changes.
func (s *Service) Sync(ctx context.Context, merchant, id string) (*coreapi.Transaction, error) {
	t, err := s.Store.Transaction(ctx, merchant, id)
	if err != nil {
		return nil, err
	}
	if directPayment(t) {
		return s.syncDirect(ctx, t)
	}
	if redirectPayment(t) {
		return s.syncRedirect(ctx, t)
	}
	if bankPayment(t) {
		return s.syncDebit(ctx, t)
	}
	if !cardPayment(t) {
		return nil, coreapi.ErrNotACardPayment
	}
	authorizing := t.Status == coreapi.TransactionProcessing
	f, err := s.inFlight(ctx, t)
	if err != nil {
		return nil, err
	}
	if !authorizing && f.none() {
		return t, nil
	}

	cards, cfg, err := s.cardsOf(ctx, t) // the payment service's connector, as for a capture
	if err != nil {
		return nil, err
	}
	st, err := cards.Lookup(ctx, connector.CardLookup{MerchantAccountID: merchant, PaymentMethodID: *t.PaymentMethod.ID, Reference: t.ID, Config: cfg})
	unknown := errors.Is(err, connector.ErrNotFound)
	if err != nil && !(unknown && authorizing) {
		return nil, &coreapi.ConnectorError{Failed: "the card connector could not tell what became of the transaction; nothing changed", Err: err}
	}
	if authorizing {
		res := st.ConnectorResult
		switch {
		case unknown && time.Since(t.CreatedAt) < s.syncMinAge(), !unknown && res.Outcome == coreapi.OutcomePending:
			return t, nil // may still be on its way, or undecided
		case unknown:
			res = notReceived
		}
		t, _, err = s.ApplyAuthorization(ctx, merchant, id, res)
		return t, err // nothing else can be in flight before the authorization
	}
	return s.settleInFlight(ctx, t, f, connector.DirectState{Captures: st.Captures, Refunds: st.Refunds, Voided: st.Voided}, st.Reference)
}

// notReceived is the answer of an operation the processor has no record
// of once SyncMinAge has passed (ErrorCodeNotReceived).
var notReceived = coreapi.ConnectorResult{Outcome: coreapi.OutcomeFailed, ErrorCode: ErrorCodeNotReceived}

// flight is what is in flight on an authorized transaction: its captures
// and refunds processing, and whether its void is pending.
type flight struct {
	captures []coreapi.Capture
	refunds  []coreapi.Refund
	voiding  bool
}

func (f flight) none() bool { return !f.voiding && len(f.captures) == 0 && len(f.refunds) == 0 }

// inFlight reads what is in flight on t.
func (s *Service) inFlight(ctx context.Context, t *coreapi.Transaction) (flight, error) {
	f := flight{voiding: t.Status == coreapi.TransactionAuthorizationVoidPending && t.VoidReference != nil}
	if t.CapturePendingAmount > 0 || t.RefundPendingAmount > 0 {
		var err error
		if f.captures, f.refunds, err = s.Store.ProcessingOperations(ctx, t.MerchantAccountID, t.ID); err != nil {
			return f, err
		}
	}
	return f, nil
}

// syncHeldOperations settles the captures, refunds and void in flight on
// transaction t, whose processor holds the payment under its own id (a
// direct order, a redirect payment), as a card payment's Sync does: the
// processor lists its captures and refunds by the reference each was
// sent with, and whether its authorization is voided (lookup, whose
// failure changes nothing: operationsLookupFailed).
func (s *Service) syncHeldOperations(ctx context.Context, t *coreapi.Transaction, lookup func() (connector.DirectState, error)) (*coreapi.Transaction, error) {
	f, err := s.inFlight(ctx, t)
	if err != nil || f.none() {
		return t, err
	}
	st, err := lookup()
	if err != nil {
		return nil, err
	}
	return s.settleInFlight(ctx, t, f, st, deref(t.PaymentServiceTransactionID))
}

// operationsLookupFailed is the error of a connector's lookup of a
// payment's operations that failed.
func operationsLookupFailed(err error) error {
	return &coreapi.ConnectorError{Failed: "the connector could not tell what became of the payment's operations; nothing changed", Err: err}
}

// settleInFlight settles what is in flight on t (f) by what the processor
// holds (st): a capture or refund it lists by its reference succeeded, a
// void it shows succeeded (its reference voidRef); what it does not hold
// is failed once SyncMinAge has passed since it was requested.
func (s *Service) settleInFlight(ctx context.Context, t *coreapi.Transaction, f flight, st connector.DirectState, voidRef string) (*coreapi.Transaction, error) {
	merchant, id := t.MerchantAccountID, t.ID
	now := time.Now()
	settled := func(since time.Time) bool { return now.Sub(since) >= s.syncMinAge() }
	captures, refunds, voiding := f.captures, f.refunds, f.voiding
	for _, c := range captures {
		if res, ok := stepAnswer(st.Captures, c.ID, settled(c.CreatedAt), notReceived); ok {
			if _, _, err := s.SettleCapture(ctx, merchant, id, c.ID, res); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range refunds {
		if res, ok := stepAnswer(st.Refunds, r.ID, settled(r.CreatedAt), notReceived); ok {
			if _, _, err := s.SettleRefund(ctx, merchant, id, r.ID, res); err != nil {
				return nil, err
			}
		}
	}
	if voiding {
		// Nothing else changes a transaction whose void is pending: its
		// updated_at is the void's request.
		res, ok := coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: voidRef}, st.Voided
		if !ok && settled(t.UpdatedAt) {
			res, ok = notReceived, true
		}
		if ok {
			if _, err := s.SettleVoid(ctx, merchant, id, *t.VoidReference, res); err != nil {
				return nil, err
			}
		}
	}
	return s.Store.Transaction(ctx, merchant, id)
}

// stepAnswer is the answer to settle a capture or refund (reference ref)
// with: the processor's outcome when it lists it (succeeded unless it
// says otherwise), failed (notReceived) when it does not and old says it
// would by now; ok false: leave it in flight, as for one the processor
// lists pending (its notification settles it).
func stepAnswer(steps []connector.CardStep, ref string, old bool, notReceived coreapi.ConnectorResult) (coreapi.ConnectorResult, bool) {
	if s, found := connector.Step(steps, ref); found {
		out := s.Outcome
		if out == "" {
			out = coreapi.OutcomeSucceeded
		}
		return coreapi.ConnectorResult{Outcome: out, Reference: s.ID}, out != coreapi.OutcomePending
	}
	return notReceived, old
}

// Unsettled names a transaction with something in flight, for the sweep.
type Unsettled struct {
	MerchantAccountID string
	ID                string
	CreatedAt         time.Time
}

// SweepStore finds what the sweep syncs (postgres.DB).
type SweepStore interface {
	// UnsettledTransactions returns up to limit card, bank, direct and
	// redirect transactions of every merchant account with an
	// authorization or a void unchanged for minAge, or a capture or
	// refund requested more than minAge ago, still in flight (a bank
	// debit's capture waiting for the bank's result among them), and the
	// redirect payments waiting for their buyer for more than minAge (a
	// lost notification); in the order (created_at, id), after after.
	UnsettledTransactions(ctx context.Context, minAge time.Duration, after Unsettled, limit int) ([]Unsettled, error)
	// ExpiredQRTransactions returns up to limit pix payments of every
	// merchant account still capture_pending past their QR code's
	// expiry, in the order (created_at, id), after after.
	ExpiredQRTransactions(ctx context.Context, after Unsettled, limit int) ([]Unsettled, error)
	// ExpiredApprovalTransactions returns up to limit redirect payments
	// of every merchant account still waiting for their buyer past their
	// reference's expiry, in the order (created_at, id), after after.
	ExpiredApprovalTransactions(ctx context.Context, after Unsettled, limit int) ([]Unsettled, error)
	// ExpiredChallenges returns up to limit card payments of every
	// merchant account still waiting for a 3-D Secure challenge past its
	// expiry, in the order (created_at, id), after after.
	ExpiredChallenges(ctx context.Context, after Unsettled, limit int) ([]Unsettled, error)
}

// Sweeper syncs (Service.Sync) the transactions that a crash, a lost
// answer, a lost notification or a failed settlement left with something
// in flight for longer than the service's SyncMinAge (bank debits
// among them), and fails the pix and redirect payments whose QR code or
// reference expired unpaid (Service.ExpireQR, Service.ExpireRedirect) and
// the card payments whose 3-D Secure challenge expired
// (Service.ExpireChallenge). Instances may sweep at once: a
// settlement given twice changes nothing the second time.
type Sweeper struct {
	Service *Service
	Store   SweepStore
	Log     *slog.Logger // required by Every
	Batch   int          // transactions per query (0: 100)
}

// SweepResult is what one run did.
type SweepResult struct {
	Synced  int // asked about and settled as far as the answer allowed
	Failed  int // the lookup or the settlement failed; the next run tries again
	Expired int // pix and redirect payments and 3-D Secure challenges past their expiry, ended (or found paid)
}

// Run syncs every transaction found, a batch at a time, until none is
// left or ctx ends. The failure of one is logged and does not stop the
// others.
func (w *Sweeper) Run(ctx context.Context) (SweepResult, error) {
	batch := w.Batch
	if batch <= 0 {
		batch = 100
	}
	var res SweepResult
	now := time.Now
	passes := []struct {
		find  func(after Unsettled) ([]Unsettled, error)
		do    func(u Unsettled) error
		count *int
	}{
		{func(after Unsettled) ([]Unsettled, error) {
			return w.Store.UnsettledTransactions(ctx, w.Service.syncMinAge(), after, batch)
		}, func(u Unsettled) error {
			_, err := w.Service.Sync(ctx, u.MerchantAccountID, u.ID)
			return err
		}, &res.Synced},
		{func(after Unsettled) ([]Unsettled, error) { return w.Store.ExpiredQRTransactions(ctx, after, batch) },
			func(u Unsettled) error {
				_, err := w.Service.ExpireQR(ctx, u.MerchantAccountID, u.ID, now())
				return err
			}, &res.Expired},
		{func(after Unsettled) ([]Unsettled, error) {
			return w.Store.ExpiredApprovalTransactions(ctx, after, batch)
		},
			func(u Unsettled) error {
				_, err := w.Service.ExpireRedirect(ctx, u.MerchantAccountID, u.ID, now())
				return err
			}, &res.Expired},
		{func(after Unsettled) ([]Unsettled, error) { return w.Store.ExpiredChallenges(ctx, after, batch) },
			func(u Unsettled) error {
				_, err := w.Service.ExpireChallenge(ctx, u.MerchantAccountID, u.ID, now())
				return err
			}, &res.Expired},
	}
	for _, p := range passes {
		if err := w.each(ctx, batch, p.find, p.do, p.count, &res.Failed); err != nil {
			return res, err
		}
	}
	return res, nil
}

// each runs do on every transaction find returns, a batch at a time,
// counting each in done or failed; the failure of one is logged and does
// not stop the others.
func (w *Sweeper) each(ctx context.Context, batch int, find func(after Unsettled) ([]Unsettled, error), do func(Unsettled) error, done, failed *int) error {
	var after Unsettled
	for {
		found, err := find(after)
		if err != nil {
			return err
		}
		for _, u := range found {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := do(u); err != nil {
				*failed++
				w.Log.WarnContext(ctx, "transaction sweep step failed; the next sweep tries again",
					"merchant_account_id", u.MerchantAccountID, "transaction_id", u.ID, "err", err)
				continue
			}
			*done++
		}
		if len(found) < batch {
			return nil
		}
		after = found[len(found)-1]
	}
}

// Every runs Run every interval until ctx ends.
func (w *Sweeper) Every(ctx context.Context, interval time.Duration) {
	periodic.Every(ctx, interval, interval, func(ctx context.Context) {
		res, err := w.Run(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			w.Log.ErrorContext(ctx, "transaction sweep failed", "synced", res.Synced, "failed", res.Failed, "err", err)
		case res.Synced+res.Failed+res.Expired > 0:
			w.Log.InfoContext(ctx, "transaction sweep: synced what was in flight", "synced", res.Synced, "expired", res.Expired, "failed", res.Failed)
		}
	})
}
