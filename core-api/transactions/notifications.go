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
	NotificationApplied   NotificationOutcome = "applied"   // recorded as an event and applied (the state machine, a mandate's change)
	NotificationRecorded  NotificationOutcome = "recorded"  // recorded as an event; its subject already stood there
	NotificationDuplicate NotificationOutcome = "duplicate" // its id was recorded before: nothing changes
	NotificationUnmatched NotificationOutcome = "unmatched" // no transaction or mandate: no event, counted (QR.Unmatched)
)

// secretHeaders are never stored with a notification: credentials a
// processor (or a proxy in front of core-api) may send.
var secretHeaders = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true}

// HandleNotification verifies and applies a processor's notification
// received for merchant through connector name (docs/notifications.md).
// The connector reads what it is about (connector.NotificationKind):
//
//   - a transaction's authorization (a redirect payment's buyer decided)
//     or charge (a transfer completed, a debit's or a recurring charge's
//     result), matched by the reference the transaction was sent with and
//     verified with its payment service's configuration (the built-in
//     sandbox configuration for one without); the authorization, or the
//     capture the charge made, is settled through the state machine
//     (applyNotification);
//   - a mandate (activated, revoked, recurring token created), matched by
//     the processor's mandate id and verified with the configuration of
//     the payment service it was set up through (the built-in one for a
//     mandate without); the mandate changes (mandateNotification).
//
// A notification that matches is recorded, with its headers (less
// secretHeaders) and body, as an event of what it matched, in the same
// database transaction as the change it makes; one that matches nothing
// (verified with the built-in configuration) is counted and recorded
// nowhere. A transaction whose creation has not yet recorded the
// connector's answer is coreapi.ErrNotificationEarly: nothing is
// recorded, and the processor sends it again.
func (s *Service) HandleNotification(ctx context.Context, name, merchant string, headers map[string][]string, body []byte, now time.Time) (NotificationOutcome, error) {
	nc, err := s.Connectors.Notifications(name)
	if err != nil {
		return "", coreapi.ErrNotificationConnector
	}
	sub, parseErr := nc.ParseNotification(body)
	if parseErr == nil && sub.Kind.AboutMandate() {
		return s.mandateNotification(ctx, nc, merchant, sub, headers, body, now)
	}
	var t *coreapi.Transaction
	if parseErr == nil && coreapi.IsUUID(sub.Reference) {
		t, err = s.Store.Transaction(ctx, merchant, sub.Reference)
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
	case !s.builtInNotifier(name):
		// No configuration to verify it with: nobody may make it count.
		return "", coreapi.ErrNotificationSignature
	}
	n, err := verifyNotification(nc, cfg, headers, body, now)
	if err != nil {
		return "", err
	}
	if t == nil || n.Reference != t.ID || !kindFits(t, n.Kind) {
		return s.unmatched(), nil
	}
	if early(t) {
		return "", coreapi.ErrNotificationEarly
	}
	var c *coreapi.Capture
	if settlesSale(n.Kind) {
		if c, err = s.saleCapture(ctx, t, n.ProcessorID); err != nil {
			return "", err
		}
	}
	return s.applyNotification(ctx, t, c, n, storedNotification(name, n.ID, headers, body))
}

// verifyNotification is nc's verification, as the service's errors.
func verifyNotification(nc connector.NotificationConnector, cfg connector.Config, headers map[string][]string, body []byte, now time.Time) (connector.Notification, error) {
	n, err := nc.VerifyNotification(cfg, headers, body, now)
	switch {
	case errors.Is(err, connector.ErrBadSignature):
		return n, coreapi.ErrNotificationSignature
	case err != nil:
		return n, coreapi.ErrNotificationMalformed
	}
	return n, nil
}

// unmatched counts a verified notification that matched nothing.
func (s *Service) unmatched() NotificationOutcome {
	if s.QR != nil {
		s.QR.Unmatched.Add(1)
	}
	return NotificationUnmatched
}

// builtInNotifier reports whether connector name is one of the built-in
// sandbox connectors, whose notifications the built-in configuration
// verifies.
func (s *Service) builtInNotifier(name string) bool {
	return s.QR != nil && s.QR.BuiltIn != nil && s.QR.BuiltIn.Name() == name ||
		s.Bank != nil && s.Bank.BuiltIn != nil && s.Bank.BuiltIn.Name() == name ||
		s.Redirect != nil && s.Redirect.BuiltIn != nil && s.Redirect.BuiltIn.Name() == name ||
		s.Cards != nil && s.Cards.Name() == name
}

// early reports whether t's creation has not yet recorded its
// connector's answer. A card authorization answered pending leaves t
// processing, with the processor's id of it: its notification is the
// answer still to come.
func early(t *coreapi.Transaction) bool {
	return t.Status == coreapi.TransactionProcessing && (!cardPayment(t) || t.PaymentServiceTransactionID == nil)
}

// settlesSale reports whether a notification of kind settles the capture
// a sale made (a transfer, a debit): the one capture still processing.
func settlesSale(kind connector.NotificationKind) bool {
	return kind == connector.KindTransferCompleted || kind == connector.KindDebitResult || kind == connector.KindRecurringChargeResult
}

// notifiedBy reports whether t's notifications come through connector
// name: its payment service's connector, or the built-in one's.
func (s *Service) notifiedBy(t *coreapi.Transaction, name string) bool {
	if !qrPayment(t) && !bankPayment(t) && !redirectPayment(t) && !cardPayment(t) {
		return false
	}
	if t.PaymentService != nil {
		return t.PaymentService.Connector == name
	}
	return t.PaymentServiceID == nil && s.builtInNotifier(name)
}

// kindFits reports whether a notification of kind can be about t: an
// authorization's result about a redirect or card payment, a capture's
// or refund's about a card payment, a completed transfer about a pix
// payment, a debit's or recurring charge's result about a bank debit.
func kindFits(t *coreapi.Transaction, kind connector.NotificationKind) bool {
	switch kind {
	case connector.KindAuthorizationResult:
		return redirectPayment(t) || cardPayment(t)
	case connector.KindCaptureResult, connector.KindRefundResult:
		return cardPayment(t)
	case connector.KindTransferCompleted:
		return qrPayment(t)
	case connector.KindDebitResult, connector.KindRecurringChargeResult:
		return bankPayment(t)
	}
	return false
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

// notificationStep is the state machine's operation that settles the
// sale's capture with a notification's answer: the capture's, except
// that a bank debit returned unpaid fails the whole sale (nothing stays
// authorized for a debit the bank refused).
func notificationStep(t *coreapi.Transaction, res coreapi.ConnectorResult) (coreapi.TransactionOperation, error) {
	if bankPayment(t) && (res.Outcome == coreapi.OutcomeFailed || res.Outcome == coreapi.OutcomeDeclined) {
		return coreapi.OpSaleFailed, nil
	}
	return coreapi.CaptureOperation(res.Outcome)
}

// applyNotification records notification nt on t under its row lock:
// once per id. Its answer is applied through the state machine when it
// allows it (notificationPlan); otherwise the notification is recorded
// as EventNotificationReceived, the status unchanged: a step the state
// machine refuses is no error, as the processor's word still stands. With nt nil the
// answer is the processor's record of a charge, read by a sync
// (syncDebit): it settles the capture c the same way, and nothing is
// recorded when it cannot.
func (s *Service) applyNotification(ctx context.Context, t *coreapi.Transaction, c *coreapi.Capture, n connector.Notification, nt *coreapi.Notification) (NotificationOutcome, error) {
	var out NotificationOutcome
	_, err := s.apply(ctx, true, t.MerchantAccountID, t.ID, func(tx Tx, t *coreapi.Transaction, now time.Time) (plan, error) {
		if nt != nil {
			seen, err := tx.NotificationRecorded(ctx, t.MerchantAccountID, t.ID, nt.Connector, nt.ID)
			if err != nil || seen {
				out = NotificationDuplicate
				return plan{unchanged: true}, err
			}
		}
		if early(t) {
			return plan{}, coreapi.ErrNotificationEarly
		}
		p, err := notificationPlan(ctx, tx, t, c, n, now)
		if err != nil {
			return p, err
		}
		if _, refused := t.TransactionState.Apply(p.step.Operation, p.step.Amount); !p.unchanged && refused == nil {
			record := p.record
			p.record = func(tr *coreapi.Transition) {
				if record != nil {
					record(tr)
				}
				tr.Event.Notification = nt
			}
			out = NotificationApplied
			return p, nil
		}
		out, p = NotificationRecorded, plan{unchanged: true}
		if nt == nil {
			return p, nil
		}
		return p, tx.RecordEvent(ctx, &coreapi.TransactionEvent{MerchantAccountID: t.MerchantAccountID, TransactionID: t.ID,
			Name: coreapi.EventNotificationReceived, StatusBefore: t.Status, StatusAfter: t.Status,
			RawResponseCode: optionalText(n.Result.RawResponseCode), Notification: nt, CreatedAt: now})
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// notificationPlan plans n's answer on t, locked at now: an
// authorization's result answers the authorization of a payment still
// waiting for its buyer or its processor (authorizationPlan: by the
// intent); a capture's or refund's result settles the operation it names
// (operationPlan); a charge's settles capture c (nil: none still
// processing). The plan is unchanged
// when the answer already stands or there is nothing it settles: the
// notification is then only recorded. An error is one of reading.
func notificationPlan(ctx context.Context, tx Tx, t *coreapi.Transaction, c *coreapi.Capture, n connector.Notification, now time.Time) (plan, error) {
	unchanged := plan{unchanged: true}
	switch n.Kind {
	case connector.KindCaptureResult, connector.KindRefundResult:
		return operationPlan(ctx, tx, t, n, now)
	case connector.KindAuthorizationResult:
		waiting := t.Status == coreapi.TransactionBuyerApprovalPending || t.Status == coreapi.TransactionProcessing
		if !waiting || n.Result.Outcome == coreapi.OutcomeApprovalRequired || n.Result.Outcome == coreapi.OutcomePending {
			return unchanged, nil
		}
		if p, _, err := authorizationPlan(t, n.Result, now); err == nil {
			return p, nil
		}
		return unchanged, nil
	}
	if c == nil {
		return unchanged, nil
	}
	op, err := notificationStep(t, n.Result)
	if err != nil {
		return unchanged, nil
	}
	if c, err = tx.Capture(ctx, t.MerchantAccountID, t.ID, c.ID); err != nil {
		return plan{}, err
	}
	p, err := settlement(t, &c.OperationRecord, coreapi.Step{Operation: op, CaptureID: c.ID}, n.Result, now,
		func(tr *coreapi.Transition) {
			tr.Capture = c
			if op == coreapi.OpSaleFailed {
				tr.Transaction.ErrorCode = optionalText(n.Result.ErrorCode)
			}
		}, coreapi.CodeNoCapturePending)
	if err != nil {
		return unchanged, nil
	}
	return p, nil
}

// operationPlan plans a capture's or refund's result n on t: the
// operation named by the reference it was sent with, still processing,
// is settled as any connector answer settles it (settlement). Unchanged
// when the result is no final one, the operation is not t's, or it
// already stands settled (the notification is then only recorded).
func operationPlan(ctx context.Context, tx Tx, t *coreapi.Transaction, n connector.Notification, now time.Time) (plan, error) {
	unchanged := plan{unchanged: true}
	if !coreapi.IsUUID(n.OperationReference) || n.Result.Outcome == coreapi.OutcomePending {
		return unchanged, nil
	}
	var p plan
	var err error
	if n.Kind == connector.KindCaptureResult {
		op, opErr := coreapi.CaptureOperation(n.Result.Outcome)
		c, readErr := tx.Capture(ctx, t.MerchantAccountID, t.ID, n.OperationReference)
		if opErr != nil || errors.Is(readErr, coreapi.ErrNotFound) {
			return unchanged, nil
		}
		if readErr != nil {
			return plan{}, readErr
		}
		p, err = settlement(t, &c.OperationRecord, coreapi.Step{Operation: op, CaptureID: c.ID}, n.Result, now,
			func(tr *coreapi.Transition) { tr.Capture = c }, coreapi.CodeNoCapturePending)
	} else {
		op, opErr := coreapi.RefundOperation(n.Result.Outcome)
		r, readErr := tx.Refund(ctx, t.MerchantAccountID, t.ID, n.OperationReference)
		if opErr != nil || errors.Is(readErr, coreapi.ErrNotFound) {
			return unchanged, nil
		}
		if readErr != nil {
			return plan{}, readErr
		}
		p, err = settlement(t, &r.OperationRecord, coreapi.Step{Operation: op, RefundID: r.ID}, n.Result, now,
			func(tr *coreapi.Transition) { tr.Refund = r }, coreapi.CodeNoRefundPending)
	}
	if err != nil {
		return unchanged, nil
	}
	return p, nil
}

// mandateNotification verifies and applies a notification about a bank
// debit mandate (sub, as the connector read it unverified): the mandate
// of the merchant account with the processor's id, made through this
// connector, changes as the notification says (coreapi.Mandate.Notified)
// and records it as an event, once per notification id.
func (s *Service) mandateNotification(ctx context.Context, nc connector.NotificationConnector, merchant string, sub connector.NotificationSubject,
	headers map[string][]string, body []byte, now time.Time) (NotificationOutcome, error) {
	if s.Bank == nil || s.Bank.Mandates == nil {
		return "", coreapi.ErrNotificationSignature
	}
	m, err := s.Bank.Mandates.Mandate(ctx, merchant, sub.ProcessorID)
	switch {
	case errors.Is(err, coreapi.ErrNotFound):
		m = nil
	case err != nil:
		return "", err
	}
	if m != nil && m.Connector != nc.Name() {
		m = nil
	}
	cfg := connector.Config{}
	switch {
	case m != nil && m.PaymentServiceID != nil:
		if _, cfg, err = s.PaymentServices.ForOperation(ctx, merchant, *m.PaymentServiceID); err != nil {
			return "", err
		}
	case !s.builtInNotifier(nc.Name()):
		// No configuration to verify it with: nobody may make it count.
		return "", coreapi.ErrNotificationSignature
	}
	n, err := verifyNotification(nc, cfg, headers, body, now)
	if err != nil {
		return "", err
	}
	if m == nil || n.ProcessorID != m.ID || !n.Kind.AboutMandate() {
		return s.unmatched(), nil
	}
	ev, dup, err := s.Bank.Mandates.ChangeMandate(ctx, merchant, m.ID, storedNotification(nc.Name(), n.ID, headers, body),
		func(m coreapi.Mandate, now time.Time) (coreapi.Mandate, string) {
			return m.Notified(string(n.Kind), now)
		})
	switch {
	case err != nil:
		return "", err
	case dup:
		return NotificationDuplicate, nil
	case ev.Name == coreapi.MandateEventNotificationReceived:
		return NotificationRecorded, nil
	}
	return NotificationApplied, nil
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
