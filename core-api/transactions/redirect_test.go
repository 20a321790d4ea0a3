package transactions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// redirectService is the transactions service with the real
// mock-redirect as its built-in redirect connector, and an inbound
// endpoint on loopback that hands the simulator's notifications to
// HandleNotification as core-api's route does.
func redirectService(t *testing.T, db *postgres.DB) (*transactions.Service, *mockredirect.Main) {
	t.Helper()
	s, _, _ := routed(t, db, false)
	inbound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/webhooks/"), "/")
		body, _ := io.ReadAll(r.Body)
		_, err := s.HandleNotification(r.Context(), parts[0], parts[1], r.Header, body, time.Now())
		switch {
		case errors.Is(err, coreapi.ErrNotificationEarly):
			w.WriteHeader(http.StatusConflict)
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(inbound.Close)
	m, err := mockredirect.New(mockredirect.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0", RetryDelay: 50 * time.Millisecond}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	rc := connector.MockRedirect{BaseURL: m.URL()}
	s.Connectors = connector.NewRegistry(rc)
	s.QR = &transactions.QR{NotificationBaseURL: inbound.URL}
	s.Redirect = &transactions.Redirect{BuiltIn: rc}
	return s, m
}

func gcash(amount int64, intent string) coreapi.NewTransaction {
	return coreapi.NewTransaction{Intent: intent, Amount: amount, Currency: "PHP", Method: ptr(coreapi.MethodGCash),
		RedirectURL: ptr("https://shop.example/return?cart=7")}
}

// sandboxDecide plays the buyer (or the clock) at mock-redirect.
func sandboxDecide(t *testing.T, m *mockredirect.Main, paymentID, action string) {
	t.Helper()
	resp, err := http.Post(m.URL()+"/sandbox/payments/"+paymentID+"/"+action, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Delivery struct {
			StatusCode int `json:"status_code"`
		} `json:"delivery"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Delivery.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %+v %v", action, resp.StatusCode, out, err)
	}
}

// A redirect payment waits for its buyer with the approval URL and its
// reference's expiry; the buyer's decision, notified by mock-redirect
// over HTTP, settles it through the state machine by the intent, the
// notification recorded on the event that applied it.
func TestRedirectPayment(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	for _, tc := range []struct {
		intent, action string
		status         coreapi.TransactionStatus
		event          string
		errorCode      string
		captured       int64
	}{
		{coreapi.IntentCapture, "approve", coreapi.TransactionCaptureSucceeded, "sale-succeeded", "", 1500},
		{coreapi.IntentAuthorize, "approve", coreapi.TransactionAuthorizationSucceeded, "authorization-succeeded", "", 0},
		{coreapi.IntentCapture, "decline", coreapi.TransactionAuthorizationDeclined, "authorization-declined", "buyer_declined", 0},
		{coreapi.IntentAuthorize, "expire", coreapi.TransactionAuthorizationFailed, "authorization-failed", "expired", 0},
	} {
		t.Run(tc.intent+" "+tc.action, func(t *testing.T) {
			tx, err := s.PayRedirect(ctx, "default", gcash(1500, tc.intent))
			if err != nil {
				t.Fatal(err)
			}
			if tx.Status != coreapi.TransactionBuyerApprovalPending || tx.PaymentMethod.ApprovalURL == nil || tx.ApprovalExpiresAt == nil ||
				tx.PaymentServiceTransactionID == nil {
				t.Fatalf("created: %+v", tx)
			}
			if d := time.Until(*tx.ApprovalExpiresAt) - connector.MockRedirectDefaultWindow; d > time.Minute || d < -time.Minute {
				t.Fatalf("expires at %s, want in 7 days", tx.ApprovalExpiresAt)
			}
			sandboxDecide(t, m, *tx.PaymentServiceTransactionID, tc.action)
			got, err := s.Get(ctx, "default", tx.ID)
			if err != nil || got.Status != tc.status || deref(got.ErrorCode) != tc.errorCode || got.CapturedAmount != tc.captured {
				t.Fatalf("after %s: %+v %v", tc.action, got, err)
			}
			evs, err := s.Events(ctx, "default", tx.ID, allPage())
			if err != nil || evs[0].Name != tc.event || evs[0].Notification == nil || evs[0].Notification.Connector != connector.MockRedirectName {
				t.Fatalf("latest event: %+v %v", evs[0], err)
			}
			// The same notification again changes nothing.
			if _, err := http.Post(m.URL()+"/sandbox/payments/"+*tx.PaymentServiceTransactionID+"/"+tc.action, "", nil); err != nil {
				t.Fatal(err)
			}
			if n := notificationEvents(t, s, tx.ID); n != 1 {
				t.Fatalf("%d notification events after a duplicate", n)
			}
		})
	}
}

// approval_expires_at: in the future and within the connector's maximum
// window, 7 days without it; the connector's entry of connection_options
// wins over both. A refusal points at the value refused and stores
// nothing; a payment without redirect_url is refused too.
func TestRedirectApprovalExpiry(t *testing.T) {
	db := postgrestest.New(t)
	s, _ := redirectService(t, db)
	now := time.Now()
	at := func(d time.Duration) *time.Time { v := now.Add(d).Truncate(time.Second); return &v }
	option := func(d time.Duration) map[string]json.RawMessage {
		return map[string]json.RawMessage{"mock-redirect": json.RawMessage(`{"approval_expires_at":"` + now.Add(d).UTC().Format(time.RFC3339) + `"}`)}
	}
	const optionPointer = "/connection_options/mock-redirect/approval_expires_at"
	for _, tc := range []struct {
		name      string
		requested *time.Time
		options   map[string]json.RawMessage
		code      string
		pointer   string
		want      time.Duration // from now, when accepted
	}{
		{name: "default", want: connector.MockRedirectDefaultWindow},
		{name: "requested", requested: at(48 * time.Hour), want: 48 * time.Hour},
		{name: "the maximum", requested: at(connector.MockRedirectMaxWindow - time.Minute), want: connector.MockRedirectMaxWindow - time.Minute},
		{name: "in the past", requested: at(-time.Minute), code: coreapi.CodeApprovalExpiresInPast, pointer: "/approval_expires_at"},
		{name: "now", requested: at(0), code: coreapi.CodeApprovalExpiresInPast, pointer: "/approval_expires_at"},
		{name: "beyond the window", requested: at(connector.MockRedirectMaxWindow + time.Hour), code: coreapi.CodeApprovalExpiresBeyondWindow, pointer: "/approval_expires_at"},
		{name: "override wins over the request", requested: at(-time.Hour), options: option(3 * time.Hour), want: 3 * time.Hour},
		{name: "override wins over the default", options: option(time.Hour), want: time.Hour},
		{name: "override in the past", requested: at(time.Hour), options: option(-time.Hour), code: coreapi.CodeApprovalExpiresInPast, pointer: optionPointer},
		{name: "override beyond the window", options: option(connector.MockRedirectMaxWindow + time.Hour), code: coreapi.CodeApprovalExpiresBeyondWindow, pointer: optionPointer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := gcash(700, "")
			n.ApprovalExpiresAt, n.ConnectionOptions = tc.requested, tc.options
			before := countTransactions(t, s)
			tx, err := s.PayRedirect(ctx, "default", n)
			if tc.code != "" {
				var ae *coreapi.ApprovalExpiryError
				if !errors.As(err, &ae) || ae.Code != tc.code || ae.Pointer != tc.pointer {
					t.Fatalf("got %+v, %v; want %s at %s", tx, err, tc.code, tc.pointer)
				}
				if countTransactions(t, s) != before {
					t.Fatal("a refused payment was stored")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := tx.ApprovalExpiresAt.Sub(now) - tc.want; d > 5*time.Second || d < -5*time.Second {
				t.Fatalf("expires at %s, want now + %s", tx.ApprovalExpiresAt, tc.want)
			}
		})
	}
	t.Run("a malformed override", func(t *testing.T) {
		n := gcash(700, "")
		n.ConnectionOptions = map[string]json.RawMessage{"mock-redirect": json.RawMessage(`{"approval_expires_at":"tomorrow"}`)}
		var p *coreapi.ValidationError
		if _, err := s.PayRedirect(ctx, "default", n); !errors.As(err, &p) {
			t.Fatalf("got %v, want a validation error", err)
		}
	})
	t.Run("no redirect_url", func(t *testing.T) {
		n := gcash(700, "")
		n.RedirectURL = nil
		if _, err := s.PayRedirect(ctx, "default", n); !errors.Is(err, coreapi.ErrMissingRedirectURL) {
			t.Fatalf("got %v", err)
		}
	})
}

func countTransactions(t *testing.T, s *transactions.Service) int {
	t.Helper()
	txs, err := s.List(ctx, "default", coreapi.TransactionFilter{}, allPage())
	if err != nil {
		t.Fatal(err)
	}
	return len(txs)
}

// A reference that expires with its buyer undecided is failed by the
// sweep (an authorization-failed event, error_code expired), and can no
// longer be approved at the processor.
func TestRedirectExpiredBySweep(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	n := gcash(900, coreapi.IntentCapture)
	n.ApprovalExpiresAt = ptr(time.Now().Add(1500 * time.Millisecond))
	tx, err := s.PayRedirect(ctx, "default", n)
	if err != nil {
		t.Fatal(err)
	}
	w := &transactions.Sweeper{Service: s, Store: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if res, err := w.Run(ctx); err != nil || res.Expired != 0 {
		t.Fatalf("sweep before the expiry: %+v %v", res, err)
	}
	time.Sleep(time.Until(*tx.ApprovalExpiresAt) + 100*time.Millisecond)
	if res, err := w.Run(ctx); err != nil || res.Expired != 1 || res.Failed != 0 {
		t.Fatalf("sweep after the expiry: %+v %v", res, err)
	}
	got, err := s.Get(ctx, "default", tx.ID)
	if err != nil || got.Status != coreapi.TransactionAuthorizationFailed || deref(got.ErrorCode) != transactions.ErrorCodeExpired || got.AuthorizedAmount != 0 {
		t.Fatalf("after the sweep: %+v %v", got, err)
	}
	evs, _ := s.Events(ctx, "default", tx.ID, allPage())
	if evs[0].Name != "authorization-failed" || evs[0].StatusBefore != coreapi.TransactionBuyerApprovalPending {
		t.Fatalf("latest event: %+v", evs[0])
	}
	resp, err := http.Post(m.URL()+"/sandbox/payments/"+*tx.PaymentServiceTransactionID+"/approve", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("approving the expired payment: %d", resp.StatusCode)
	}
}

// lostRedirect is mock-redirect's connector whose create answer is lost
// on the way back.
type lostRedirect struct{ connector.MockRedirect }

func (l lostRedirect) CreatePayment(ctx context.Context, r connector.RedirectPayment) (coreapi.ConnectorResult, error) {
	_, _ = l.MockRedirect.CreatePayment(ctx, r)
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, connector.ErrOutcomeUnknown
}

// lostCreate is a sale of amount whose create answer the built-in
// redirect connector loses: it stays processing.
func lostCreate(t *testing.T, s *transactions.Service, amount int64) *coreapi.Transaction {
	t.Helper()
	s.Redirect.BuiltIn = lostRedirect{s.Redirect.BuiltIn.(connector.MockRedirect)}
	tx, err := s.PayRedirect(ctx, "default", gcash(amount, coreapi.IntentCapture))
	if err != nil || tx.Status != coreapi.TransactionProcessing {
		t.Fatalf("created: %+v %v", tx, err)
	}
	return tx
}

// A payment whose create answer was lost stays processing; Sync (a
// retry's Resume, the sweep) finds it at the processor by its reference,
// and then its outcome once the buyer decided.
func TestRedirectSync(t *testing.T) {
	db := postgrestest.New(t)
	s, m := redirectService(t, db)
	tx := lostCreate(t, s, 1200)
	var err error
	if tx, err = s.Sync(ctx, "default", tx.ID); err != nil || tx.Status != coreapi.TransactionBuyerApprovalPending || tx.PaymentMethod.ApprovalURL == nil {
		t.Fatalf("synced: %+v %v", tx, err)
	}
	u, _ := url.Parse(*tx.PaymentMethod.ApprovalURL)
	id := strings.TrimPrefix(u.Path, "/pay/")
	// The buyer approves at the page; the redirect back names the
	// transaction.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(m.URL()+"/pay/"+id, url.Values{"decision": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || back.Host != "shop.example" || back.Query().Get("transaction_id") != tx.ID || back.Query().Get("cart") != "7" {
		t.Fatalf("redirect back: %d %s", resp.StatusCode, back)
	}
	// Whether the notification or Sync comes first, the payment settles
	// once.
	if tx, err = s.Sync(ctx, "default", tx.ID); err != nil || tx.Status != coreapi.TransactionCaptureSucceeded || tx.CapturedAmount != 1200 {
		t.Fatalf("synced after the approval: %+v %v", tx, err)
	}
}

// redirectNotification is mock-redirect's notification id of type typ
// about the payment paymentID with reference ref and status, as
// HandleNotification receives it, signed with secret ("": unsigned).
func redirectNotification(id, typ, status, paymentID, ref, secret string) (http.Header, []byte) {
	body, _ := json.Marshal(mockredirect.Notification{ID: id, Type: typ, CreatedAt: time.Now(),
		Data: mockredirect.Payment{ID: paymentID, Reference: ref, Method: coreapi.MethodGCash, Status: status}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	h := http.Header{mockredirect.HeaderTimestamp: {ts}, mockredirect.HeaderNotificationID: {id}}
	if secret != "" {
		h.Set(mockredirect.HeaderSignature, mockredirect.Sign(secret, ts, body))
	}
	return h, body
}

// mock-redirect's notifications go through the one notification seam
// (connector.NotificationConnector, kind authorization.result): verified,
// matched by the reference, recorded once by their id and applied to the
// authorization through the state machine, as every connector's are.
// The steps run in order on one payment waiting for its buyer.
func TestRedirectNotificationThroughTheSeam(t *testing.T) {
	db := postgrestest.New(t)
	s, _ := redirectService(t, db)
	tx, err := s.PayRedirect(ctx, "default", gcash(1300, coreapi.IntentAuthorize))
	if err != nil || tx.Status != coreapi.TransactionBuyerApprovalPending {
		t.Fatalf("created: %+v %v", tx, err)
	}
	pay, builtIn := *tx.PaymentServiceTransactionID, connector.MockRedirectSandboxWebhookSecret
	for _, tc := range []struct {
		name                 string
		connector            string
		id, typ, status, ref string
		secret               string
		want                 transactions.NotificationOutcome
		err                  error
		unmatched, events    int64 // the counter's growth; notification events after the step
		statusAfter          coreapi.TransactionStatus
	}{
		{name: "unsigned", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID,
			err: coreapi.ErrNotificationSignature, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "another secret", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID, secret: "whsec_not_the_configured_one",
			err: coreapi.ErrNotificationSignature, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "a connector that takes no notifications", connector: "mock-nothing", id: "mrn_a", status: "approved", ref: tx.ID, secret: builtIn,
			err: coreapi.ErrNotificationConnector, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "a type that is not the status", connector: connector.MockRedirectName, id: "mrn_a", typ: "payment.declined", status: "approved", ref: tx.ID, secret: builtIn,
			err: coreapi.ErrNotificationMalformed, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "no such transaction", connector: connector.MockRedirectName, id: "mrn_u", status: "approved", ref: uuid.NewString(), secret: builtIn,
			want: transactions.NotificationUnmatched, unmatched: 1, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "a reference that is no transaction id", connector: connector.MockRedirectName, id: "mrn_u", status: "approved", ref: "order-7", secret: builtIn,
			want: transactions.NotificationUnmatched, unmatched: 1, statusAfter: coreapi.TransactionBuyerApprovalPending},
		{name: "approved", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID, secret: builtIn,
			want: transactions.NotificationApplied, events: 1, statusAfter: coreapi.TransactionAuthorizationSucceeded},
		{name: "the same again", connector: connector.MockRedirectName, id: "mrn_a", status: "approved", ref: tx.ID, secret: builtIn,
			want: transactions.NotificationDuplicate, events: 1, statusAfter: coreapi.TransactionAuthorizationSucceeded},
		{name: "a later decision", connector: connector.MockRedirectName, id: "mrn_d", status: "declined", ref: tx.ID, secret: builtIn,
			want: transactions.NotificationRecorded, events: 2, statusAfter: coreapi.TransactionAuthorizationSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := tc.typ
			if typ == "" {
				typ = "payment." + tc.status
			}
			h, body := redirectNotification(tc.id, typ, tc.status, pay, tc.ref, tc.secret)
			before := s.QR.Unmatched.Load()
			out, err := s.HandleNotification(ctx, tc.connector, "default", h, body, time.Now())
			if out != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("got %q, %v; want %q, %v", out, err, tc.want, tc.err)
			}
			if d := s.QR.Unmatched.Load() - before; d != tc.unmatched {
				t.Fatalf("unmatched counted %d, want %d", d, tc.unmatched)
			}
			got, err := s.Get(ctx, "default", tx.ID)
			if err != nil || got.Status != tc.statusAfter {
				t.Fatalf("after: %+v %v; want %s", got, err, tc.statusAfter)
			}
			if n := notificationEvents(t, s, tx.ID); int64(n) != tc.events {
				t.Fatalf("%d notification events, want %d", n, tc.events)
			}
		})
	}
	evs, err := s.Events(ctx, "default", tx.ID, allPage())
	if err != nil || evs[0].Name != coreapi.EventNotificationReceived || evs[0].Notification.ID != "mrn_d" ||
		evs[1].Name != "authorization-succeeded" || evs[1].Notification == nil || evs[1].Notification.ID != "mrn_a" ||
		evs[1].Notification.Connector != connector.MockRedirectName {
		t.Fatalf("events: %+v %v", evs[:2], err)
	}
}

// A redirect payment whose create has not recorded the connector's
// answer refuses a notification as early (409 on the wire): nothing is
// recorded, and the processor sends it again once the payment waits.
func TestRedirectNotificationEarly(t *testing.T) {
	db := postgrestest.New(t)
	s, _ := redirectService(t, db)
	tx := lostCreate(t, s, 800)
	h, body := redirectNotification("mrn_early", "payment.approved", "approved", "mrp_lost", tx.ID, connector.MockRedirectSandboxWebhookSecret)
	if out, err := s.HandleNotification(ctx, connector.MockRedirectName, "default", h, body, time.Now()); !errors.Is(err, coreapi.ErrNotificationEarly) {
		t.Fatalf("got %q, %v; want ErrNotificationEarly", out, err)
	}
	if n := notificationEvents(t, s, tx.ID); n != 0 {
		t.Fatalf("the early notification left %d events", n)
	}
}
