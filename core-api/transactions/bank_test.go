package transactions_test

import (
	"context"
	"encoding/json"
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
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/sandbox/mockbank"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// bankRig is the transactions service wired to the real mock-bank
// simulator, whose notifications reach the service over loopback HTTP
// through a receiver that answers as core-api's route does (409 for an
// early one, so mock-bank sends it again).
type bankRig struct {
	s    *transactions.Service
	db   *postgres.DB
	sim  *mockbank.Main
	bank connector.MockBank

	mu      sync.Mutex
	last    map[connector.NotificationKind]received // the last notification of each kind handled
	answers []int                                   // the receiver's answers, in order
}

type received struct {
	h    http.Header
	body []byte
}

func newBankRig(t *testing.T) *bankRig { return newBankRigSettlingAfter(t, 0) }

// newBankRigSettlingAfter is a rig whose mock-bank leaves a debit pending
// for delay.
func newBankRigSettlingAfter(t *testing.T, delay time.Duration) *bankRig {
	t.Helper()
	db := postgrestest.New(t)
	sim, err := mockbank.New(mockbank.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0", RetryDelay: 20 * time.Millisecond}, DebitDelay: delay},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	r := &bankRig{s: service(db), db: db, sim: sim, bank: connector.MockBank{BaseURL: sim.URL()}, last: map[connector.NotificationKind]received{}}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.receive), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.s.Connectors, r.s.PaymentServices = connector.NewRegistry(r.bank), noPaymentServices{}
	r.s.QR = &transactions.QR{NotificationBaseURL: "http://" + ln.Addr().String()}
	r.s.Bank = &transactions.Bank{BuiltIn: r.bank, Mandates: db}
	return r
}

func (r *bankRig) receive(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	_, err := r.s.HandleNotification(req.Context(), connector.MockBankName, "default", req.Header, body, time.Now())
	status := http.StatusOK
	switch {
	case errors.Is(err, coreapi.ErrNotificationEarly):
		status = http.StatusConflict
	case err != nil:
		status = http.StatusInternalServerError
	}
	r.mu.Lock()
	r.answers = append(r.answers, status)
	r.mu.Unlock()
	if status != http.StatusOK {
		w.WriteHeader(status)
		return
	}
	if sub, err := r.bank.ParseNotification(body); err == nil {
		r.mu.Lock()
		r.last[sub.Kind] = received{req.Header.Clone(), body}
		r.mu.Unlock()
	}
}

// account stores a bank account of scheme, with a mandate set up at
// mock-bank when recurring.
func (r *bankRig) account(t *testing.T, scheme, currency string, recurring bool) *coreapi.PaymentMethod {
	t.Helper()
	pm := &coreapi.PaymentMethod{Method: coreapi.MethodBank, Scheme: scheme, Label: "1234", Country: "DE", Currency: currency,
		Bank: &coreapi.BankDetails{AccountHolderName: "Erika"}}
	postgrestest.StorePaymentMethod(t, r.db, pm)
	if recurring {
		if err := r.db.DeletePaymentMethod(ctx, "default", pm.ID); err != nil {
			t.Fatal(err)
		}
		res, err := r.bank.CreateMandate(ctx, connector.MandateRequest{PaymentMethodID: pm.ID, Scheme: scheme, AccountHolderName: "Erika",
			NotificationURL: r.s.QR.NotificationBaseURL + "/webhooks/mock-bank/default"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.db.CreatePaymentMethod(ctx, pm, &coreapi.Mandate{ID: res.ID, Connector: connector.MockBankName, Status: res.Status}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.db.PaymentMethod(ctx, "default", pm.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// settled waits for transaction id to leave capture_pending.
func (r *bankRig) settled(t *testing.T, id string) *coreapi.Transaction {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tx, err := r.s.Get(ctx, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		if tx.Status != coreapi.TransactionCapturePending && tx.Status != coreapi.TransactionProcessing {
			return tx
		}
	}
	t.Fatalf("transaction %s never settled", id)
	return nil
}

func (r *bankRig) sandbox(t *testing.T, path string) {
	t.Helper()
	resp, err := http.Post(r.sim.URL()+path, "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %v %v", path, resp, err)
	}
	resp.Body.Close()
}

func (r *bankRig) replay(t *testing.T, kind connector.NotificationKind) (transactions.NotificationOutcome, error) {
	t.Helper()
	r.mu.Lock()
	n, ok := r.last[kind]
	r.mu.Unlock()
	if !ok {
		t.Fatalf("no %s notification received", kind)
	}
	return r.s.HandleNotification(ctx, connector.MockBankName, "default", n.h, n.body, time.Now())
}

func bankDebit(pm *coreapi.PaymentMethod, amount int64, mit bool) coreapi.NewTransaction {
	return coreapi.NewTransaction{Amount: amount, Currency: pm.Currency, PaymentMethodID: &pm.ID,
		TransactionDetails: coreapi.TransactionDetails{MerchantInitiated: mit}}
}

// A debit is a sale left capture_pending; mock-bank settles it at once,
// so its notification races the creation (refused as early, sent again)
// and then captures it, or, returned unpaid, fails the sale: nothing
// stays authorized. Sent again, a result changes nothing.
func TestBankDebitSettledByNotification(t *testing.T) {
	r := newBankRig(t)
	pm := r.account(t, "sepa", "EUR", false)
	for _, tc := range []struct {
		amount     int64
		status     coreapi.TransactionStatus
		event      coreapi.TransactionOperation
		captured   int64
		authorized int64
		code       string
	}{
		{1500, coreapi.TransactionCaptureSucceeded, coreapi.OpCaptureSucceeded, 1500, 1500, ""},
		{1051, coreapi.TransactionAuthorizationFailed, coreapi.OpSaleFailed, 0, 0, mockbank.FailureInsufficientFunds},
	} {
		tx, err := r.s.PayByCard(ctx, "default", bankDebit(pm, tc.amount, false))
		if err != nil || tx.Intent != coreapi.IntentCapture || tx.PaymentMethod.Method != coreapi.MethodBank {
			t.Fatalf("%d: %+v %v", tc.amount, tx, err)
		}
		done := r.settled(t, tx.ID)
		if done.Status != tc.status || done.CapturedAmount != tc.captured || done.AuthorizedAmount != tc.authorized ||
			done.CapturePendingAmount != 0 || deref(done.ErrorCode) != tc.code {
			t.Fatalf("%d settled: %+v", tc.amount, done)
		}
		evs, err := r.s.Events(ctx, "default", tx.ID, allPage())
		if err != nil || evs[0].Name != string(tc.event) || evs[0].Notification == nil {
			t.Fatalf("%d: latest event %+v %v", tc.amount, evs[0], err)
		}
		if out, err := r.replay(t, connector.KindDebitResult); err != nil || out != transactions.NotificationDuplicate {
			t.Fatalf("%d: the result again: %v %v", tc.amount, out, err)
		}
	}
	if _, err := r.s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "GBP", PaymentMethodID: &pm.ID}); !isInvalid(err, "/currency") {
		t.Fatalf("another currency: %v", err)
	}
}

// A mandate changes only by mock-bank's notifications, each recorded
// once; merchant-initiated charges are refused with its code, nothing
// stored or sent, until it is active with its recurring token and once
// it is revoked.
func TestBankMandateNotifications(t *testing.T) {
	r := newBankRig(t)
	pm := r.account(t, "ach", "USD", true)
	mid := pm.Mandate.ID
	// refused checks the refusal, and that the only transactions and
	// debits are the charges made (stored, sent to mock-bank).
	refused := func(t *testing.T, code string, made int) {
		t.Helper()
		_, err := r.s.PayByCard(ctx, "default", bankDebit(pm, 700, true))
		var me *coreapi.MandateError
		if !errors.As(err, &me) || me.Code != code {
			t.Fatalf("merchant-initiated charge: %v, want %s", err, code)
		}
		txs, err := r.s.List(ctx, "default", coreapi.TransactionFilter{PaymentMethodID: pm.ID}, allPage())
		if err != nil || len(txs) != made {
			t.Fatalf("%d transactions, want %d: %v", len(txs), made, err)
		}
		resp, err := http.DefaultClient.Do(mustRequest(t, r.sim.URL()+"/v1/debits?mandate_id="+mid))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var debits struct{ Items []any }
		if err := json.NewDecoder(resp.Body).Decode(&debits); err != nil || len(debits.Items) != made {
			t.Fatalf("%d debits at mock-bank, want %d: %v", len(debits.Items), made, err)
		}
	}
	mandate := func() *coreapi.Mandate {
		m, err := r.db.Mandate(ctx, "default", mid)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := mandate(); m.Status != coreapi.MandatePending || m.RecurringTokenAt != nil {
		t.Fatalf("new mandate %+v", m)
	}
	refused(t, coreapi.CodeMandateNotReady, 0)

	r.sandbox(t, "/sandbox/mandates/"+mid+"/activate")
	if m := mandate(); m.Status != coreapi.MandateActive || m.RecurringTokenAt == nil {
		t.Fatalf("activated %+v", m)
	}
	for _, kind := range []connector.NotificationKind{connector.KindMandateActivated, connector.KindRecurringTokenCreated} {
		if out, err := r.replay(t, kind); err != nil || out != transactions.NotificationDuplicate {
			t.Fatalf("%s again: %v %v", kind, out, err)
		}
	}
	pm, _ = r.db.PaymentMethod(ctx, "default", pm.ID)
	tx, err := r.s.PayByCard(ctx, "default", bankDebit(pm, 700, true))
	if err != nil {
		t.Fatal(err)
	}
	if done := r.settled(t, tx.ID); done.Status != coreapi.TransactionCaptureSucceeded || !done.MerchantInitiated {
		t.Fatalf("charge %+v", done)
	}

	r.sandbox(t, "/sandbox/mandates/"+mid+"/revoke")
	if m := mandate(); m.Status != coreapi.MandateRevoked || m.RevokedAt == nil {
		t.Fatalf("revoked %+v", m)
	}
	pm, _ = r.db.PaymentMethod(ctx, "default", pm.ID)
	refused(t, coreapi.CodeMandateRevoked, 1)
	evs, err := r.db.ListMandateEvents(ctx, "default", mid, allPage())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	want := []string{coreapi.MandateEventRevoked, coreapi.MandateEventRecurringToken, coreapi.MandateEventActivated, coreapi.MandateEventCreated}
	if len(names) != len(want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("events %v, want %v", names, want)
		}
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+connector.MockBankSandboxAPIKey)
	return req
}

// isInvalid reports whether err is a validation error at pointer.
func isInvalid(err error, pointer string) bool {
	var v *coreapi.ValidationError
	if !errors.As(err, &v) {
		return false
	}
	for _, p := range v.Problems {
		if p.Pointer == pointer {
			return true
		}
	}
	return false
}

// racingDebits is mock-bank's connector that returns only once the
// debit's result has reached the service, which it did while the
// creation had not yet recorded the connector's answer.
type racingDebits struct {
	connector.MockBank
	r *bankRig
}

func (b *racingDebits) Debit(c context.Context, d connector.BankDebit) (coreapi.ConnectorResult, error) {
	res, err := b.MockBank.Debit(c, d)
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b.r.mu.Lock()
		n := len(b.r.answers)
		b.r.mu.Unlock()
		if n > 0 {
			break
		}
	}
	return res, err
}

// A debit's result that arrives before the creation recorded the
// connector's answer is refused as early (409) and recorded nowhere;
// mock-bank sends it again and it then captures the payment, once.
func TestBankDebitNotificationRacingTheCreation(t *testing.T) {
	r := newBankRig(t)
	pm := r.account(t, "bacs", "GBP", false)
	r.s.Bank.BuiltIn = &racingDebits{MockBank: r.bank, r: r}
	tx, err := r.s.PayByCard(ctx, "default", bankDebit(pm, 2500, false))
	if err != nil {
		t.Fatal(err)
	}
	done := r.settled(t, tx.ID)
	if done.Status != coreapi.TransactionCaptureSucceeded || done.CapturedAmount != 2500 {
		t.Fatalf("settled %+v", done)
	}
	// The receiver records its answer after the service applied the
	// notification, so the 200 may trail the settled status a moment.
	var answers []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		answers = append([]int(nil), r.answers...)
		r.mu.Unlock()
		if len(answers) > 0 && answers[len(answers)-1] == http.StatusOK || time.Now().After(deadline) {
			break
		}
	}
	if len(answers) < 2 || answers[0] != http.StatusConflict || answers[len(answers)-1] != http.StatusOK {
		t.Fatalf("answers to mock-bank %v, want 409 then 200", answers)
	}
	if n := notificationEvents(t, r.s, tx.ID); n != 1 {
		t.Fatalf("%d notification events, want 1", n)
	}
}

// A payment whose creation stopped before the connector's answer was
// recorded is resumed by sending the same reference again: mock-bank
// answers the same debit, whose result then settles it.
func TestBankDebitResumed(t *testing.T) {
	r := newBankRig(t)
	pm := r.account(t, "sepa", "EUR", false)
	n := bankDebit(pm, 800, false)
	n.Method, n.Intent = ptr(coreapi.MethodBank), coreapi.IntentCapture
	tx, err := r.s.Create(ctx, "default", n) // as a run that died before calling the connector
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := r.s.Resume(ctx, "default", tx.ID)
		if err != nil || got.Status == coreapi.TransactionProcessing {
			t.Fatalf("resumed: %+v %v", got, err)
		}
	}
	if done := r.settled(t, tx.ID); done.Status != coreapi.TransactionCaptureSucceeded || done.CapturedAmount != 800 {
		t.Fatalf("settled %+v", done)
	}
	resp, err := http.DefaultClient.Do(mustRequest(t, r.sim.URL()+"/v1/debits?reference="+tx.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var debits struct{ Items []any }
	if err := json.NewDecoder(resp.Body).Decode(&debits); err != nil || len(debits.Items) != 1 {
		t.Fatalf("%d debits: %v", len(debits.Items), err)
	}
}

// A customer-initiated debit of an account without a mandate sets one up
// at mock-bank first, pending, when the account is stored or the payment
// stores it; a single payment gets none, a merchant-initiated charge sets
// none up, and a mandate the bank declines refuses the payment with
// nothing stored. A later debit keeps the mandate.
func TestBankFirstDebitSetsUpMandate(t *testing.T) {
	r := newBankRig(t)
	for _, tc := range []struct {
		name          string
		single, store bool
		mit           bool
		holder        string
		mandate       bool   // a mandate is set up
		code          string // the MandateError refusing the payment
	}{
		{name: "stored", mandate: true},
		{name: "a single payment", single: true},
		{name: "a single payment that stores it", single: true, store: true, mandate: true},
		{name: "merchant-initiated", mit: true, code: coreapi.CodeMandateRequired},
		{name: "declined by the bank", holder: mockbank.DeclinedHolder, code: coreapi.CodeMandateDeclined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder := tc.holder
			if holder == "" {
				holder = "Erika"
			}
			pm := &coreapi.PaymentMethod{Method: coreapi.MethodBank, Scheme: "sepa", Label: "1234", Country: "DE", Currency: "EUR",
				Bank: &coreapi.BankDetails{AccountHolderName: holder}, SinglePayment: tc.single}
			postgrestest.StorePaymentMethod(t, r.db, pm)
			n := bankDebit(pm, 1500, tc.mit)
			n.Store = tc.store
			tx, err := r.s.PayByCard(ctx, "default", n)
			var me *coreapi.MandateError
			if tc.code != "" {
				if !errors.As(err, &me) || me.Code != tc.code || tx != nil {
					t.Fatalf("payment: %+v %v, want %s", tx, err, tc.code)
				}
				if list, err := r.db.ListTransactions(ctx, "default", coreapi.TransactionFilter{PaymentMethodID: pm.ID}, allPage()); err != nil || len(list) != 0 {
					t.Fatalf("a refused payment was stored: %v %v", list, err)
				}
			} else if err != nil || tx.Status != coreapi.TransactionCapturePending && tx.Status != coreapi.TransactionCaptureSucceeded {
				t.Fatalf("payment: %+v %v", tx, err)
			}
			got, err := r.db.PaymentMethod(ctx, "default", pm.ID)
			if err != nil || (got.Mandate != nil) != tc.mandate {
				t.Fatalf("mandate %+v %v, want one: %v", got.Mandate, err, tc.mandate)
			}
			if !tc.mandate {
				return
			}
			m := got.Mandate
			if m.Status != coreapi.MandatePending || m.Connector != connector.MockBankName || m.PaymentMethodID != pm.ID {
				t.Fatalf("mandate %+v", m)
			}
			evs, err := r.db.ListMandateEvents(ctx, "default", m.ID, allPage())
			if err != nil || len(evs) != 1 || evs[0].Name != coreapi.MandateEventCreated {
				t.Fatalf("mandate events %+v %v", evs, err)
			}
			if !tc.single || tc.store {
				// A later debit keeps the mandate it set up.
				if _, err := r.s.PayByCard(ctx, "default", bankDebit(pm, 700, false)); err != nil && !tc.single {
					t.Fatal(err)
				}
				again, err := r.db.PaymentMethod(ctx, "default", pm.ID)
				if err != nil || again.Mandate == nil || again.Mandate.ID != m.ID {
					t.Fatalf("the mandate after a later debit: %+v %v", again.Mandate, err)
				}
			}
		})
	}
}

// A debit whose answer and notification were both lost is settled by
// Sync from mock-bank's record of it, looked up by the transaction's id:
// capture_pending while the bank has not settled it, then captured or
// failed as the notification would have made it, with no notification
// recorded and nothing sent again. A debit mock-bank never received is
// left processing while young, then failed (not_received_by_processor).
func TestBankDebitSynced(t *testing.T) {
	r := newBankRigSettlingAfter(t, 300*time.Millisecond)
	pm := r.account(t, "sepa", "EUR", false)
	lost := func(t *testing.T, amount int64) *coreapi.Transaction {
		t.Helper()
		n := bankDebit(pm, amount, false)
		bank := coreapi.MethodBank
		n.Intent, n.Method = coreapi.IntentCapture, &bank
		tx, err := r.s.Create(ctx, "default", n)
		if err != nil {
			t.Fatal(err)
		}
		// Sent, but neither the answer nor the notification arrives.
		if _, err := r.bank.Debit(ctx, connector.BankDebit{Reference: tx.ID, PaymentMethodID: pm.ID, Scheme: "sepa", Amount: amount,
			Currency: "EUR", NotificationURL: "http://127.0.0.1:9/lost"}); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	for _, tc := range []struct {
		amount int64
		status coreapi.TransactionStatus
		event  coreapi.TransactionOperation
		code   string
	}{
		{1500, coreapi.TransactionCaptureSucceeded, coreapi.OpCaptureSucceeded, ""},
		{1051, coreapi.TransactionAuthorizationFailed, coreapi.OpSaleFailed, mockbank.FailureInsufficientFunds},
	} {
		tx := lost(t, tc.amount)
		got, err := r.s.Sync(ctx, "default", tx.ID)
		if err != nil || got.Status != coreapi.TransactionCapturePending || got.CapturePendingAmount != tc.amount ||
			!strings.HasPrefix(deref(got.PaymentServiceTransactionID), "mbd_") {
			t.Fatalf("%d: synced while pending at the bank: %+v %v", tc.amount, got, err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			res, err := r.bank.LookupDebit(ctx, connector.DebitLookup{Reference: tx.ID})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != coreapi.OutcomeCapturePending {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("mock-bank never settled the debit")
			}
		}
		for range 2 { // the second changes nothing
			got, err = r.s.Sync(ctx, "default", tx.ID)
			if err != nil || got.Status != tc.status || deref(got.ErrorCode) != tc.code || got.CapturePendingAmount != 0 {
				t.Fatalf("%d: synced once settled: %+v %v", tc.amount, got, err)
			}
		}
		evs, err := r.s.Events(ctx, "default", tx.ID, allPage())
		if err != nil || evs[0].Name != string(tc.event) || evs[0].Notification != nil || evs[1].Name != string(coreapi.OpSalePending) {
			t.Fatalf("%d: events %+v %v", tc.amount, evs, err)
		}
		if n := r.debitsOf(t, tx.ID); n != 1 {
			t.Fatalf("%d: %d debits at mock-bank", tc.amount, n)
		}
	}

	bank := coreapi.MethodBank
	n := bankDebit(pm, 700, false)
	n.Intent, n.Method = coreapi.IntentCapture, &bank
	never, err := r.s.Create(ctx, "default", n)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.s.Sync(ctx, "default", never.ID); err != nil || got.Status != coreapi.TransactionProcessing {
		t.Fatalf("a young debit mock-bank never received: %+v %v", got, err)
	}
	r.s.SyncMinAge = time.Nanosecond
	if got, err := r.s.Sync(ctx, "default", never.ID); err != nil || got.Status != coreapi.TransactionAuthorizationFailed ||
		deref(got.ErrorCode) != transactions.ErrorCodeNotReceived {
		t.Fatalf("an old debit mock-bank never received: %+v %v", got, err)
	}
}

// debitsOf counts the debits mock-bank holds with reference ref.
func (r *bankRig) debitsOf(t *testing.T, ref string) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(mustRequest(t, r.sim.URL()+"/v1/debits?reference="+ref))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/debits: %d %v", resp.StatusCode, err)
	}
	return len(list.Items)
}
