package transactions

import (
	"context"
	"errors"
	"net/textproto"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/pgtext"
)

// NotificationOutcome is what became of a verified notification.
type NotificationOutcome string

// The outcomes.
const (
	NotificationApplied   NotificationOutcome = "applied"   // recorded as an event and applied through the state machine
	NotificationRecorded  NotificationOutcome = "recorded"  // recorded as an event; the transaction already stood there
	NotificationDuplicate NotificationOutcome = "duplicate" // its id was recorded before: nothing changes
	NotificationUnmatched NotificationOutcome = "unmatched" // no transaction: no event, counted (QR.Unmatched)
)

// secretHeaders are never stored with a notification: credentials a
// processor (or a proxy in front of core-api) may send.
var secretHeaders = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true}

// HandleNotification verifies and applies a processor's notification
// received for merchant through connector name (docs/notifications.md).
// It is matched to a transaction by the reference the transaction was
// sent with; its signature is verified with that transaction's payment
// service's configuration (the built-in sandbox configuration for one
// without, and for a notification that matches nothing). A notification
// that matches is recorded, with its headers (less secretHeaders) and
// body, as an event on the transaction, in the same database transaction
// as the state machine's step it makes; one that matches nothing is
// counted and recorded nowhere. A transaction whose creation has not yet
// recorded the connector's answer is coreapi.ErrNotificationEarly:
// nothing is recorded, and the processor sends it again.
func (s *Service) HandleNotification(ctx context.Context, name, merchant string, headers map[string][]string, body []byte, now time.Time) (NotificationOutcome, error) {
	if rc, ok := s.redirectConnector(name); ok {
		return s.handleRedirectNotification(ctx, rc, name, merchant, headers, body, now)
	}
	qrc, err := s.Connectors.QRs(name)
	if err != nil {
		return "", coreapi.ErrNotificationConnector
	}
	var t *coreapi.Transaction
	if ref, err := qrc.ParseNotification(body); err == nil && coreapi.IsUUID(ref) {
		t, err = s.Store.Transaction(ctx, merchant, ref)
		if err != nil && !errors.Is(err, coreapi.ErrNotFound) {
			return "", err
		}
	}
	if t != nil && !s.notifiedBy(t, name) {
		t = nil
	}
	cfg := connector.Config{}
	switch {
	case t != nil && t.PaymentServiceID != nil:
		if _, cfg, err = s.PaymentServices.ForOperation(ctx, merchant, *t.PaymentServiceID); err != nil {
			return "", err
		}
	case s.QR == nil || s.QR.BuiltIn == nil || s.QR.BuiltIn.Name() != name:
		// No configuration to verify it with: nobody may make it count.
		return "", coreapi.ErrNotificationSignature
	}
	n, err := qrc.VerifyNotification(cfg, headers, body, now)
	switch {
	case errors.Is(err, connector.ErrBadSignature):
		return "", coreapi.ErrNotificationSignature
	case err != nil:
		return "", coreapi.ErrNotificationMalformed
	}
	if t == nil || n.Reference != t.ID {
		if s.QR != nil {
			s.QR.Unmatched.Add(1)
		}
		return NotificationUnmatched, nil
	}
	if t.Status == coreapi.TransactionProcessing {
		return "", coreapi.ErrNotificationEarly
	}
	c, err := s.saleCapture(ctx, t, n.ChargeID)
	if err != nil {
		return "", err
	}
	return s.applyNotification(ctx, t, c, n, storedNotification(name, n.ID, headers, body))
}

// notifiedBy reports whether t's notifications come through connector
// name: its payment service's connector, or the built-in one's.
func (s *Service) notifiedBy(t *coreapi.Transaction, name string) bool {
	if !qrPayment(t) {
		return false
	}
	if t.PaymentService != nil {
		return t.PaymentService.Connector == name
	}
	return t.PaymentServiceID == nil && s.QR != nil && s.QR.BuiltIn != nil && s.QR.BuiltIn.Name() == name
}

// storedNotification is the notification as its event keeps it: as
// received, but with any card number masked (the core database holds
// none, whatever a processor sends) and what PostgreSQL's text cannot
// hold replaced.
func storedNotification(name, id string, headers map[string][]string, body []byte) *coreapi.Notification {
	h := make(map[string][]string, len(headers))
	for k, v := range headers {
		if k = textproto.CanonicalMIMEHeaderKey(k); !secretHeaders[k] {
			vs := make([]string, len(v))
			for i := range v {
				vs[i] = storable(v[i])
			}
			h[k] = vs
		}
	}
	return &coreapi.Notification{ID: id, Connector: name, Headers: h, Body: storable(string(body))}
}

func storable(s string) string { return string(pgtext.AppendStorable(nil, panscan.Redact(s))) }

// applyNotification records notification nt on t under its row lock:
// once per id. The capture c the charge made (nil: none still processing)
// is settled with the notification's answer when the state machine
// allows it; otherwise the notification is recorded as
// EventNotificationReceived, the status unchanged.
func (s *Service) applyNotification(ctx context.Context, t *coreapi.Transaction, c *coreapi.Capture, n connector.QRNotification, nt *coreapi.Notification) (NotificationOutcome, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	merchant, id := t.MerchantAccountID, t.ID
	var out NotificationOutcome
	err := s.Store.InTx(ctx, func(tx Tx) error {
		t, now, err := tx.LockTransaction(ctx, merchant, id)
		if err != nil {
			return err
		}
		seen, err := tx.NotificationRecorded(ctx, merchant, id, nt.Connector, nt.ID)
		if err != nil || seen {
			out = NotificationDuplicate
			return err
		}
		if t.Status == coreapi.TransactionProcessing {
			return coreapi.ErrNotificationEarly
		}
		if c != nil {
			if op, err := coreapi.CaptureOperation(n.Result.Outcome); err == nil {
				if c, err = tx.Capture(ctx, merchant, id, c.ID); err != nil {
					return err
				}
				p, err := settlement(t, &c.OperationRecord, coreapi.Step{Operation: op, CaptureID: c.ID}, n.Result, now,
					func(tr *coreapi.Transition) { tr.Capture = c }, coreapi.CodeNoCapturePending)
				if err == nil && !p.unchanged {
					next, ev, err := t.Advance(p.step, now)
					if err == nil {
						tr := coreapi.Transition{Transaction: next, Event: ev}
						p.record(&tr)
						ev.Notification, out = nt, NotificationApplied
						return tx.RecordTransition(ctx, tr)
					}
				}
			}
		}
		out = NotificationRecorded
		return tx.RecordEvent(ctx, &coreapi.TransactionEvent{MerchantAccountID: merchant, TransactionID: id,
			Name: coreapi.EventNotificationReceived, StatusBefore: t.Status, StatusAfter: t.Status,
			RawResponseCode: optionalText(n.Result.RawResponseCode), Notification: nt, CreatedAt: now})
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
