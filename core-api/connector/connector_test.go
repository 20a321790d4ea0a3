package connector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// receiver is a loopback HTTP server standing in for core-api's
// notification route: it keeps what mock-bank sends and answers 200.
type receiver struct {
	mu   sync.Mutex
	got  []http.Header
	body [][]byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got, rc.body = append(rc.got, r.Header.Clone()), append(rc.body, b)
	rc.mu.Unlock()
}

// wait returns the n-th notification received, waiting for it.
func (rc *receiver) wait(t *testing.T, n int) (http.Header, []byte) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rc.mu.Lock()
		if len(rc.got) > n {
			h, b := rc.got[n], rc.body[n]
			rc.mu.Unlock()
			return h, b
		}
		rc.mu.Unlock()
	}
	t.Fatalf("notification %d never arrived", n)
	return nil, nil
}

// startMockBank runs the real simulator on a free loopback port, and a
// receiver for its notifications.
func startMockBank(t *testing.T) (string, string, *receiver) {
	t.Helper()
	m, err := mockbank.New(mockbank.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"}, DebitDelay: time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	rc := &receiver{}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: time.Second}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m.URL(), "http://" + ln.Addr().String() + "/webhooks/mock-bank/default", rc
}

func TestRegistry(t *testing.T) {
	r := connector.NewRegistry(connector.MockBank{})
	if got := r.Names(); len(got) != 1 || got[0] != "mock-bank" {
		t.Fatalf("names = %v", got)
	}
	if _, err := r.Mandates("mock-card"); !errors.Is(err, connector.ErrUnknown) {
		t.Fatalf("unknown connector: %v", err)
	}
	for name, err := range map[string]error{"mandates": errOf(r.Mandates("mock-bank")), "debits": errOf(r.BankDebits("mock-bank")),
		"notifications": errOf(r.Notifications("mock-bank"))} {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

// Mandates and debits over HTTP: a mandate is pending until the bank
// activates it; revocation is idempotent; each notification verifies
// with the built-in secret and reads as its kind.
func TestMockBankMandatesAndDebits(t *testing.T) {
	base, notifyURL, rc := startMockBank(t)
	mb := connector.MockBank{BaseURL: base}
	ctx := context.Background()
	verify := func(n int) connector.Notification {
		t.Helper()
		h, b := rc.wait(t, n)
		got, err := mb.VerifyNotification(connector.Config{}, h, b, time.Now())
		if err != nil {
			t.Fatalf("notification %d: %v (%s)", n, err, b)
		}
		return got
	}
	for _, scheme := range []string{"ach", "sepa", "bacs"} {
		m, err := mb.CreateMandate(ctx, connector.MandateRequest{PaymentMethodID: "pm-" + scheme, Scheme: scheme, AccountHolderName: "Jane", NotificationURL: notifyURL})
		if err != nil || m.Status != coreapi.MandatePending || !strings.HasPrefix(m.ID, "mbm_") {
			t.Fatalf("%s: %+v %v", scheme, m, err)
		}
		again, err := mb.CreateMandate(ctx, connector.MandateRequest{PaymentMethodID: "pm-" + scheme, Scheme: scheme, AccountHolderName: "Jane", NotificationURL: notifyURL})
		if err != nil || again.ID != m.ID {
			t.Fatalf("the same reference made another mandate: %+v %v", again, err)
		}
		for range 2 { // idempotent
			rv, err := mb.RevokeMandate(ctx, "default", m.ID, connector.Config{})
			if err != nil || rv.Status != "revoked" || rv.ID != m.ID {
				t.Fatalf("revoke: %+v %v", rv, err)
			}
		}
	}
	if _, err := mb.CreateMandate(ctx, connector.MandateRequest{PaymentMethodID: "x", Scheme: "swift", NotificationURL: notifyURL}); err == nil {
		t.Fatal("unsupported scheme accepted")
	}
	if m, _ := mb.CreateMandate(ctx, connector.MandateRequest{PaymentMethodID: "declined", Scheme: "ach", AccountHolderName: connector.DeclinedHolderName, NotificationURL: notifyURL}); m.Status != "failed" {
		t.Fatalf("declined: %+v", m)
	}
	if _, err := mb.RevokeMandate(ctx, "default", "mbm_unknown", connector.Config{}); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("unknown mandate: %v", err)
	}

	// A mandate activated by the bank, then charged.
	m, _ := mb.CreateMandate(ctx, connector.MandateRequest{PaymentMethodID: "pm-active", Scheme: "sepa", AccountHolderName: "Jane", NotificationURL: notifyURL})
	debit := connector.BankDebit{Reference: "tx-1", PaymentMethodID: "pm-active", Scheme: "sepa", Amount: 1000, Currency: "EUR", MandateID: m.ID, NotificationURL: notifyURL}
	if res, err := mb.Debit(ctx, debit); err != nil || res.Outcome != coreapi.OutcomeDeclined || res.ErrorCode != "mandate_not_active" {
		t.Fatalf("a charge under a pending mandate: %+v %v", res, err)
	}
	resp, err := http.Post(base+"/sandbox/mandates/"+m.ID+"/activate", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("activate: %v %v", resp, err)
	}
	resp.Body.Close()
	if n := verify(0); n.Kind != connector.KindMandateActivated || n.ProcessorID != m.ID || n.Reference != "pm-active" {
		t.Fatalf("activation: %+v", n)
	}
	if n := verify(1); n.Kind != connector.KindRecurringTokenCreated || n.ProcessorID != m.ID {
		t.Fatalf("token: %+v", n)
	}
	res, err := mb.Debit(ctx, debit)
	if err != nil || res.Outcome != coreapi.OutcomeCapturePending || !strings.HasPrefix(res.Reference, "mbd_") {
		t.Fatalf("charge: %+v %v", res, err)
	}
	if n := verify(2); n.Kind != connector.KindRecurringChargeResult || n.Reference != "tx-1" || n.ProcessorID != res.Reference ||
		n.Result.Outcome != coreapi.OutcomeSucceeded {
		t.Fatalf("charge result: %+v", n)
	}
	// A one-off debit the bank returns.
	res, err = mb.Debit(ctx, connector.BankDebit{Reference: "tx-2", PaymentMethodID: "pm-x", Scheme: "ach", Amount: 1051, Currency: "USD", NotificationURL: notifyURL})
	if err != nil || res.Outcome != coreapi.OutcomeCapturePending {
		t.Fatalf("debit: %+v %v", res, err)
	}
	if n := verify(3); n.Kind != connector.KindDebitResult || n.Result.Outcome != coreapi.OutcomeFailed || n.Result.ErrorCode != "insufficient_funds" {
		t.Fatalf("debit result: %+v", n)
	}
	if res, err := mb.Debit(ctx, connector.BankDebit{Reference: "tx-3", PaymentMethodID: "pm-x", Scheme: "ach", Amount: 1000, Currency: "EUR", NotificationURL: notifyURL}); err != nil || res.Outcome != coreapi.OutcomeDeclined {
		t.Fatalf("a currency the scheme does not settle in: %+v %v", res, err)
	}
	// The debits looked up by reference, as a sync does.
	if got, err := mb.LookupDebit(ctx, connector.DebitLookup{Reference: "tx-2"}); err != nil || got.Outcome != coreapi.OutcomeFailed ||
		got.ErrorCode != "insufficient_funds" || got.Reference != res.Reference {
		t.Fatalf("lookup of the returned debit: %+v %v", got, err)
	}
	if got, err := mb.LookupDebit(ctx, connector.DebitLookup{Reference: "tx-1"}); err != nil || got.Outcome != coreapi.OutcomeSucceeded {
		t.Fatalf("lookup of the charge: %+v %v", got, err)
	}
	if _, err := mb.LookupDebit(ctx, connector.DebitLookup{Reference: "tx-none"}); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("lookup of a debit never sent: %v", err)
	}
}
