package httpapi

import (
	"errors"
	"net/http"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
)

// The routes of direct (client SDK) integrations (docs/transactions.md,
// "Direct integrations"):
//
//	POST /transactions/{transaction_id}/session   write  {session_token} -> 200 session (once per transaction)
//	GET  /transactions/{transaction_id}/complete  no bearer token: ?token= (the completion URL's) -> 200 transaction
//
// The completion URL is opened by the buyer's client, which holds no API
// key: its signed, expiring token, bound to the transaction, is its
// authority, and it serves once (the transaction leaves
// buyer_approval_pending).

type sessionRequestJSON struct {
	SessionToken *string `json:"session_token"`
}

type sessionDataJSON struct {
	OrderID           string  `json:"order_id"`
	ClientID          string  `json:"client_id"`
	MerchantID        *string `json:"merchant_id"`
	Currency          string  `json:"currency"`
	Intent            string  `json:"intent"`
	FundingSource     string  `json:"funding_source"`
	IntegrationClient string  `json:"integration_client"`
}

type sessionJSON struct {
	Type                 string          `json:"type"`
	TransactionID        string          `json:"transaction_id"`
	SessionData          sessionDataJSON `json:"session_data"`
	DefaultCompletionURL string          `json:"default_completion_url"`
}

// session serves POST /transactions/{transaction_id}/session.
func (h transactionHandlers) session(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsWrite, "transaction_id")
	if err != nil {
		return err
	}
	var in sessionRequestJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	if in.SessionToken == nil || *in.SessionToken == "" {
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail("/session_token", "is required", strictjson.TypeMissing))
	}
	s, err := h.d.Transactions.ExchangeSession(r.Context(), c.MerchantAccountID, id, *in.SessionToken)
	if err != nil {
		return transactionError(err)
	}
	var merchantID *string
	if s.MerchantID != "" {
		merchantID = &s.MerchantID
	}
	return WriteJSON(w, http.StatusOK, sessionJSON{Type: "session", TransactionID: id,
		SessionData: sessionDataJSON{OrderID: s.OrderID, ClientID: s.ClientID, MerchantID: merchantID, Currency: s.Currency,
			Intent: s.Intent, FundingSource: s.FundingSource, IntegrationClient: s.IntegrationClient},
		DefaultCompletionURL: s.CompletionURL})
}

// complete serves GET /transactions/{transaction_id}/complete?token=.
func (h transactionHandlers) complete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "transaction_id")
	if err != nil {
		return err
	}
	tok := r.URL.Query().Get("token")
	if tok == "" {
		return apierror.BadRequest("the completion token is required",
			apierror.Detail{Location: "query", Pointer: "token", Message: "is required", Type: strictjson.TypeMissing})
	}
	t, err := h.d.Transactions.CompleteDirect(r.Context(), id, tok)
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusOK, transactionOut(t))
}

// completionStatuses are the HTTP statuses of refused completion tokens.
var completionStatuses = map[string]int{
	coreapi.CodeCompletionTokenInvalid:  http.StatusForbidden,
	coreapi.CodeCompletionTokenMismatch: http.StatusForbidden,
	coreapi.CodeCompletionTokenExpired:  http.StatusGone,
	coreapi.CodeCompletionTokenUsed:     http.StatusConflict,
}

var completionMessages = map[string]string{
	coreapi.CodeCompletionTokenInvalid:  "the completion token is malformed or was not issued by this service",
	coreapi.CodeCompletionTokenMismatch: "the completion token was issued for another transaction",
	coreapi.CodeCompletionTokenExpired:  "the completion token has expired",
	coreapi.CodeCompletionTokenUsed:     "the completion token was used: the transaction is no longer waiting for the buyer",
}

// directError maps the errors of direct integrations; nil for another.
func directError(err error) error {
	var ce *coreapi.CompletionTokenError
	switch {
	case errors.As(err, &ce):
		return apierror.New(completionStatuses[ce.Code], ce.Code, completionMessages[ce.Code],
			apierror.Detail{Location: "query", Pointer: "token", Message: completionMessages[ce.Code], Type: "value_error." + ce.Code})
	case errors.Is(err, coreapi.ErrSessionUnavailable):
		return apierror.New(http.StatusUnprocessableEntity, "session_token_invalid",
			"the session token is not this transaction's, was exchanged already, or the transaction no longer waits for the buyer",
			strictjson.BodyDetail("/session_token", "is not valid for this transaction, or was exchanged already", "value_error.session_token"))
	case errors.Is(err, coreapi.ErrBuyerApprovalPending):
		return apierror.New(http.StatusConflict, "buyer_approval_pending", "the buyer has not approved the payment yet; nothing changed")
	case errors.Is(err, coreapi.ErrDirectUnavailable):
		return apierror.Unprocessable("no connector for direct integrations is configured in this environment",
			strictjson.BodyDetail("/payment_method/method", "direct integrations are not available", "value_error.payment_method.unavailable"))
	}
	return nil
}
