package coreapi

import "errors"

// Anti-fraud decisions (Transaction.AntiFraudDecision): the provider's
// accept, reject or review; error when it could not answer (the payment
// service's fail_open decides what then); skipped when the payment was
// not screened (a merchant-initiated payment, which has no buyer
// present). docs/anti-fraud.md.
const (
	AntiFraudAccept  = "accept"
	AntiFraudReject  = "reject"
	AntiFraudReview  = "review"
	AntiFraudError   = "error"
	AntiFraudSkipped = "skipped"
)

// Error codes of a transaction anti-fraud stopped before its
// authorization.
const (
	ErrorCodeAntiFraudRejected       = "anti_fraud_rejected"
	ErrorCodeAntiFraudError          = "anti_fraud_error" // fail-closed
	ErrorCodeAntiFraudReviewDeclined = "anti_fraud_review_declined"
)

// Review actions on a transaction flagged for review.
const (
	AntiFraudReviewAccept  = "accept"
	AntiFraudReviewDecline = "decline"
)

// ErrNotInReview is a review action on a transaction that is not flagged
// for review (422).
var ErrNotInReview = errors.New("the transaction is not flagged for anti-fraud review")
