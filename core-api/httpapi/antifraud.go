package httpapi

import (
	"net/http"
)

// CodeNotInReview (422): a review action on a transaction the anti-fraud
// screening did not flag for review (or whose review is resolved).
const CodeNotInReview = "transaction_not_in_review"

// antiFraudReviewJSON is the body of POST
// /transactions/{transaction_id}/anti-fraud-review.
type antiFraudReviewJSON struct {
	Decision string `json:"decision"`
}

// antiFraudReview resolves a transaction flagged for review by the
// anti-fraud screening (docs/anti-fraud.md): {"decision": "accept" |
// "decline"} -> 200 with the transaction; decline voids an authorization
// nothing was captured of.
func (h transactionHandlers) antiFraudReview(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsWrite, "transaction_id")
	if err != nil {
		return err
	}
	var in antiFraudReviewJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	t, err := h.d.Transactions.ReviewAntiFraud(r.Context(), c.MerchantAccountID, id, in.Decision)
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusOK, transactionOut(t))
}
