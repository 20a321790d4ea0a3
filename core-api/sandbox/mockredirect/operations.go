package mockredirect

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/payorch/shared/simulator"
)

// Operation is a capture or refund of an approved payment, as the API
// answers it: idempotent by the merchant's reference.
type Operation struct {
	ID        string    `json:"id"`
	Reference string    `json:"reference"`
	Amount    int64     `json:"amount"`
	Status    string    `json:"status"` // succeeded
	CreatedAt time.Time `json:"created_at"`
}

// operationRequest is the body of a capture, refund or void.
type operationRequest struct {
	Reference string `json:"reference"`
	Amount    int64  `json:"amount"` // a void has none
}

// captured is what p's captures took: all of a sale, the captures of an
// authorization.
func (p *Payment) captured() int64 {
	if p.Type == "sale" {
		return p.Amount
	}
	return sum(p.Captures)
}

func sum(ops []Operation) int64 {
	var n int64
	for _, o := range ops {
		n += o.Amount
	}
	return n
}

func find(ops []Operation, ref string) (Operation, bool) {
	for _, o := range ops {
		if o.Reference == ref {
			return o, true
		}
	}
	return Operation{}, false
}

// readOperation reads an operation's body: a 400 answered when it is
// malformed (withAmount: a positive amount required).
func readOperation(w http.ResponseWriter, r *http.Request, withAmount bool) (operationRequest, bool) {
	var in operationRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	switch err := dec.Decode(&in); {
	case err != nil:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_json"})
	case in.Reference == "" || len(in.Reference) > 255:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_reference"})
	case withAmount && (in.Amount <= 0 || in.Amount > 99_999_999), !withAmount && in.Amount != 0:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_amount"})
	default:
		return in, true
	}
	return in, false
}

// refusal is why p cannot take an operation (a 422's code), or "".
func refusal(p *Payment, authorizationOnly bool) string {
	switch {
	case p.Status != StatusApproved:
		return "payment_" + p.Status
	case authorizationOnly && p.Type != "authorization":
		return "not_an_authorization"
	case authorizationOnly && p.Voided:
		return "payment_voided"
	}
	return ""
}

// capture answers POST /v1/payments/{id}/captures: part of an approved
// authorization, up to what is left of it. The same reference is the
// same capture (200).
func (m *Main) capture(w http.ResponseWriter, r *http.Request, p *Payment) {
	in, ok := readOperation(w, r, true)
	if !ok {
		return
	}
	if c, ok := find(p.Captures, in.Reference); ok {
		simulator.WriteJSON(w, http.StatusOK, c)
		return
	}
	code := refusal(p, true)
	if code == "" && sum(p.Captures)+in.Amount > p.Amount {
		code = "amount_exceeds_authorized"
	}
	if code != "" {
		simulator.WriteJSON(w, http.StatusUnprocessableEntity, apiError{code})
		return
	}
	c := Operation{ID: "mrc_" + randomHex(12), Reference: in.Reference, Amount: in.Amount, Status: "succeeded", CreatedAt: m.now()}
	p.Captures = append(p.Captures, c)
	simulator.WriteJSON(w, http.StatusCreated, c)
}

// void answers POST /v1/payments/{id}/void: an approved authorization
// nothing was captured of. Voiding it again is the same void (200).
func (m *Main) void(w http.ResponseWriter, r *http.Request, p *Payment) {
	in, ok := readOperation(w, r, false)
	if !ok {
		return
	}
	if p.Voided {
		simulator.WriteJSON(w, http.StatusOK, p)
		return
	}
	code := refusal(p, true)
	if code == "" && len(p.Captures) > 0 {
		code = "payment_captured"
	}
	if code != "" {
		simulator.WriteJSON(w, http.StatusUnprocessableEntity, apiError{code})
		return
	}
	p.Voided, p.VoidReference = true, in.Reference
	simulator.WriteJSON(w, http.StatusOK, p)
}

// refund answers POST /v1/payments/{id}/refunds: part of what an
// approved payment captured, up to what is left of it. The same
// reference is the same refund (200).
func (m *Main) refund(w http.ResponseWriter, r *http.Request, p *Payment) {
	in, ok := readOperation(w, r, true)
	if !ok {
		return
	}
	if rf, ok := find(p.Refunds, in.Reference); ok {
		simulator.WriteJSON(w, http.StatusOK, rf)
		return
	}
	code := refusal(p, false)
	if code == "" && sum(p.Refunds)+in.Amount > p.captured() {
		code = "amount_exceeds_captured"
	}
	if code != "" {
		simulator.WriteJSON(w, http.StatusUnprocessableEntity, apiError{code})
		return
	}
	rf := Operation{ID: "mrr_" + randomHex(12), Reference: in.Reference, Amount: in.Amount, Status: "succeeded", CreatedAt: m.now()}
	p.Refunds = append(p.Refunds, rf)
	simulator.WriteJSON(w, http.StatusCreated, rf)
}
