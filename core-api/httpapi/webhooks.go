package httpapi

import (
	"errors"
	"io"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/apierror"
)

// The inbound notification route (docs/notifications.md):
//
//	POST /webhooks/{connector}/{merchant_account_id}  no bearer: the connector verifies the signature
//	  -> 200 {"type":"notification-receipt","outcome":"applied|recorded|duplicate|unmatched"}
//	  -> 401 signature missing, wrong or outside the tolerance; nothing recorded
//	  -> 409 the transaction's creation is still recording the connector's answer; Retry-After, nothing recorded
//
// Decisions:
//   - A notification that matches nothing is answered 200, so that the
//     processor stops sending it, and counted (GET /metrics).
//   - A notification is about a transaction (a charge's result) or a
//     mandate (its activation, revocation, recurring token); each is
//     recorded on what it matched (transaction or mandate events).
//   - A notification that races its transaction's creation is refused
//     with 409 and Retry-After rather than stored aside: the processor
//     sends it again, as it does on any non-2xx answer, and by then the
//     transaction has the capture it settles.

// maxNotificationBytes bounds a notification's body.
const maxNotificationBytes = 64 << 10

type notificationReceiptJSON struct {
	Type    string                           `json:"type"`
	Outcome transactions.NotificationOutcome `json:"outcome"`
}

func (h transactionHandlers) notification(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxNotificationBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return apierror.TooLarge("the notification's body exceeds 64 KiB")
		}
		return apierror.BadRequest("the notification's body could not be read")
	}
	out, err := h.d.Transactions.HandleNotification(r.Context(), r.PathValue("connector"), r.PathValue("merchant_account_id"),
		r.Header, body, time.Now())
	switch {
	case errors.Is(err, coreapi.ErrNotificationSignature):
		return apierror.Unauthorized("the notification's signature does not verify")
	case errors.Is(err, coreapi.ErrNotificationMalformed):
		return apierror.BadRequest("the notification cannot be read")
	case errors.Is(err, coreapi.ErrNotificationConnector):
		return apierror.NotFound("no connector of this name takes notifications")
	case errors.Is(err, coreapi.ErrNotificationEarly):
		w.Header().Set("Retry-After", "1")
		return apierror.ConcurrentRequest("the transaction's creation is still in progress; send the notification again")
	case err != nil:
		return err
	}
	return WriteJSON(w, http.StatusOK, notificationReceiptJSON{Type: "notification-receipt", Outcome: out})
}

// serveMetrics serves GET /metrics in the Prometheus text format: the
// process's registry, with core_api_unmatched_notifications_total (the
// count of verified notifications that matched no transaction) among
// them; nil (an instance built without metrics): 404.
func serveMetrics(m http.Handler) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if m == nil {
			return apierror.NotFound("metrics are not served by this instance")
		}
		m.ServeHTTP(w, r)
		return nil
	}
}
