package httpapi

import (
	"errors"
	"html/template"
	"net/http"
	"strconv"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/threeds"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/strictjson"
)

// Scopes of the 3-D Secure scenario routes.
const (
	ScopeThreeDSScenariosRead  = "three-ds-scenarios.read"
	ScopeThreeDSScenariosWrite = "three-ds-scenarios.write"
)

// The sandbox 3-D Secure simulator's scenarios (docs/three-d-secure.md),
// registered only where the simulator exists (not in production, where
// every one of them is 404):
//
//	POST   /three-ds-scenarios            write  {priority?, conditions?, outcome} -> 201
//	GET    /three-ds-scenarios            read   ?limit=&cursor= -> page, in evaluation order
//	GET    /three-ds-scenarios/{id}       read   -> scenario
//	PUT    /three-ds-scenarios/{id}       write  {priority?, conditions?, outcome?} -> 200
//	DELETE /three-ds-scenarios/{id}       write  -> 204
//	POST   /three-ds-scenarios/{id}/move  write  {before_id | after_id} -> 200
//
// A card_number condition is sent to vault-proxy, which keeps the number
// and passes the scenario on with conditions.card_condition, the
// reference of the record it keeps it in (threeds.Service checks it).
type threeDSHandlers struct{ d Deps }

func threeDSRoutes(rt *Router, d Deps) {
	if d.ThreeDSScenarios == nil {
		return
	}
	h := threeDSHandlers{d}
	const one = "/three-ds-scenarios/{scenario_id}"
	rt.Handle("POST /three-ds-scenarios", h.create)
	rt.Handle("GET /three-ds-scenarios", h.list)
	rt.Handle("GET "+one, h.get)
	rt.Handle("PUT "+one, h.update)
	rt.Handle("DELETE "+one, h.delete)
	rt.Handle("POST "+one+"/move", h.move)

	ch := threeDSChallengeHandlers{d}
	rt.Handle("GET /three-ds-challenges/{transaction_id}", ch.page)
	rt.Handle("POST /three-ds-challenges/{transaction_id}", ch.complete)
}

// threeDSStatusJSON is an outcome's {"transaction_status": ...}.
type threeDSStatusJSON struct {
	TransactionStatus string `json:"transaction_status"`
}

// threeDSOutcomeJSON is a scenario's outcome on the wire.
type threeDSOutcomeJSON struct {
	Version        string             `json:"version"`
	Authentication threeDSStatusJSON  `json:"authentication"`
	Result         *threeDSStatusJSON `json:"result"`
}

func (o threeDSOutcomeJSON) domain() coreapi.ThreeDSOutcome {
	out := coreapi.ThreeDSOutcome{Version: o.Version, AuthenticationStatus: o.Authentication.TransactionStatus}
	if o.Result != nil {
		out.ResultStatus = o.Result.TransactionStatus
	}
	return out
}

// threeDSScenarioFieldsJSON is the body of a create or an update.
type threeDSScenarioFieldsJSON struct {
	Priority   coreapi.Optional[int]                       `json:"priority"`
	Conditions coreapi.Optional[coreapi.ThreeDSConditions] `json:"conditions"`
	Outcome    coreapi.Optional[threeDSOutcomeJSON]        `json:"outcome"`
}

func (in threeDSScenarioFieldsJSON) domain() coreapi.ThreeDSScenarioFields {
	f := coreapi.ThreeDSScenarioFields{Priority: in.Priority, Conditions: in.Conditions}
	f.Outcome.Set, f.Outcome.Null = in.Outcome.Set, in.Outcome.Null
	if o := in.Outcome.Ptr(); o != nil {
		f.Outcome.Value = o.domain()
	}
	return f
}

// threeDSMoveJSON is the body of a move call.
type threeDSMoveJSON struct {
	BeforeID string `json:"before_id"`
	AfterID  string `json:"after_id"`
}

// threeDSScenarioJSON is a scenario on the wire.
type threeDSScenarioJSON struct {
	Type              string                    `json:"type"`
	ID                string                    `json:"id"`
	MerchantAccountID string                    `json:"merchant_account_id"`
	Priority          int                       `json:"priority"`
	Conditions        coreapi.ThreeDSConditions `json:"conditions"`
	Outcome           threeDSOutcomeJSON        `json:"outcome"`
	CreatedAt         string                    `json:"created_at"`
	UpdatedAt         string                    `json:"updated_at"`
}

func threeDSScenarioOut(s *coreapi.ThreeDSScenario) threeDSScenarioJSON {
	o := threeDSOutcomeJSON{Version: s.Outcome.Version, Authentication: threeDSStatusJSON{s.Outcome.AuthenticationStatus}}
	if s.Outcome.ResultStatus != "" {
		o.Result = &threeDSStatusJSON{s.Outcome.ResultStatus}
	}
	return threeDSScenarioJSON{Type: "three-ds-scenario", ID: s.ID, MerchantAccountID: s.MerchantAccountID, Priority: s.Priority,
		Conditions: s.Conditions, Outcome: o, CreatedAt: timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt)}
}

const threeDSResource = "3-D Secure scenario"

func (h threeDSHandlers) create(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeThreeDSScenariosWrite)
	if err != nil {
		return err
	}
	var in threeDSScenarioFieldsJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	s, err := h.d.ThreeDSScenarios.Create(r.Context(), c.MerchantAccountID, in.domain())
	if err != nil {
		return domainError(err, threeDSResource)
	}
	return WriteJSON(w, http.StatusCreated, threeDSScenarioOut(s))
}

func (h threeDSHandlers) get(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeThreeDSScenariosRead, "scenario_id")
	if err != nil {
		return err
	}
	s, err := h.d.ThreeDSScenarios.Get(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, threeDSResource)
	}
	return WriteJSON(w, http.StatusOK, threeDSScenarioOut(s))
}

func (h threeDSHandlers) update(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeThreeDSScenariosWrite, "scenario_id")
	if err != nil {
		return err
	}
	var in threeDSScenarioFieldsJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	s, err := h.d.ThreeDSScenarios.Update(r.Context(), c.MerchantAccountID, id, in.domain())
	if err != nil {
		return domainError(err, threeDSResource)
	}
	return WriteJSON(w, http.StatusOK, threeDSScenarioOut(s))
}

func (h threeDSHandlers) move(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeThreeDSScenariosWrite, "scenario_id")
	if err != nil {
		return err
	}
	var in threeDSMoveJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	s, err := h.d.ThreeDSScenarios.Move(r.Context(), c.MerchantAccountID, id, threeds.Move{BeforeID: in.BeforeID, AfterID: in.AfterID})
	if err != nil {
		return domainError(err, threeDSResource)
	}
	return WriteJSON(w, http.StatusOK, threeDSScenarioOut(s))
}

func (h threeDSHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeThreeDSScenariosWrite, "scenario_id")
	if err != nil {
		return err
	}
	if err := h.d.ThreeDSScenarios.Delete(r.Context(), c.MerchantAccountID, id); err != nil {
		return domainError(err, threeDSResource)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// list serves GET /three-ds-scenarios?limit&cursor in evaluation order;
// a cursor is bound to the merchant account and holds the boundary's
// priority, so a reorder during a walk moves rules across its pages.
func (h threeDSHandlers) list(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeThreeDSScenariosRead)
	if err != nil {
		return err
	}
	page, err := h.d.Cursors.ParseRequest(r.URL.Query(), "three-ds-scenarios", pagination.Binding(c.MerchantAccountID))
	if err != nil {
		return err
	}
	rows, err := h.d.ThreeDSScenarios.List(r.Context(), c.MerchantAccountID, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(s coreapi.ThreeDSScenario) pagination.Key {
		return pagination.Key{ID: strconv.Itoa(s.Priority)}
	})
	return WriteJSON(w, http.StatusOK, pageOf(env, threeDSScenarioOut))
}

// threeDSecureRequestJSON is a payment's three_d_secure.
type threeDSecureRequestJSON struct {
	Amount *int64 `json:"amount"`
}

func (in *threeDSecureRequestJSON) domain() *coreapi.NewThreeDSecure {
	if in.Amount == nil {
		return &coreapi.NewThreeDSecure{} // 0: refused with a pointer at the amount
	}
	return &coreapi.NewThreeDSecure{Amount: *in.Amount}
}

// threeDSecureJSON is a transaction's 3-D Secure summary on the wire.
type threeDSecureJSON struct {
	Version      string                       `json:"version"`
	Status       string                       `json:"status"`
	Method       string                       `json:"method"`
	Amount       int64                        `json:"amount"`
	ResponseData *coreapi.ThreeDSResponseData `json:"response_data"`
}

func threeDSecureOut(t *coreapi.ThreeDSecure) *threeDSecureJSON {
	if t == nil {
		return nil
	}
	return &threeDSecureJSON{Version: t.Version, Status: t.Status, Method: t.Method, Amount: t.Amount, ResponseData: t.ResponseData}
}

// CodeThreeDSAmountTooLow (422): three_d_secure.amount below the
// transaction's amount.
const CodeThreeDSAmountTooLow = "three_d_secure_amount_too_low"

// threeDSError maps the refusals of a payment's 3-D Secure; nil for
// another error.
func threeDSError(err error) error {
	switch {
	case errors.Is(err, coreapi.ErrThreeDSAmountTooLow):
		msg := "three_d_secure.amount must be at least the transaction's amount"
		return apierror.New(http.StatusUnprocessableEntity, CodeThreeDSAmountTooLow, msg,
			strictjson.BodyDetail("/three_d_secure/amount", msg, "value_error."+CodeThreeDSAmountTooLow))
	case errors.Is(err, coreapi.ErrThreeDSUnavailable):
		return apierror.Unprocessable("no 3-D Secure connector is configured in this environment",
			strictjson.BodyDetail("/three_d_secure", "3-D Secure is not available", "value_error.three_d_secure.unavailable"))
	}
	return nil
}

// The sandbox challenge page of a payment's 3-D Secure (the
// transaction's payment_method.approval_url while it is
// buyer_approval_pending), opened by the buyer's browser without a
// bearer token: the token query parameter is the authority.
//
//	GET  /three-ds-challenges/{transaction_id}?token=  -> an HTML page with the form that completes it
//	POST /three-ds-challenges/{transaction_id}?token=  -> completes it; 200 with the transaction
type threeDSChallengeHandlers struct{ d Deps }

func (h threeDSChallengeHandlers) token(r *http.Request) (string, string, error) {
	id, err := pathUUID(r, "transaction_id")
	if err != nil {
		return "", "", err
	}
	tok := r.URL.Query().Get("token")
	if tok == "" {
		return "", "", apierror.BadRequest("the challenge token is required",
			apierror.Detail{Location: "query", Pointer: "token", Message: "is required", Type: strictjson.TypeMissing})
	}
	return id, tok, nil
}

// challengePage is the sandbox challenge: one button that completes it
// with the result the scenario decided.
var challengePage = template.Must(template.New("challenge").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>3-D Secure challenge (sandbox)</title></head>
<body><h1>3-D Secure challenge (sandbox)</h1>
<p>The sandbox simulator decided this challenge's result when the payment was made; completing it applies that result.</p>
<form method="post" action="{{.}}"><button type="submit">Complete the challenge</button></form>
</body></html>
`))

func (h threeDSChallengeHandlers) page(w http.ResponseWriter, r *http.Request) error {
	if _, _, err := h.token(r); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'")
	w.Header().Set("Cache-Control", "no-store")
	return challengePage.Execute(w, r.URL.RequestURI())
}

func (h threeDSChallengeHandlers) complete(w http.ResponseWriter, r *http.Request) error {
	id, tok, err := h.token(r)
	if err != nil {
		return err
	}
	t, err := h.d.Transactions.CompleteChallenge(r.Context(), id, tok)
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusOK, transactionOut(t))
}
