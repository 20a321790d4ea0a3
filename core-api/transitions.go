package coreapi

import "slices"

// TransactionStatus is where a transaction stands (docs/transactions.md).
type TransactionStatus string

// The statuses of a transaction.
const (
	TransactionProcessing               TransactionStatus = "processing"
	TransactionBuyerApprovalPending     TransactionStatus = "buyer_approval_pending"
	TransactionAuthorizationSucceeded   TransactionStatus = "authorization_succeeded"
	TransactionAuthorizationDeclined    TransactionStatus = "authorization_declined"
	TransactionAuthorizationFailed      TransactionStatus = "authorization_failed"
	TransactionAuthorizationVoidPending TransactionStatus = "authorization_void_pending"
	TransactionAuthorizationVoided      TransactionStatus = "authorization_voided"
	TransactionCapturePending           TransactionStatus = "capture_pending"
	TransactionCaptureSucceeded         TransactionStatus = "capture_succeeded"
)

// TransactionStatuses are all the statuses, in the order of their life.
var TransactionStatuses = []TransactionStatus{
	TransactionProcessing, TransactionBuyerApprovalPending,
	TransactionAuthorizationSucceeded, TransactionAuthorizationDeclined, TransactionAuthorizationFailed,
	TransactionAuthorizationVoidPending, TransactionAuthorizationVoided,
	TransactionCapturePending, TransactionCaptureSucceeded,
}

// TransactionOperation is one step of a transaction's life: a request
// core-api makes of itself before calling the connector ("-requested",
// which reserves what the call may use), or an answer of the connector.
// It is also the name of the event that records it.
type TransactionOperation string

// The operations.
const (
	OpApprovalRequested      TransactionOperation = "approval-requested"      // the buyer must approve first (a redirect)
	OpAuthorizationPending   TransactionOperation = "authorization-pending"   // no decision yet, or no answer
	OpAuthorizationSucceeded TransactionOperation = "authorization-succeeded" // intent authorize
	OpAuthorizationDeclined  TransactionOperation = "authorization-declined"
	OpAuthorizationFailed    TransactionOperation = "authorization-failed"
	OpSaleSucceeded          TransactionOperation = "sale-succeeded" // intent capture: authorized and captured at once
	OpSalePending            TransactionOperation = "sale-pending"   // intent capture: authorized, the capture settles later (an instant bank transfer)
	// OpSaleExpired: a pending sale's capture (an instant bank transfer)
	// was never paid before its expiry: its amount, captured nowhere, is
	// no longer authorized either.
	OpSaleExpired TransactionOperation = "sale-expired"
	// OpSaleFailed: a pending sale's capture (a bank debit) was returned
	// failed by the bank: nothing was captured, and nothing is left
	// authorized.
	OpSaleFailed TransactionOperation = "sale-failed"

	OpCaptureRequested TransactionOperation = "capture-requested"
	OpCapturePending   TransactionOperation = "capture-pending" // accepted, settles later
	OpCaptureSucceeded TransactionOperation = "capture-succeeded"
	OpCaptureDeclined  TransactionOperation = "capture-declined"
	OpCaptureFailed    TransactionOperation = "capture-failed"

	OpVoidRequested TransactionOperation = "void-requested"
	OpVoidPending   TransactionOperation = "void-pending"
	OpVoidSucceeded TransactionOperation = "void-succeeded"
	OpVoidDeclined  TransactionOperation = "void-declined"
	OpVoidFailed    TransactionOperation = "void-failed"

	// 3-D Secure (docs/three-d-secure.md): the buyer authenticated (Y or
	// A, frictionless or after a challenge; the authorization follows),
	// a challenge the buyer must complete, or an authentication that
	// ends the payment before any authorization: declined (N, R, a
	// challenge failed) or failed (U, no answer).
	OpThreeDSAuthenticated      TransactionOperation = "three-d-secure-authenticated"
	OpThreeDSChallengeRequested TransactionOperation = "three-d-secure-challenge-requested"
	OpThreeDSDeclined           TransactionOperation = "three-d-secure-declined"
	OpThreeDSFailed             TransactionOperation = "three-d-secure-failed"

	// Anti-fraud screening before the authorization (docs/anti-fraud.md):
	// the provider's decision, recorded; a reject declines the
	// transaction, an error fails it where the payment service fails
	// closed. A review flag is resolved afterwards, whatever the status.
	OpAntiFraudAccepted       TransactionOperation = "anti-fraud-accepted"
	OpAntiFraudReview         TransactionOperation = "anti-fraud-review"
	OpAntiFraudSkipped        TransactionOperation = "anti-fraud-skipped"
	OpAntiFraudError          TransactionOperation = "anti-fraud-error" // fail-open: the payment goes on
	OpAntiFraudRejected       TransactionOperation = "anti-fraud-rejected"
	OpAntiFraudFailed         TransactionOperation = "anti-fraud-failed" // fail-closed
	OpAntiFraudReviewAccepted TransactionOperation = "anti-fraud-review-accepted"
	OpAntiFraudReviewDeclined TransactionOperation = "anti-fraud-review-declined"

	OpRefundRequested TransactionOperation = "refund-requested"
	OpRefundPending   TransactionOperation = "refund-pending"
	OpRefundSucceeded TransactionOperation = "refund-succeeded"
	OpRefundDeclined  TransactionOperation = "refund-declined"
	OpRefundFailed    TransactionOperation = "refund-failed"
)

// EventTransactionCreated names the first event of every transaction: its
// creation, in processing. It is not a transition.
const EventTransactionCreated = "transaction-created"

// TransactionOperations are all the operations.
var TransactionOperations = []TransactionOperation{
	OpApprovalRequested, OpAuthorizationPending, OpAuthorizationSucceeded, OpAuthorizationDeclined, OpAuthorizationFailed,
	OpSaleSucceeded, OpSalePending, OpSaleExpired, OpSaleFailed,
	OpCaptureRequested, OpCapturePending, OpCaptureSucceeded, OpCaptureDeclined, OpCaptureFailed,
	OpVoidRequested, OpVoidPending, OpVoidSucceeded, OpVoidDeclined, OpVoidFailed,
	OpRefundRequested, OpRefundPending, OpRefundSucceeded, OpRefundDeclined, OpRefundFailed,
	OpThreeDSAuthenticated, OpThreeDSChallengeRequested, OpThreeDSDeclined, OpThreeDSFailed,
	OpAntiFraudAccepted, OpAntiFraudReview, OpAntiFraudSkipped, OpAntiFraudError, OpAntiFraudRejected, OpAntiFraudFailed,
	OpAntiFraudReviewAccepted, OpAntiFraudReviewDeclined,
}

// TransactionState is what the state machine reads and writes: the status
// and the amounts, in minor units of the transaction's currency.
//
// The pending amounts are reservations: what captures and refunds that
// were requested but not settled by the connector may still add to
// CapturedAmount and RefundedAmount. They count against the limits from
// the moment they are requested, so operations in flight at once can never
// together exceed them; a settlement moves its amount out of the
// reservation, into the settled amount when it succeeded.
type TransactionState struct {
	Status               TransactionStatus
	Amount               int64 // asked for at creation; never changes
	AuthorizedAmount     int64
	CapturedAmount       int64
	RefundedAmount       int64
	CapturePendingAmount int64
	RefundPendingAmount  int64
}

// Stable codes of the refusals (TransitionError.Code).
const (
	CodeTransactionNotAuthorizable = "transaction_not_authorizable" // an authorization answer for a transaction past its authorization
	CodeTransactionNotCapturable   = "transaction_not_capturable"
	CodeTransactionNotVoidable     = "transaction_not_voidable" // captured (or being captured), or not authorized
	CodeTransactionNotRefundable   = "transaction_not_refundable"
	CodeCaptureExceedsAuthorized   = "capture_exceeds_authorized"
	CodeRefundExceedsCaptured      = "refund_exceeds_captured"
	CodeNoCapturePending           = "no_capture_pending" // a capture's answer without (that much) capture reserved
	CodeNoVoidPending              = "no_void_pending"
	CodeNoRefundPending            = "no_refund_pending"
	CodeInvalidAmount              = "invalid_amount"             // a capture or refund of zero or less
	CodeTransactionNotReviewable   = "transaction_not_reviewable" // a review action before the authorization has answered
)

// Targets of a transition that are not one fixed status.
const (
	// unchanged: the status stays.
	unchanged TransactionStatus = ""
	// byCaptures: the captures decide (capturePhase).
	byCaptures TransactionStatus = "(by captures)"
)

// amountRule says which amount an operation moves.
type amountRule uint8

const (
	noAmount   amountRule = iota // none: the step's amount is not read
	fullAmount                   // the transaction's Amount (authorizations)
	stepAmount                   // the step's, above zero (captures and refunds)
)

// transition is one row of the state machine.
type transition struct {
	from    []TransactionStatus
	to      TransactionStatus // or unchanged, byCaptures
	amount  amountRule
	refused string // the code when the status does not allow it
	exceeds string // the code when the amounts would break an invariant
	// How the amount moves each field, in multiples of it (+1, -1, 0).
	authorized, captured, capturePending, refunded, refundPending int8
}

// Statuses from which a group of operations may start.
var (
	authorizing = []TransactionStatus{TransactionProcessing, TransactionBuyerApprovalPending}
	capturable  = []TransactionStatus{TransactionAuthorizationSucceeded, TransactionCapturePending, TransactionCaptureSucceeded}
	capturing   = []TransactionStatus{TransactionCapturePending, TransactionCaptureSucceeded} // a capture is reserved
	voiding     = []TransactionStatus{TransactionAuthorizationVoidPending}
	refundable  = []TransactionStatus{TransactionCaptureSucceeded}
	created     = []TransactionStatus{TransactionProcessing}
	// reviewable: the authorization has answered.
	reviewable = []TransactionStatus{TransactionAuthorizationSucceeded, TransactionAuthorizationDeclined, TransactionAuthorizationFailed,
		TransactionAuthorizationVoidPending, TransactionAuthorizationVoided, TransactionCapturePending, TransactionCaptureSucceeded}
)

// transitions is the state machine: every operation, the statuses it may
// start from, where it leads and what it does to the amounts. Anything
// not in it is refused. docs/transactions.md draws it.
var transitions = map[TransactionOperation]transition{
	OpApprovalRequested:      {from: created, to: TransactionBuyerApprovalPending, refused: CodeTransactionNotAuthorizable},
	OpAuthorizationPending:   {from: authorizing, to: unchanged, refused: CodeTransactionNotAuthorizable},
	OpAuthorizationSucceeded: {from: authorizing, to: TransactionAuthorizationSucceeded, amount: fullAmount, authorized: 1, refused: CodeTransactionNotAuthorizable},
	OpAuthorizationDeclined:  {from: authorizing, to: TransactionAuthorizationDeclined, refused: CodeTransactionNotAuthorizable},
	OpAuthorizationFailed:    {from: authorizing, to: TransactionAuthorizationFailed, refused: CodeTransactionNotAuthorizable},
	OpSaleSucceeded:          {from: authorizing, to: byCaptures, amount: fullAmount, authorized: 1, captured: 1, refused: CodeTransactionNotAuthorizable},
	OpSalePending:            {from: authorizing, to: byCaptures, amount: fullAmount, authorized: 1, capturePending: 1, refused: CodeTransactionNotAuthorizable},
	// The step's amount is the pending sale's capture, which is the
	// whole authorization: nothing is left authorized.
	OpSaleExpired: {from: []TransactionStatus{TransactionCapturePending}, to: TransactionAuthorizationFailed, amount: stepAmount,
		authorized: -1, capturePending: -1, refused: CodeNoCapturePending, exceeds: CodeNoCapturePending},
	OpSaleFailed: {from: []TransactionStatus{TransactionCapturePending}, to: TransactionAuthorizationFailed, amount: stepAmount,
		authorized: -1, capturePending: -1, refused: CodeNoCapturePending, exceeds: CodeNoCapturePending},

	OpCaptureRequested: {from: capturable, to: byCaptures, amount: stepAmount, capturePending: 1, refused: CodeTransactionNotCapturable, exceeds: CodeCaptureExceedsAuthorized},
	OpCapturePending:   {from: capturing, to: unchanged, refused: CodeNoCapturePending},
	OpCaptureSucceeded: {from: capturing, to: byCaptures, amount: stepAmount, capturePending: -1, captured: 1, refused: CodeNoCapturePending, exceeds: CodeNoCapturePending},
	OpCaptureDeclined:  {from: capturing, to: byCaptures, amount: stepAmount, capturePending: -1, refused: CodeNoCapturePending, exceeds: CodeNoCapturePending},
	OpCaptureFailed:    {from: capturing, to: byCaptures, amount: stepAmount, capturePending: -1, refused: CodeNoCapturePending, exceeds: CodeNoCapturePending},

	// A void is all or nothing, so its reservation is a status: from
	// authorization_void_pending no capture can start, and a void can
	// start only from authorization_succeeded, where nothing is captured
	// or reserved (capturePhase).
	OpVoidRequested: {from: []TransactionStatus{TransactionAuthorizationSucceeded}, to: TransactionAuthorizationVoidPending, refused: CodeTransactionNotVoidable},
	OpVoidPending:   {from: voiding, to: unchanged, refused: CodeNoVoidPending},
	OpVoidSucceeded: {from: voiding, to: TransactionAuthorizationVoided, refused: CodeNoVoidPending},
	OpVoidDeclined:  {from: voiding, to: TransactionAuthorizationSucceeded, refused: CodeNoVoidPending},
	OpVoidFailed:    {from: voiding, to: TransactionAuthorizationSucceeded, refused: CodeNoVoidPending},

	// 3-D Secure comes before the authorization: its challenge waits for
	// the buyer as a redirect's approval does, and its refusal ends the
	// transaction as a declined or failed authorization would.
	OpThreeDSAuthenticated:      {from: authorizing, to: unchanged, refused: CodeTransactionNotAuthorizable},
	OpThreeDSChallengeRequested: {from: created, to: TransactionBuyerApprovalPending, refused: CodeTransactionNotAuthorizable},
	OpThreeDSDeclined:           {from: authorizing, to: TransactionAuthorizationDeclined, refused: CodeTransactionNotAuthorizable},
	OpThreeDSFailed:             {from: authorizing, to: TransactionAuthorizationFailed, refused: CodeTransactionNotAuthorizable},

	// Anti-fraud screens a payment just created; a review is resolved
	// once the authorization has answered, in whatever status it left.
	OpAntiFraudAccepted:       {from: created, to: unchanged, refused: CodeTransactionNotAuthorizable},
	OpAntiFraudReview:         {from: created, to: unchanged, refused: CodeTransactionNotAuthorizable},
	OpAntiFraudSkipped:        {from: created, to: unchanged, refused: CodeTransactionNotAuthorizable},
	OpAntiFraudError:          {from: created, to: unchanged, refused: CodeTransactionNotAuthorizable},
	OpAntiFraudRejected:       {from: created, to: TransactionAuthorizationDeclined, refused: CodeTransactionNotAuthorizable},
	OpAntiFraudFailed:         {from: created, to: TransactionAuthorizationFailed, refused: CodeTransactionNotAuthorizable},
	OpAntiFraudReviewAccepted: {from: reviewable, to: unchanged, refused: CodeTransactionNotReviewable},
	OpAntiFraudReviewDeclined: {from: reviewable, to: unchanged, refused: CodeTransactionNotReviewable},

	// Refunds leave the status alone: refunded_amount says how much.
	OpRefundRequested: {from: refundable, to: unchanged, amount: stepAmount, refundPending: 1, refused: CodeTransactionNotRefundable, exceeds: CodeRefundExceedsCaptured},
	OpRefundPending:   {from: refundable, to: unchanged, refused: CodeNoRefundPending},
	OpRefundSucceeded: {from: refundable, to: unchanged, amount: stepAmount, refundPending: -1, refunded: 1, refused: CodeNoRefundPending, exceeds: CodeNoRefundPending},
	OpRefundDeclined:  {from: refundable, to: unchanged, amount: stepAmount, refundPending: -1, refused: CodeNoRefundPending, exceeds: CodeNoRefundPending},
	OpRefundFailed:    {from: refundable, to: unchanged, amount: stepAmount, refundPending: -1, refused: CodeNoRefundPending, exceeds: CodeNoRefundPending},
}

// inFlight are the statuses an operation in flight will move the
// transaction out of by itself: a refusal there may not be the last word.
var inFlight = []TransactionStatus{
	TransactionProcessing, TransactionBuyerApprovalPending, TransactionAuthorizationVoidPending, TransactionCapturePending,
}

// MaxTransactionAmount bounds every amount, in minor units. Sums of a
// few of them stay far from overflowing an int64.
const MaxTransactionAmount = 99_999_999

// Apply returns the state after op, which moves amount (a capture's or a
// refund's; for an authorization the transaction's own Amount is used and
// amount is not read). It is pure: a refusal is a *TransitionError and
// returns s unchanged.
func (s TransactionState) Apply(op TransactionOperation, amount int64) (TransactionState, error) {
	tr, ok := transitions[op]
	if !ok {
		return s, &TransitionError{Code: "unknown_operation", Operation: op, Status: s.Status}
	}
	refuse := func(code string, inFlight bool) (TransactionState, error) {
		return s, &TransitionError{Code: code, Operation: op, Status: s.Status, InFlight: inFlight}
	}
	if !slices.Contains(tr.from, s.Status) {
		return refuse(tr.refused, slices.Contains(inFlight, s.Status))
	}
	switch tr.amount {
	case noAmount:
		amount = 0
	case fullAmount:
		amount = s.Amount
	case stepAmount:
		if amount <= 0 {
			return refuse(CodeInvalidAmount, false)
		}
		if amount > MaxTransactionAmount { // above any limit, and kept from overflowing
			return refuse(tr.exceeds, s.reserved())
		}
	}
	next := s
	next.AuthorizedAmount += int64(tr.authorized) * amount
	next.CapturedAmount += int64(tr.captured) * amount
	next.CapturePendingAmount += int64(tr.capturePending) * amount
	next.RefundedAmount += int64(tr.refunded) * amount
	next.RefundPendingAmount += int64(tr.refundPending) * amount
	if !next.valid() {
		// Reservations in flight may settle either way: until they do,
		// the answer may change (409).
		return refuse(tr.exceeds, s.reserved())
	}
	switch tr.to {
	case unchanged:
	case byCaptures:
		next.Status = next.capturePhase()
	default:
		next.Status = tr.to
	}
	return next, nil
}

// valid reports whether the invariants hold: no amount below zero,
// authorized within the amount, captured and reserved captures within
// authorized, refunded and reserved refunds within captured.
func (s TransactionState) valid() bool {
	return s.AuthorizedAmount >= 0 && s.AuthorizedAmount <= s.Amount &&
		s.CapturedAmount >= 0 && s.CapturePendingAmount >= 0 &&
		s.CapturedAmount+s.CapturePendingAmount <= s.AuthorizedAmount &&
		s.RefundedAmount >= 0 && s.RefundPendingAmount >= 0 &&
		s.RefundedAmount+s.RefundPendingAmount <= s.CapturedAmount
}

// capturePhase is the status of an authorized transaction, which its
// captures decide: capture_succeeded once any capture has succeeded (also
// when less than authorized is captured, and while more captures are in
// flight: the amounts tell how much), else capture_pending while a
// capture is in flight, else authorization_succeeded.
func (s TransactionState) capturePhase() TransactionStatus {
	switch {
	case s.CapturedAmount > 0:
		return TransactionCaptureSucceeded
	case s.CapturePendingAmount > 0:
		return TransactionCapturePending
	}
	return TransactionAuthorizationSucceeded
}

// reserved reports whether captures or refunds are in flight.
func (s TransactionState) reserved() bool {
	return s.CapturePendingAmount > 0 || s.RefundPendingAmount > 0
}

// CapturableAmount is what a capture may still take: authorized, less
// what is captured or being captured.
func (s TransactionState) CapturableAmount() int64 {
	return s.AuthorizedAmount - s.CapturedAmount - s.CapturePendingAmount
}

// RefundableAmount is what a refund may still take: captured, less what
// is refunded or being refunded.
func (s TransactionState) RefundableAmount() int64 {
	return s.CapturedAmount - s.RefundedAmount - s.RefundPendingAmount
}
