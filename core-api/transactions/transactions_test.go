package transactions_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/pagination"
)

var ctx = context.Background()

func service(db *postgres.DB) *transactions.Service {
	return &transactions.Service{Store: postgres.TransactionsStore{DB: db}}
}

func ptr[T any](v T) *T { return &v }

// create stores a transaction of amount in merchant, paid with a method
// that has no stored payment method.
func create(t *testing.T, s *transactions.Service, merchant string, amount int64, intent string) *coreapi.Transaction {
	t.Helper()
	tx, err := s.Create(ctx, merchant, coreapi.NewTransaction{Intent: intent, Amount: amount, Currency: "EUR", Method: ptr("gcash")})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func answer(o coreapi.Outcome) coreapi.ConnectorResult {
	return coreapi.ConnectorResult{Outcome: o, Reference: "ref-" + uuid.NewString(), RawResponseCode: string(o)}
}

// authorized stores a transaction of amount with intent, authorized: with
// intent capture, captured in full too.
func authorized(t *testing.T, s *transactions.Service, merchant string, amount int64, intent string) *coreapi.Transaction {
	t.Helper()
	tx := create(t, s, merchant, amount, intent)
	tx, _, err := s.ApplyAuthorization(ctx, merchant, tx.ID, answer(coreapi.OutcomeSucceeded))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// void asks for a void of transaction id and settles it with outcome; it
// returns the void's reference.
func void(t *testing.T, s *transactions.Service, id string, o coreapi.Outcome) string {
	t.Helper()
	_, ref, err := s.RequestVoid(ctx, "default", id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettleVoid(ctx, "default", id, ref, answer(o)); err != nil {
		t.Fatal(err)
	}
	return ref
}

// capture reserves a capture of amount of transaction id and settles it
// with outcome.
func capture(t *testing.T, s *transactions.Service, id string, amount int64, o coreapi.Outcome) *coreapi.Capture {
	t.Helper()
	_, c, err := s.ReserveCapture(ctx, "default", id, &amount)
	if err != nil {
		t.Fatal(err)
	}
	if _, c, err = s.SettleCapture(ctx, "default", id, c.ID, answer(o)); err != nil {
		t.Fatal(err)
	}
	return c
}

func allPage() pagination.Page { return pagination.Page{Limit: pagination.MaxLimit} }

// history is a transaction's events, oldest first, and its refunds.
type history struct {
	events  []coreapi.TransactionEvent
	refunds []coreapi.Refund
}

func historyOf(t *testing.T, s *transactions.Service, merchant, id string) history {
	t.Helper()
	var h history
	for page := allPage(); ; {
		evs, err := s.Events(ctx, merchant, id, page)
		if err != nil {
			t.Fatal(err)
		}
		env := pagination.Build(page, evs, func(e coreapi.TransactionEvent) pagination.Key {
			return pagination.Key{Time: e.CreatedAt, ID: e.ID}
		})
		h.events = append(h.events, env.Items...)
		if len(evs) <= page.Limit {
			break
		}
		last := env.Items[len(env.Items)-1]
		page.Boundary = &pagination.Key{Time: last.CreatedAt, ID: last.ID}
	}
	for i, j := 0, len(h.events)-1; i < j; i, j = i+1, j-1 { // newest first -> oldest first
		h.events[i], h.events[j] = h.events[j], h.events[i]
	}
	refunds, err := s.Refunds(ctx, merchant, id, allPage())
	if err != nil {
		t.Fatal(err)
	}
	if len(refunds) > pagination.MaxLimit {
		t.Fatalf("more than %d refunds", pagination.MaxLimit)
	}
	h.refunds = refunds
	return h
}

// checkHistory replays a transaction's events through the state machine,
// oldest first: each starts from the status the one before it left, and
// together they make the transaction's state. The settled and reserved
// amounts of its captures and refunds are its amount fields.
func checkHistory(t *testing.T, db *postgres.DB, s *transactions.Service, tx *coreapi.Transaction) history {
	t.Helper()
	h := historyOf(t, s, tx.MerchantAccountID, tx.ID)
	if len(h.events) == 0 || h.events[0].Name != coreapi.EventTransactionCreated {
		t.Fatalf("the first event is not the creation: %+v", h.events)
	}
	state := coreapi.TransactionState{Status: coreapi.TransactionProcessing, Amount: tx.Amount}
	for _, e := range h.events[1:] {
		if e.StatusBefore != state.Status {
			t.Fatalf("event %s starts from %s; the one before left %s", e.Name, e.StatusBefore, state.Status)
		}
		next, err := state.Apply(coreapi.TransactionOperation(e.Name), e.Amount)
		if err != nil {
			t.Fatalf("replaying %s %d from %+v: %v", e.Name, e.Amount, state, err)
		}
		if next.Status != e.StatusAfter {
			t.Fatalf("event %s ends at %s; replayed, %s", e.Name, e.StatusAfter, next.Status)
		}
		state = next
	}
	if state != tx.TransactionState {
		t.Fatalf("the events make %+v; the transaction is %+v", state, tx.TransactionState)
	}
	var sums struct{ captured, capturePending, refunded, refundPending int64 }
	if err := db.Pool.QueryRow(ctx, `SELECT
			coalesce(sum(amount) FILTER (WHERE status = 'succeeded'), 0), coalesce(sum(amount) FILTER (WHERE status = 'processing'), 0)
			FROM captures WHERE merchant_account_id = $1 AND transaction_id = $2`, tx.MerchantAccountID, tx.ID).
		Scan(&sums.captured, &sums.capturePending); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.refunds {
		switch r.Status {
		case coreapi.OperationSucceeded:
			sums.refunded += r.Amount
		case coreapi.OperationProcessing:
			sums.refundPending += r.Amount
		}
	}
	if sums.captured != tx.CapturedAmount || sums.capturePending != tx.CapturePendingAmount ||
		sums.refunded != tx.RefundedAmount || sums.refundPending != tx.RefundPendingAmount {
		t.Fatalf("captures and refunds sum to %+v; the transaction has %+v", sums, tx.TransactionState)
	}
	return h
}

// 50 captures and 50 refunds of one transaction at once, each reserved,
// then settled (succeeded, declined or failed) after a "connector call"
// while the others run: however they interleave, the amounts are never
// exceeded, every refusal is the state machine's, and the history (the
// events, the captures and the refunds) adds up to the amount fields.
func TestConcurrentCapturesAndRefunds(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	tx := authorized(t, s, "default", 10_000, coreapi.IntentAuthorize)

	outcome := func(i int) coreapi.Outcome {
		switch i % 6 {
		case 0:
			return coreapi.OutcomeDeclined
		case 1:
			return coreapi.OutcomeFailed
		}
		return coreapi.OutcomeSucceeded
	}
	call := func() { time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) }
	refused := func(err error, codes ...string) bool {
		var te *coreapi.TransitionError
		if !errors.As(err, &te) {
			return false
		}
		for _, c := range codes {
			if te.Code == c {
				return true
			}
		}
		return false
	}

	// reserve makes a request until it goes through or is refused for
	// good: a refusal in flight (409) says to retry once what is in
	// flight settles.
	reserve := func(try func() (string, error)) (string, error) {
		for {
			id, err := try()
			var te *coreapi.TransitionError
			if !errors.As(err, &te) || !te.InFlight {
				return id, err
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Go(func() {
			id, err := reserve(func() (string, error) {
				_, c, err := s.ReserveCapture(ctx, "default", tx.ID, ptr(int64(300)))
				if err != nil {
					return "", err
				}
				return c.ID, nil
			})
			if err != nil {
				if !refused(err, coreapi.CodeCaptureExceedsAuthorized) {
					errs <- err
				}
				return
			}
			call()
			if _, _, err := s.SettleCapture(ctx, "default", tx.ID, id, answer(outcome(i))); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			id, err := reserve(func() (string, error) {
				_, r, err := s.ReserveRefund(ctx, "default", tx.ID, coreapi.NewRefund{Amount: ptr(int64(250))})
				if err != nil {
					return "", err
				}
				return r.ID, nil
			})
			if err != nil {
				if !refused(err, coreapi.CodeRefundExceedsCaptured, coreapi.CodeTransactionNotRefundable) {
					errs <- err
				}
				return
			}
			call()
			if _, _, err := s.SettleRefund(ctx, "default", tx.ID, id, answer(outcome(i+3))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	after, err := s.Get(ctx, "default", tx.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.CapturePendingAmount != 0 || after.RefundPendingAmount != 0 {
		t.Fatalf("reservations left after every call settled: %+v", after.TransactionState)
	}
	if after.CapturedAmount == 0 || after.RefundedAmount == 0 || after.Status != coreapi.TransactionCaptureSucceeded {
		t.Fatalf("the run captured or refunded nothing: %+v", after.TransactionState)
	}
	h := checkHistory(t, db, s, after)
	t.Logf("captured %d of %d, refunded %d, in %d events and %d refunds",
		after.CapturedAmount, after.AuthorizedAmount, after.RefundedAmount, len(h.events), len(h.refunds))
}

// While captures are in flight, their amounts are reserved: a capture
// that fits the authorization only if they fail is refused, as in flight
// (409), until one of them settles.
func TestReservationsHoldWhileTheConnectorIsCalled(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	tx := authorized(t, s, "default", 1000, coreapi.IntentAuthorize)

	_, first, err := s.ReserveCapture(ctx, "default", tx.ID, ptr(int64(600)))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.ReserveCapture(ctx, "default", tx.ID, ptr(int64(500)))
	var te *coreapi.TransitionError
	if !errors.As(err, &te) || te.Code != coreapi.CodeCaptureExceedsAuthorized || !te.InFlight {
		t.Fatalf("a capture beyond what the reservation leaves: %v; want capture_exceeds_authorized, in flight", err)
	}
	if _, _, err := s.ReserveRefund(ctx, "default", tx.ID, coreapi.NewRefund{}); !errors.As(err, &te) || te.Code != coreapi.CodeTransactionNotRefundable || !te.InFlight {
		t.Fatalf("a refund while the only capture is in flight: %v", err)
	}
	if _, _, err := s.SettleCapture(ctx, "default", tx.ID, first.ID, answer(coreapi.OutcomeDeclined)); err != nil {
		t.Fatal(err)
	}
	after, c, err := s.ReserveCapture(ctx, "default", tx.ID, nil) // all that is left
	if err != nil || c.Amount != 1000 || after.CapturePendingAmount != 1000 || after.Status != coreapi.TransactionCapturePending {
		t.Fatalf("capture of the rest once the first was declined: %v, %+v", err, after)
	}
	checkHistory(t, db, s, after)
}

// snapshot is all that a refused operation must leave as it was.
type snapshot struct {
	tx       coreapi.Transaction
	events   int
	refunds  int
	captures int
}

func snap(t *testing.T, db *postgres.DB, s *transactions.Service, id string) snapshot {
	t.Helper()
	tx, err := s.Get(ctx, "default", id)
	if err != nil {
		t.Fatal(err)
	}
	h := historyOf(t, s, "default", id)
	sn := snapshot{tx: *tx, events: len(h.events), refunds: len(h.refunds)}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM captures WHERE transaction_id = $1`, id).Scan(&sn.captures); err != nil {
		t.Fatal(err)
	}
	return sn
}

// Illegal operations are refused with the state machine's typed error,
// final (422), and change nothing: not the transaction, its events, its
// captures or its refunds.
func TestIllegalOperationsChangeNothing(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)

	voided := authorized(t, s, "default", 1000, coreapi.IntentAuthorize)
	void(t, s, voided.ID, coreapi.OutcomeSucceeded)
	partly := authorized(t, s, "default", 1000, coreapi.IntentAuthorize)
	c := capture(t, s, partly.ID, 500, coreapi.OutcomeSucceeded)
	declined := create(t, s, "default", 1000, coreapi.IntentAuthorize)
	if _, _, err := s.ApplyAuthorization(ctx, "default", declined.ID, answer(coreapi.OutcomeDeclined)); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		id   string
		op   func(id string) error
		code string
	}{
		{"capture-a-voided-transaction", voided.ID, func(id string) error {
			_, _, err := s.ReserveCapture(ctx, "default", id, ptr(int64(1)))
			return err
		}, coreapi.CodeTransactionNotCapturable},
		{"refund-a-voided-transaction", voided.ID, func(id string) error {
			_, _, err := s.ReserveRefund(ctx, "default", id, coreapi.NewRefund{})
			return err
		}, coreapi.CodeTransactionNotRefundable},
		{"refund-more-than-captured", partly.ID, func(id string) error {
			_, _, err := s.ReserveRefund(ctx, "default", id, coreapi.NewRefund{Amount: ptr(int64(501))})
			return err
		}, coreapi.CodeRefundExceedsCaptured},
		{"capture-more-than-authorized", partly.ID, func(id string) error {
			_, _, err := s.ReserveCapture(ctx, "default", id, ptr(int64(501)))
			return err
		}, coreapi.CodeCaptureExceedsAuthorized},
		{"void-after-capture", partly.ID, func(id string) error {
			_, _, err := s.RequestVoid(ctx, "default", id)
			return err
		}, coreapi.CodeTransactionNotVoidable},
		{"settle-a-settled-capture-otherwise", partly.ID, func(id string) error {
			_, _, err := s.SettleCapture(ctx, "default", id, c.ID, answer(coreapi.OutcomeDeclined))
			return err
		}, coreapi.CodeNoCapturePending},
		{"void-a-declined-transaction", declined.ID, func(id string) error {
			_, _, err := s.RequestVoid(ctx, "default", id)
			return err
		}, coreapi.CodeTransactionNotVoidable},
		{"authorize-a-declined-transaction", declined.ID, func(id string) error {
			_, _, err := s.ApplyAuthorization(ctx, "default", id, answer(coreapi.OutcomeSucceeded))
			return err
		}, coreapi.CodeTransactionNotAuthorizable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snap(t, db, s, tc.id)
			err := tc.op(tc.id)
			var te *coreapi.TransitionError
			if !errors.As(err, &te) || te.Code != tc.code || te.InFlight {
				t.Fatalf("= %v; want %s, final", err, tc.code)
			}
			if after := snap(t, db, s, tc.id); !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused operation changed the transaction:\n%+v\n%+v", before, after)
			}
		})
	}
}

// An answer given twice (the connector's reply and its notification)
// changes nothing the second time; an answer about an earlier void
// attempt is refused.
func TestAnswersGivenTwice(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	count := func(id string) int { return len(historyOf(t, s, "default", id).events) }

	tx := create(t, s, "default", 1000, coreapi.IntentAuthorize)
	for range 2 {
		if _, _, err := s.ApplyAuthorization(ctx, "default", tx.ID, answer(coreapi.OutcomeSucceeded)); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(tx.ID); n != 2 {
		t.Fatalf("%d events after an authorization answered twice; want 2", n)
	}
	_, c, err := s.ReserveCapture(ctx, "default", tx.ID, ptr(int64(100)))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, got, err := s.SettleCapture(ctx, "default", tx.ID, c.ID, answer(coreapi.OutcomeSucceeded)); err != nil || got.Status != coreapi.OperationSucceeded {
			t.Fatalf("settle: %v, %+v", err, got)
		}
	}
	after, err := s.Get(ctx, "default", tx.ID)
	if err != nil || after.CapturedAmount != 100 || count(tx.ID) != 4 {
		t.Fatalf("after a capture answered twice: %+v, %d events", after, count(tx.ID))
	}

	v := authorized(t, s, "default", 1000, coreapi.IntentAuthorize)
	first := void(t, s, v.ID, coreapi.OutcomeDeclined)
	_, second, err := s.RequestVoid(ctx, "default", v.ID)
	if err != nil || second == first {
		t.Fatalf("a second void attempt: %v, reference %q", err, second)
	}
	var te *coreapi.TransitionError
	if _, err := s.SettleVoid(ctx, "default", v.ID, first, answer(coreapi.OutcomeSucceeded)); !errors.As(err, &te) || te.Code != coreapi.CodeNoVoidPending {
		t.Fatalf("an answer about the first attempt: %v", err)
	}
	for range 2 {
		if got, err := s.SettleVoid(ctx, "default", v.ID, second, answer(coreapi.OutcomeSucceeded)); err != nil || got.Status != coreapi.TransactionAuthorizationVoided {
			t.Fatalf("void: %v, %+v", err, got)
		}
	}
	final, err := s.Get(ctx, "default", v.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkHistory(t, db, s, final)
}

// A processor may notify a capture's or refund's result before its
// answer to the request itself, pending, is recorded: the pending answer
// then comes after the result and changes nothing, and the request that
// made the operation answers as it stands rather than fail (a merchant
// told the capture failed would capture again).
func TestPendingAnswerAfterTheResult(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	count := func(id string) int { return len(historyOf(t, s, "default", id).events) }
	tx := authorized(t, s, "default", 1000, coreapi.IntentAuthorize)

	_, c, err := s.ReserveCapture(ctx, "default", tx.ID, ptr(int64(600)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SettleCapture(ctx, "default", tx.ID, c.ID, answer(coreapi.OutcomeSucceeded)); err != nil {
		t.Fatal(err)
	}
	events := count(tx.ID)
	got, gotC, err := s.SettleCapture(ctx, "default", tx.ID, c.ID, answer(coreapi.OutcomePending))
	if err != nil || gotC.Status != coreapi.OperationSucceeded || got.CapturedAmount != 600 || got.CapturePendingAmount != 0 {
		t.Fatalf("a pending answer after the capture's result: %v, capture %+v, transaction %+v", err, gotC, got)
	}
	if n := count(tx.ID); n != events {
		t.Fatalf("%d events after the pending answer, want %d", n, events)
	}

	_, r, err := s.ReserveRefund(ctx, "default", tx.ID, coreapi.NewRefund{Amount: ptr(int64(200))})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SettleRefund(ctx, "default", tx.ID, r.ID, answer(coreapi.OutcomeFailed)); err != nil {
		t.Fatal(err)
	}
	got, gotR, err := s.SettleRefund(ctx, "default", tx.ID, r.ID, answer(coreapi.OutcomePending))
	if err != nil || gotR.Status != coreapi.OperationFailed || got.RefundedAmount != 0 || got.RefundPendingAmount != 0 {
		t.Fatalf("a pending answer after the refund's result: %v, refund %+v, transaction %+v", err, gotR, got)
	}
	final, err := s.Get(ctx, "default", tx.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkHistory(t, db, s, final)
}

// A sale (intent capture) records its capture: settled at once, or
// pending until the processor's notification settles it.
func TestSales(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)

	now := create(t, s, "default", 700, coreapi.IntentCapture)
	now, c, err := s.ApplyAuthorization(ctx, "default", now.ID, answer(coreapi.OutcomeSucceeded))
	if err != nil || now.Status != coreapi.TransactionCaptureSucceeded || now.CapturedAmount != 700 || c.Status != coreapi.OperationSucceeded || now.CapturedAt == nil {
		t.Fatalf("sale: %v, %+v, %+v", err, now, c)
	}
	checkHistory(t, db, s, now)

	later := create(t, s, "default", 800, coreapi.IntentCapture)
	later, c, err = s.ApplyAuthorization(ctx, "default", later.ID, answer(coreapi.OutcomeCapturePending))
	if err != nil || later.Status != coreapi.TransactionCapturePending || later.CapturePendingAmount != 800 || c.Status != coreapi.OperationProcessing {
		t.Fatalf("pending sale: %v, %+v, %+v", err, later, c)
	}
	later, _, err = s.SettleCapture(ctx, "default", later.ID, c.ID, answer(coreapi.OutcomeSucceeded))
	if err != nil || later.Status != coreapi.TransactionCaptureSucceeded || later.CapturedAmount != 800 {
		t.Fatalf("its notification: %v, %+v", err, later)
	}
	checkHistory(t, db, s, later)
}

// Another merchant account's transaction, capture and refund are not
// found by any call, which changes nothing.
func TestMerchantScoping(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	other := "other"
	if err := db.InTx(ctx, func(tx *postgres.Tx) error {
		_, err := tx.CreateMerchantAccount(ctx, coreapi.NewMerchantAccount{ID: &other, DisplayName: &other})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tx := authorized(t, s, "default", 1000, coreapi.IntentCapture)
	_, r, err := s.ReserveRefund(ctx, "default", tx.ID, coreapi.NewRefund{Amount: ptr(int64(10))})
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := s.ReserveCapture(ctx, "default", authorized(t, s, "default", 5, coreapi.IntentAuthorize).ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherTx := authorized(t, s, other, 1000, coreapi.IntentCapture)
	before := snap(t, db, s, tx.ID)

	for name, call := range map[string]func() error{
		"get":     func() error { _, err := s.Get(ctx, other, tx.ID); return err },
		"events":  func() error { _, err := s.Events(ctx, other, tx.ID, allPage()); return err },
		"refunds": func() error { _, err := s.Refunds(ctx, other, tx.ID, allPage()); return err },
		"refund":  func() error { _, err := s.GetRefund(ctx, other, r.ID); return err },
		"authorize": func() error {
			_, _, err := s.ApplyAuthorization(ctx, other, tx.ID, answer(coreapi.OutcomeSucceeded))
			return err
		},
		"capture": func() error { _, _, err := s.ReserveCapture(ctx, other, tx.ID, nil); return err },
		"settle-capture": func() error {
			_, _, err := s.SettleCapture(ctx, other, c.TransactionID, c.ID, answer(coreapi.OutcomeSucceeded))
			return err
		},
		"settle-capture-of-another-transaction": func() error {
			_, _, err := s.SettleCapture(ctx, "default", tx.ID, c.ID, answer(coreapi.OutcomeSucceeded))
			return err
		},
		"void":           func() error { _, _, err := s.RequestVoid(ctx, other, tx.ID); return err },
		"refund-request": func() error { _, _, err := s.ReserveRefund(ctx, other, tx.ID, coreapi.NewRefund{}); return err },
		"settle-refund": func() error {
			_, _, err := s.SettleRefund(ctx, other, tx.ID, r.ID, answer(coreapi.OutcomeSucceeded))
			return err
		},
		"settle-refund-under-another-transaction": func() error {
			_, _, err := s.SettleRefund(ctx, other, otherTx.ID, r.ID, answer(coreapi.OutcomeSucceeded))
			return err
		},
		"not-a-uuid": func() error { _, err := s.Get(ctx, "default", "nope"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, coreapi.ErrNotFound) {
				t.Fatalf("= %v; want ErrNotFound", err)
			}
		})
	}
	if after := snap(t, db, s, tx.ID); !reflect.DeepEqual(after, before) {
		t.Fatalf("calls in another account changed the transaction:\n%+v\n%+v", before, after)
	}
	list, err := s.List(ctx, other, coreapi.TransactionFilter{}, allPage())
	if err != nil || len(list) != 1 || list[0].ID != otherTx.ID {
		t.Fatalf("the other account lists %+v, %v; want only its own", list, err)
	}
}

// A transaction paid with a stored payment method keeps its display data
// and buyer; one of another account, or a buyer it does not have, is
// refused and nothing is stored.
func TestCreateWithAStoredPaymentMethod(t *testing.T) {
	db := postgrestest.New(t)
	s := service(db)
	b, err := db.CreateBuyer(ctx, "default", coreapi.BuyerFields{ExternalIdentifier: coreapi.Some("buyer-1")})
	if err != nil {
		t.Fatal(err)
	}
	pm := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111", BIN: "411111", BuyerID: b.ID})

	tx, err := s.Create(ctx, "default", coreapi.NewTransaction{Amount: 1299, Currency: "USD", Country: ptr("US"), PaymentMethodID: &pm,
		TransactionDetails: coreapi.TransactionDetails{CartItems: []coreapi.CartItem{{Name: "Shoes", Quantity: 1, UnitAmount: 1299}},
			Metadata: map[string]string{"order": "42"}, ExternalIdentifier: ptr("order-42"), InstallmentCount: ptr(int32(3))}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "default", tx.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != coreapi.TransactionProcessing || got.Intent != coreapi.IntentAuthorize || got.PaymentSource != coreapi.PaymentSourceECommerce ||
		*got.PaymentMethod.ID != pm || got.PaymentMethod.Method != "card" || *got.PaymentMethod.Scheme != "visa" || *got.PaymentMethod.Label != "1111" ||
		*got.BuyerID != b.ID || *got.BuyerExternalIdentifier != "buyer-1" || got.CartItems[0].Name != "Shoes" || got.Metadata["order"] != "42" ||
		*got.InstallmentCount != 3 || !got.CreatedAt.Equal(tx.CreatedAt) {
		t.Fatalf("stored %+v", got)
	}

	// The buyer by external identifier, with no stored payment method.
	byExt, err := s.Create(ctx, "default", coreapi.NewTransaction{Amount: 1, Currency: "USD", Method: ptr("card"), BuyerExternalIdentifier: ptr("buyer-1")})
	if err != nil || byExt.BuyerID == nil || *byExt.BuyerID != b.ID || *byExt.BuyerExternalIdentifier != "buyer-1" {
		t.Fatalf("by external identifier: %+v, %v", byExt, err)
	}

	var ve *coreapi.ValidationError
	for name, tc := range map[string]struct {
		n    coreapi.NewTransaction
		want func(error) bool
	}{
		"unknown-buyer-external-identifier": {coreapi.NewTransaction{Amount: 1, Currency: "USD", Method: ptr("card"), BuyerExternalIdentifier: ptr("nobody")},
			func(err error) bool { return errors.Is(err, coreapi.ErrBuyerNotFound) }},
		"buyer-id-and-external-identifier-of-two-buyers": {coreapi.NewTransaction{Amount: 1, Currency: "USD", Method: ptr("card"),
			BuyerID: ptr(b.ID), BuyerExternalIdentifier: ptr("someone-else")},
			func(err error) bool { return errors.Is(err, coreapi.ErrBuyerNotFound) }},
		"unknown-payment-method": {coreapi.NewTransaction{Amount: 1, Currency: "USD", PaymentMethodID: ptr(uuid.NewString())},
			func(err error) bool { return errors.As(err, &ve) && ve.Problems[0].Pointer == "/payment_method/id" }},
		"method-unlike-the-stored-one": {coreapi.NewTransaction{Amount: 1, Currency: "USD", PaymentMethodID: &pm, Method: ptr("bank")},
			func(err error) bool { return errors.As(err, &ve) && ve.Problems[0].Pointer == "/payment_method/method" }},
		"unknown-buyer": {coreapi.NewTransaction{Amount: 1, Currency: "USD", Method: ptr("card"), BuyerID: ptr(uuid.NewString())},
			func(err error) bool { return errors.Is(err, coreapi.ErrBuyerNotFound) }},
		"invalid": {coreapi.NewTransaction{Amount: -1, Currency: "USD", Method: ptr("card")},
			func(err error) bool { return errors.As(err, &ve) }},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Create(ctx, "default", tc.n); !tc.want(err) {
				t.Fatalf("Create = %v", err)
			}
		})
	}
	other := "other"
	if err := db.InTx(ctx, func(tx *postgres.Tx) error {
		_, err := tx.CreateMerchantAccount(ctx, coreapi.NewMerchantAccount{ID: &other, DisplayName: &other})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, other, coreapi.NewTransaction{Amount: 1, Currency: "USD", PaymentMethodID: &pm}); !errors.As(err, &ve) {
		t.Fatalf("another account's payment method: %v", err)
	}
	if list, err := s.List(ctx, "default", coreapi.TransactionFilter{}, allPage()); err != nil || len(list) != 2 {
		t.Fatalf("refused creations stored something: %d, %v", len(list), err)
	}
}
