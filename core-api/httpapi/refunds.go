package httpapi

import (
	"net/http"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// The refund reads, the sync, and what a retry of a request whose first
// run did not complete answers (routes.go registers them):
//
//	GET  /transactions/{transaction_id}/refunds  read   ?limit=&cursor= -> page of refunds (newest first)
//	GET  /refunds/{refund_id}                    read   -> refund
//	POST /transactions/{transaction_id}/sync     write  no body -> 200 transaction
//
// A refund or transaction the merchant account does not have is 404.

// refunds serves GET /transactions/{transaction_id}/refunds.
func (h transactionHandlers) refunds(w http.ResponseWriter, r *http.Request) error {
	return transactionPage(h, w, r, "transaction-refunds", h.d.Transactions.Refunds,
		func(rf coreapi.Refund) pagination.Key { return pagination.Key{Time: rf.CreatedAt, ID: rf.ID} }, refundOut)
}

// getRefund serves GET /refunds/{refund_id}.
func (h transactionHandlers) getRefund(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsRead, "refund_id")
	if err != nil {
		return err
	}
	rf, err := h.d.Transactions.GetRefund(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "refund")
	}
	return WriteJSON(w, http.StatusOK, refundOut(rf))
}

// sync serves POST /transactions/{transaction_id}/sync: what is in
// flight on the transaction is asked about and settled (Service.Sync).
// It moves no money, so it takes no Idempotency-Key: sent again, it asks
// again.
func (h transactionHandlers) sync(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsWrite, "transaction_id")
	if err != nil {
		return err
	}
	if err := decodeOptional(r, &voidJSON{}); err != nil { // no fields; {} is allowed
		return err
	}
	t, err := h.d.Transactions.Sync(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusOK, transactionOut(t))
}

// resumeTransaction answers a retry of a payment, capture or void whose
// first run attached its transaction (idempotency.Attach) and did not
// complete: the transaction synced with the processor, with the status
// of the route's own answer. Nothing is sent to the processor again.
func (h transactionHandlers) resumeTransaction(status int) ResumeHandler {
	return func(w http.ResponseWriter, r *http.Request, c Caller, id string) error {
		t, err := h.d.Transactions.Resume(r.Context(), c.MerchantAccountID, id)
		if err != nil {
			return transactionError(err)
		}
		return WriteJSON(w, status, transactionOut(t))
	}
}

// resumeRefund answers a retry of a refund whose first run attached the
// refund: the refund after its transaction is synced.
func (h transactionHandlers) resumeRefund(w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	rf, err := h.d.Transactions.GetRefund(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "refund")
	}
	if _, err := h.d.Transactions.Sync(r.Context(), c.MerchantAccountID, rf.TransactionID); err != nil {
		return transactionError(err)
	}
	if rf, err = h.d.Transactions.GetRefund(r.Context(), c.MerchantAccountID, id); err != nil {
		return domainError(err, "refund")
	}
	return WriteJSON(w, http.StatusCreated, refundOut(rf))
}
