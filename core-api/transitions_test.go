package coreapi_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
)

// Short names of the statuses, for the grids below.
var short = map[string]coreapi.TransactionStatus{
	"P":  coreapi.TransactionProcessing,
	"BA": coreapi.TransactionBuyerApprovalPending,
	"AS": coreapi.TransactionAuthorizationSucceeded,
	"AD": coreapi.TransactionAuthorizationDeclined,
	"AF": coreapi.TransactionAuthorizationFailed,
	"VP": coreapi.TransactionAuthorizationVoidPending,
	"AV": coreapi.TransactionAuthorizationVoided,
	"CP": coreapi.TransactionCapturePending,
	"CS": coreapi.TransactionCaptureSucceeded,
}

// columns is the order of the grid's columns.
var columns = strings.Fields("P BA AS AD AF VP AV CP CS")

// grid is the state machine as docs/transactions.md draws it, written
// independently of the code's table: the status each operation leads to
// from each status ("-": refused), and the code it is refused with.
// Operations that move amounts start from the representative states of
// representative(), with a step amount of 100.
var grid = []struct {
	op      coreapi.TransactionOperation
	next    string
	refused string
}{
	{coreapi.OpApprovalRequested, "BA -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAuthorizationPending, "P  BA -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAuthorizationSucceeded, "AS AS -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAuthorizationDeclined, "AD AD -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAuthorizationFailed, "AF AF -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpSaleSucceeded, "CS CS -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpSalePending, "CP CP -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpSaleExpired, "-  -  -  -  -  -  -  AF -", coreapi.CodeNoCapturePending},
	{coreapi.OpSaleFailed, "-  -  -  -  -  -  -  AF -", coreapi.CodeNoCapturePending},
	{coreapi.OpCaptureRequested, "-  -  CP -  -  -  -  CP CS", coreapi.CodeTransactionNotCapturable},
	{coreapi.OpCapturePending, "-  -  -  -  -  -  -  CP CS", coreapi.CodeNoCapturePending},
	{coreapi.OpCaptureSucceeded, "-  -  -  -  -  -  -  CS CS", coreapi.CodeNoCapturePending},
	{coreapi.OpCaptureDeclined, "-  -  -  -  -  -  -  AS CS", coreapi.CodeNoCapturePending},
	{coreapi.OpCaptureFailed, "-  -  -  -  -  -  -  AS CS", coreapi.CodeNoCapturePending},
	{coreapi.OpVoidRequested, "-  -  VP -  -  -  -  -  -", coreapi.CodeTransactionNotVoidable},
	{coreapi.OpVoidPending, "-  -  -  -  -  VP -  -  -", coreapi.CodeNoVoidPending},
	{coreapi.OpVoidSucceeded, "-  -  -  -  -  AV -  -  -", coreapi.CodeNoVoidPending},
	{coreapi.OpVoidDeclined, "-  -  -  -  -  AS -  -  -", coreapi.CodeNoVoidPending},
	{coreapi.OpVoidFailed, "-  -  -  -  -  AS -  -  -", coreapi.CodeNoVoidPending},
	{coreapi.OpRefundRequested, "-  -  -  -  -  -  -  -  CS", coreapi.CodeTransactionNotRefundable},
	{coreapi.OpRefundPending, "-  -  -  -  -  -  -  -  CS", coreapi.CodeNoRefundPending},
	{coreapi.OpRefundSucceeded, "-  -  -  -  -  -  -  -  CS", coreapi.CodeNoRefundPending},
	{coreapi.OpRefundDeclined, "-  -  -  -  -  -  -  -  CS", coreapi.CodeNoRefundPending},
	{coreapi.OpRefundFailed, "-  -  -  -  -  -  -  -  CS", coreapi.CodeNoRefundPending},
	{coreapi.OpThreeDSAuthenticated, "P  BA -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpThreeDSChallengeRequested, "BA -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpThreeDSDeclined, "AD AD -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpThreeDSFailed, "AF AF -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudAccepted, "P  -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudReview, "P  -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudSkipped, "P  -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudError, "P  -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudRejected, "AD -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudFailed, "AF -  -  -  -  -  -  -  -", coreapi.CodeTransactionNotAuthorizable},
	{coreapi.OpAntiFraudReviewAccepted, "-  -  AS AD AF VP AV CP CS", coreapi.CodeTransactionNotReviewable},
	{coreapi.OpAntiFraudReviewDeclined, "-  -  AS AD AF VP AV CP CS", coreapi.CodeTransactionNotReviewable},
}

// pending are the statuses an operation in flight will move on from:
// a refusal there may not be final (409), elsewhere it is (422).
var pending = []string{"P", "BA", "VP", "CP"}

// representative is a state of each status with amounts that let every
// operation the grid allows from it go through with a step of 100.
func representative(s string) coreapi.TransactionState {
	st := coreapi.TransactionState{Status: short[s], Amount: 1000}
	switch s {
	case "AS", "VP", "AV":
		st.AuthorizedAmount = 1000
	case "CP":
		st.AuthorizedAmount, st.CapturePendingAmount = 1000, 100
	case "CS":
		st.AuthorizedAmount, st.CapturedAmount, st.CapturePendingAmount, st.RefundPendingAmount = 1000, 400, 100, 100
	}
	return st
}

// Every (status, operation) pair: the next status, or the typed refusal
// with the operation's code, which is in flight (409) exactly in the
// pending statuses; a refusal changes nothing.
func TestTransitionTable(t *testing.T) {
	if len(grid) != len(coreapi.TransactionOperations) {
		t.Fatalf("the grid has %d operations, the state machine %d", len(grid), len(coreapi.TransactionOperations))
	}
	for _, row := range grid {
		next := strings.Fields(row.next)
		for i, from := range columns {
			t.Run(string(row.op)+"/"+string(short[from]), func(t *testing.T) {
				before := representative(from)
				after, err := before.Apply(row.op, 100)
				if next[i] == "-" {
					var te *coreapi.TransitionError
					if !errors.As(err, &te) {
						t.Fatalf("Apply = %+v, %v; want a *TransitionError", after, err)
					}
					if te.Code != row.refused || te.Operation != row.op || te.Status != before.Status || te.InFlight != slices.Contains(pending, from) {
						t.Fatalf("refused with %+v; want code %s, in flight %v", te, row.refused, slices.Contains(pending, from))
					}
					if after != before {
						t.Fatalf("a refusal changed the state: %+v -> %+v", before, after)
					}
					return
				}
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if after.Status != short[next[i]] {
					t.Fatalf("status %s -> %s; want %s", before.Status, after.Status, short[next[i]])
				}
				checkInvariants(t, after)
			})
		}
	}
}

// The amounts each operation moves, from the representative states.
func TestTransitionAmounts(t *testing.T) {
	type amounts struct{ authorized, captured, capturePending, refunded, refundPending int64 }
	of := func(s coreapi.TransactionState) amounts {
		return amounts{s.AuthorizedAmount, s.CapturedAmount, s.CapturePendingAmount, s.RefundedAmount, s.RefundPendingAmount}
	}
	for _, tc := range []struct {
		from string
		op   coreapi.TransactionOperation
		want amounts
	}{
		{"P", coreapi.OpAuthorizationSucceeded, amounts{1000, 0, 0, 0, 0}},
		{"P", coreapi.OpAuthorizationDeclined, amounts{}},
		{"P", coreapi.OpSaleSucceeded, amounts{1000, 1000, 0, 0, 0}},
		{"BA", coreapi.OpSalePending, amounts{1000, 0, 1000, 0, 0}},
		{"AS", coreapi.OpCaptureRequested, amounts{1000, 0, 100, 0, 0}},
		{"CP", coreapi.OpCaptureSucceeded, amounts{1000, 100, 0, 0, 0}},
		{"CP", coreapi.OpCaptureDeclined, amounts{1000, 0, 0, 0, 0}},
		{"CP", coreapi.OpCapturePending, amounts{1000, 0, 100, 0, 0}},
		{"CS", coreapi.OpCaptureFailed, amounts{1000, 400, 0, 0, 100}},
		{"CS", coreapi.OpRefundRequested, amounts{1000, 400, 100, 0, 200}},
		{"CS", coreapi.OpRefundSucceeded, amounts{1000, 400, 100, 100, 0}},
		{"CS", coreapi.OpRefundDeclined, amounts{1000, 400, 100, 0, 0}},
		{"VP", coreapi.OpVoidSucceeded, amounts{1000, 0, 0, 0, 0}},
		{"CP", coreapi.OpSaleExpired, amounts{900, 0, 0, 0, 0}},
		{"CP", coreapi.OpSaleFailed, amounts{900, 0, 0, 0, 0}},
	} {
		t.Run(string(tc.op)+"/"+tc.from, func(t *testing.T) {
			after, err := representative(tc.from).Apply(tc.op, 100)
			if err != nil {
				t.Fatal(err)
			}
			if got := of(after); got != tc.want {
				t.Fatalf("amounts %+v; want %+v", got, tc.want)
			}
		})
	}
}

// Amounts the invariants do not allow are refused with the operation's
// code; while captures or refunds are in flight the refusal may not be
// final (409).
func TestTransitionAmountRefusals(t *testing.T) {
	st := func(authorized, captured, capturePending, refunded, refundPending int64) coreapi.TransactionState {
		s := coreapi.TransactionState{Amount: 1000, AuthorizedAmount: authorized, CapturedAmount: captured,
			CapturePendingAmount: capturePending, RefundedAmount: refunded, RefundPendingAmount: refundPending}
		switch {
		case captured > 0:
			s.Status = coreapi.TransactionCaptureSucceeded
		case capturePending > 0:
			s.Status = coreapi.TransactionCapturePending
		default:
			s.Status = coreapi.TransactionAuthorizationSucceeded
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		from     coreapi.TransactionState
		op       coreapi.TransactionOperation
		amount   int64
		code     string
		inFlight bool
	}{
		{"capture-over-authorized", st(1000, 0, 0, 0, 0), coreapi.OpCaptureRequested, 1001, coreapi.CodeCaptureExceedsAuthorized, false},
		{"capture-over-what-is-left", st(1000, 600, 0, 0, 0), coreapi.OpCaptureRequested, 401, coreapi.CodeCaptureExceedsAuthorized, false},
		{"capture-over-what-is-reserved", st(1000, 600, 300, 0, 0), coreapi.OpCaptureRequested, 101, coreapi.CodeCaptureExceedsAuthorized, true},
		{"capture-zero", st(1000, 0, 0, 0, 0), coreapi.OpCaptureRequested, 0, coreapi.CodeInvalidAmount, false},
		{"capture-negative", st(1000, 0, 0, 0, 0), coreapi.OpCaptureRequested, -5, coreapi.CodeInvalidAmount, false},
		{"capture-huge", st(1000, 0, 0, 0, 0), coreapi.OpCaptureRequested, 1 << 62, coreapi.CodeCaptureExceedsAuthorized, false},
		{"settle-more-than-reserved", st(1000, 0, 100, 0, 0), coreapi.OpCaptureSucceeded, 101, coreapi.CodeNoCapturePending, true},
		{"refund-over-captured", st(1000, 500, 0, 0, 0), coreapi.OpRefundRequested, 501, coreapi.CodeRefundExceedsCaptured, false},
		{"refund-over-what-is-left", st(1000, 500, 0, 450, 0), coreapi.OpRefundRequested, 51, coreapi.CodeRefundExceedsCaptured, false},
		{"refund-over-what-is-reserved", st(1000, 500, 0, 0, 450), coreapi.OpRefundRequested, 51, coreapi.CodeRefundExceedsCaptured, true},
		{"refund-while-capturing", st(1000, 500, 500, 0, 0), coreapi.OpRefundRequested, 501, coreapi.CodeRefundExceedsCaptured, true},
		{"refund-settle-more-than-reserved", st(1000, 500, 0, 0, 50), coreapi.OpRefundSucceeded, 51, coreapi.CodeNoRefundPending, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, err := tc.from.Apply(tc.op, tc.amount)
			var te *coreapi.TransitionError
			if !errors.As(err, &te) || te.Code != tc.code || te.InFlight != tc.inFlight {
				t.Fatalf("Apply = %v; want code %s, in flight %v", err, tc.code, tc.inFlight)
			}
			if after != tc.from {
				t.Fatalf("a refusal changed the state: %+v", after)
			}
		})
	}
}

// Every operation the table allows from a status, in the grid.
func allowed(op coreapi.TransactionOperation, from coreapi.TransactionStatus) (next []coreapi.TransactionStatus) {
	for _, row := range grid {
		if row.op != op {
			continue
		}
		for i, n := range strings.Fields(row.next) {
			if n != "-" && short[columns[i]] == from {
				next = append(next, short[n])
			}
		}
	}
	return next
}

// Random sequences of operations from a new transaction: no amount ever
// goes negative, captured never exceeds authorized, refunded never
// exceeds captured (reservations included), and the status moves only
// from a status the grid allows the operation in, to the one it names,
// except where captures decide it (capture_pending and
// authorization_succeeded and capture_succeeded, by the captured and
// reserved amounts).
func FuzzTransitions(f *testing.F) {
	f.Add([]byte{0, 0, 3, 232, 2, 0, 7, 0, 100, 9, 0, 100, 17, 0, 50, 19, 0, 50})
	f.Add([]byte{1, 0, 0, 100, 6, 0, 0, 0, 9, 0, 100, 17, 0, 10})
	f.Add([]byte{0, 0, 0, 10, 2, 0, 12, 0, 0, 14, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		s := coreapi.TransactionState{Status: coreapi.TransactionProcessing, Amount: int64(binary.BigEndian.Uint16(data))}
		ops := coreapi.TransactionOperations
		for data = data[2:]; len(data) >= 3; data = data[3:] {
			op := ops[int(data[0])%len(ops)]
			// Amounts around the transaction's, negative ones and zero included.
			amount := int64(int16(binary.BigEndian.Uint16(data[1:3])))
			after, err := s.Apply(op, amount)
			if err != nil {
				var te *coreapi.TransitionError
				if !errors.As(err, &te) {
					t.Fatalf("%s from %+v: %v, not a *TransitionError", op, s, err)
				}
				if after != s {
					t.Fatalf("a refusal of %s changed %+v to %+v", op, s, after)
				}
				continue
			}
			next := allowed(op, s.Status)
			if len(next) == 0 {
				t.Fatalf("%s went through from %s, which the grid refuses", op, s.Status)
			}
			if !slices.Contains(next, after.Status) && !capturePhase(after.Status) {
				t.Fatalf("%s from %s led to %s; the grid says %v", op, s.Status, after.Status, next)
			}
			checkInvariants(t, after)
			if after.Amount != s.Amount {
				t.Fatalf("%s changed the amount asked for", op)
			}
			s = after
		}
	})
}

// capturePhase reports whether the captured and reserved amounts decide
// status s.
func capturePhase(s coreapi.TransactionStatus) bool {
	return s == coreapi.TransactionAuthorizationSucceeded || s == coreapi.TransactionCapturePending || s == coreapi.TransactionCaptureSucceeded
}

func checkInvariants(t *testing.T, s coreapi.TransactionState) {
	t.Helper()
	for name, v := range map[string]int64{"authorized": s.AuthorizedAmount, "captured": s.CapturedAmount,
		"capture pending": s.CapturePendingAmount, "refunded": s.RefundedAmount, "refund pending": s.RefundPendingAmount} {
		if v < 0 {
			t.Fatalf("%s amount negative: %+v", name, s)
		}
	}
	switch {
	case s.AuthorizedAmount > s.Amount:
		t.Fatalf("authorized above the amount: %+v", s)
	case s.CapturedAmount+s.CapturePendingAmount > s.AuthorizedAmount:
		t.Fatalf("captured and reserved above authorized: %+v", s)
	case s.RefundedAmount+s.RefundPendingAmount > s.CapturedAmount:
		t.Fatalf("refunded and reserved above captured: %+v", s)
	}
	if capturePhase(s.Status) {
		want := coreapi.TransactionAuthorizationSucceeded
		switch {
		case s.CapturedAmount > 0:
			want = coreapi.TransactionCaptureSucceeded
		case s.CapturePendingAmount > 0:
			want = coreapi.TransactionCapturePending
		}
		if s.Status != want {
			t.Fatalf("status %s with captured %d and reserved %d; want %s", s.Status, s.CapturedAmount, s.CapturePendingAmount, want)
		}
	}
}
