package mockcard

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/payorch/shared/simulator"
)

// Results that come later, as a card processor's asynchronous ones do
// (docs/sandbox/mock-card.md, "Notifications"): an authorization of a
// pending amount is answered pending and decided after
// Config.SettleDelay; a capture or refund of a pending operation amount
// is recorded pending and settled then. Either way the result is sent,
// signed, to the authorization's notification_url, with the shared
// simulators' retries.

// Pending authorization amounts: 4200 is answered pending and approved
// by notification; 4200 + a decline code of the amounts' table (42xx) is
// answered pending and declined (or failed, for 4296) with that code.
const AmountPending = 4200

// Pending operation amounts: a capture or refund of one is answered
// pending, then succeeds (AmountOperationPending) or fails
// (AmountOperationPendingFails, with OperationFailureCode).
const (
	AmountOperationPending      = 4300
	AmountOperationPendingFails = 4301
	OperationFailureCode        = "acquirer_refused"
)

// pendingOperations are the operation amounts answered later, with
// whether they fail.
var pendingOperations = map[int64]bool{AmountOperationPending: false, AmountOperationPendingFails: true}

// Notification headers.
const (
	HeaderNotificationID = "Mock-Card-Notification-Id"
	HeaderTimestamp      = "Mock-Card-Timestamp"
	HeaderSignature      = "Mock-Card-Signature"
)

// pendingResult is the decision a pending amount comes to: approved for
// AmountPending, a decline of the table for 42xx; false for any other
// amount.
func pendingResult(amount int64) (response, bool) {
	if amount == AmountPending {
		return response{code: approvedCode, message: "Approved"}, true
	}
	r, ok := declineByAmount[amount-(AmountPending-amountBase)]
	return r, ok && amount > AmountPending && amount < AmountPending+100
}

// pendingAuthorization is a, as answered before its decision: pending,
// nothing authorized, no response or check result yet. a is kept as the
// decision to apply later.
func pendingAuthorization(a *Authorization) *Authorization {
	p := *a
	p.Status, p.AuthorizedAmount, p.CapturedAmount = statusPending, 0, 0
	p.ResponseCode, p.ResponseMessage = "", "Received: the result follows by notification"
	p.DeclineCode, p.AVSResult, p.CVVResult, p.SchemeTransactionID = nil, nil, nil, nil
	p.result = a
	return &p
}

// newOperation is a capture or refund of n under key: pending when
// amount (the request's) is a pending operation amount.
func newOperation(prefix, key string, n int64, amount *int64, now time.Time) Operation {
	status := "succeeded"
	if _, ok := pendingOperations[deref(amount)]; ok {
		status = statusPending
	}
	return Operation{ID: newID(prefix), IdempotencyKey: key, Amount: n, Status: status, CreatedAt: now}
}

func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}

func checkNotificationURL(p *problems, s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s) > 2048 {
		p.add("/notification_url", "must be an absolute http or https URL of at most 2048 characters", "value_error.url")
	}
}

// notification is the body of a notification: its id (the same on each
// retry), its type (authorization.approved, .declined, .failed;
// capture.succeeded, .failed; refund.succeeded, .failed) and the
// authorization after the result, with the operation it is about.
type notification struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		Authorization *Authorization `json:"authorization"`
		Operation     *Operation     `json:"operation"`
	} `json:"data"`
}

// notifier decides pending results and sends their notifications.
type notifier struct {
	ctx    context.Context // ended when the simulator stops
	cfg    Config
	log    *slog.Logger
	sender simulator.Notifier
}

func newNotifier(ctx context.Context, cfg Config, log *slog.Logger, now func() time.Time) *notifier {
	return &notifier{ctx: ctx, cfg: cfg, log: log, sender: simulator.Notifier{
		Headers: simulator.Headers{ID: HeaderNotificationID, Timestamp: HeaderTimestamp, Signature: HeaderSignature},
		Client:  &http.Client{Timeout: 10 * time.Second}, Now: now,
	}}
}

// settleLater decides, after the settle delay, the pending authorization
// id (kind "") or its pending operation of kind under key, and notifies
// the result.
func (s *server) settleLater(id, kind, key string) {
	if s.notify == nil {
		return
	}
	n := s.notify
	go func() {
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(n.cfg.SettleDelay):
		}
		url, body, nid, ok := s.store.settle(id, kind, key, s.now())
		if !ok || url == "" {
			return
		}
		var d simulator.Delivery
		if n.sender.Deliver(n.ctx, url, nid, n.cfg.WebhookSecret, body, &d, n.cfg.DeliveryAttempts, n.cfg.RetryDelay) {
			n.log.Warn("mock-card: notification not delivered", "notification_id", nid, "attempts", d.Attempts, "status", d.StatusCode)
		}
	}()
}

// settle applies the pending result of authorization id (kind "") or of
// its operation of kind under key, and answers the notification of it:
// the authorization's notification_url, the body and its id. false: no
// such pending result (forgotten meanwhile).
func (s *store) settle(id, kind, key string, now time.Time) (string, []byte, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.byID[id]
	if a == nil {
		return "", nil, "", false
	}
	var n notification
	n.ID, n.Data.Authorization = newID("ntf_"), a
	switch kind {
	case "":
		r := a.result
		if r == nil {
			return "", nil, "", false
		}
		a.result = nil
		a.Status, a.AuthorizedAmount, a.CapturedAmount = r.Status, r.AuthorizedAmount, r.CapturedAmount
		a.ResponseCode, a.ResponseMessage, a.DeclineCode = r.ResponseCode, r.ResponseMessage, r.DeclineCode
		a.AVSResult, a.CVVResult, a.SchemeTransactionID = r.AVSResult, r.CVVResult, r.SchemeTransactionID
		n.Type = "authorization." + map[string]string{statusAuthorized: "approved", statusCaptured: "approved", statusDeclined: "declined", statusFailed: "failed"}[a.Status]
	case captureOp.name, refundOp.name:
		ops, obj := &a.Captures, "capture"
		if kind == refundOp.name {
			ops, obj = &a.Refunds, "refund"
		}
		i := pendingOperation(*ops, key)
		if i < 0 {
			return "", nil, "", false
		}
		op := &(*ops)[i]
		op.Status = "succeeded"
		if pendingOperations[op.Amount] {
			op.Status, op.FailureCode = statusFailed, ptr(OperationFailureCode)
			// A failed operation moved nothing: its amount is free again.
			if obj == "capture" {
				if a.CapturedAmount -= op.Amount; a.CapturedAmount == 0 {
					a.Status = statusAuthorized
				}
			} else {
				a.RefundedAmount -= op.Amount
			}
		}
		n.Type, n.Data.Operation = obj+"."+op.Status, op
	default:
		return "", nil, "", false
	}
	body, err := json.Marshal(n)
	if err != nil {
		return "", nil, "", false
	}
	return a.notifyURL, body, n.ID, true
}

// pendingOperation is the index of the pending operation sent under key.
func pendingOperation(ops []Operation, key string) int {
	for i := range ops {
		if ops[i].IdempotencyKey == key && ops[i].Status == statusPending {
			return i
		}
	}
	return -1
}
