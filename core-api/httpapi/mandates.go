package httpapi

import (
	"net/http"
	"strconv"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
)

// The mandate routes (routes.go registers them):
//
//	GET /mandates/{mandate_id}         payment-methods.read  -> the mandate, as its payment method shows it
//	GET /mandates/{mandate_id}/events  payment-methods.read  ?limit=&cursor= -> page of mandate events (newest first)
//
// Decisions:
//   - A bank debit mandate's history is its own resource, named by the
//     connector's mandate id (the payment method's mandate.id): it
//     outlives the payment method, so the revocation a DELETE makes stays
//     readable after it.
//   - Notifications about a mandate (activated, revoked, recurring token
//     created) are recorded here with their raw headers and body, as a
//     transaction's are on its events.

// mandateIDMaxLen bounds a mandate id in the path: the connector's
// reference, stored as given.
const mandateIDMaxLen = 255

type mandateEventJSON struct {
	Type            string            `json:"type"`
	ID              string            `json:"id"`
	MandateID       string            `json:"mandate_id"`
	PaymentMethodID string            `json:"payment_method_id"`
	Name            string            `json:"name"`
	StatusBefore    *string           `json:"status_before"`
	StatusAfter     string            `json:"status_after"`
	Notification    *notificationJSON `json:"notification"`
	CreatedAt       string            `json:"created_at"`
}

func mandateEventOut(e *coreapi.MandateEvent) mandateEventJSON {
	out := mandateEventJSON{Type: "mandate-event", ID: e.ID, MandateID: e.MandateID, PaymentMethodID: e.PaymentMethodID,
		Name: e.Name, StatusAfter: e.StatusAfter, CreatedAt: timestamp(e.CreatedAt)}
	if e.StatusBefore != "" {
		out.StatusBefore = &e.StatusBefore
	}
	if n := e.Notification; n != nil {
		out.Notification = &notificationJSON{ID: n.ID, Connector: n.Connector, RawHeaders: n.Headers, RawBody: n.Body}
	}
	return out
}

// mandateOut is a mandate on the wire, alone and in its payment method.
func mandateOut(m *coreapi.Mandate) mandateJSON {
	return mandateJSON{Type: "mandate", ID: m.ID, Status: m.Status, PaymentService: m.Connector, PaymentServiceID: m.PaymentServiceID,
		CreatedAt: timestamp(m.CreatedAt), RevokedAt: timePtrJSON(m.RevokedAt), RecurringTokenAt: timePtrJSON(m.RecurringTokenAt)}
}

// authorizeMandate is Authorize for a route about one mandate: the caller
// and the mandate id from the path, which no connector's reference
// exceeds mandateIDMaxLen characters (else 400 naming it).
func (h *paymentMethods) authorizeMandate(r *http.Request) (Caller, string, error) {
	c, err := h.Auth.Authorize(r, scopePaymentMethodsRead)
	if err != nil {
		return Caller{}, "", err
	}
	id := r.PathValue("mandate_id")
	if len(id) > mandateIDMaxLen {
		return Caller{}, "", apierror.BadRequest("invalid mandate_id", apierror.Detail{Location: apierror.LocationPath, Pointer: "mandate_id",
			Message: "must be at most " + strconv.Itoa(mandateIDMaxLen) + " characters", Type: "value_error.any_str.max_length"})
	}
	return c, id, nil
}

func (h *paymentMethods) mandate(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.authorizeMandate(r)
	if err != nil {
		return err
	}
	m, err := h.PaymentMethods.Mandate(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "mandate")
	}
	return WriteJSON(w, http.StatusOK, mandateOut(m))
}

func (h *paymentMethods) mandateEvents(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.authorizeMandate(r)
	if err != nil {
		return err
	}
	page, err := h.Cursors.ParseRequest(r.URL.Query(), "mandate-events", pagination.Binding(c.MerchantAccountID, id))
	if err != nil {
		return err
	}
	rows, err := h.PaymentMethods.MandateEvents(r.Context(), c.MerchantAccountID, id, page)
	if err != nil {
		return pmError(err)
	}
	return WriteJSON(w, http.StatusOK, pageOf(pagination.Build(page, rows,
		func(e coreapi.MandateEvent) pagination.Key { return pagination.Key{Time: e.CreatedAt, ID: e.ID} }), mandateEventOut))
}
