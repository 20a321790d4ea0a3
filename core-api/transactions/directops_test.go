package transactions_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/sandbox/mockdirect"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/shared/config"
)

// directService is the transactions service with the real mock-direct as
// its built-in direct connector.
func directService(t *testing.T, db *postgres.DB) (*transactions.Service, connector.MockDirect, string) {
	t.Helper()
	m, err := mockdirect.New(mockdirect.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	s, _, _ := routed(t, db, false)
	md := connector.MockDirect{BaseURL: m.URL()}
	s.Direct = transactions.Direct{BuiltIn: md, Sessions: postgres.TransactionsStore{DB: db},
		CompletionKey: []byte("0123456789abcdef0123456789abcdef"), PublicURL: "https://core.example"}
	return s, md, m.URL()
}

// directAuthorized is a direct payment of amount with intent, the buyer's
// approval completed.
func directAuthorized(t *testing.T, s *transactions.Service, base string, amount int64, intent string) *coreapi.Transaction {
	t.Helper()
	tx, err := s.PayDirect(ctx, "default", coreapi.NewTransaction{Intent: intent, Amount: amount, Currency: "USD",
		Method: ptr(coreapi.MethodPayPal), IntegrationClient: ptr("web")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/sandbox/orders/"+*tx.PaymentServiceTransactionID+"/approve", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %v %v", resp, err)
	}
	resp.Body.Close()
	u, err := url.Parse(s.CompletionURL("default", tx.ID, time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = s.CompleteDirect(ctx, tx.ID, u.Query().Get("token")); err != nil || tx.CapturableAmount()+tx.CapturedAmount != amount {
		t.Fatalf("complete: %+v %v", tx, err)
	}
	return tx
}

// Captures, voids and refunds of direct payments go through the state
// machine's reserve and settle to the real mock-direct: partial and
// multiple up to the authorized and captured amounts; what the state
// machine refuses is its typed error and changes nothing; what the wallet
// refuses is settled as declined, its amount freed.
func TestDirectOperations(t *testing.T) {
	db := postgrestest.New(t)
	s, md, base := directService(t, db)
	runOperations(t, db, s, func(amount int64, intent string) *coreapi.Transaction {
		return directAuthorized(t, s, base, amount, intent)
	})

	// The wallet's refusal (the authorization voided there) declines the
	// capture and frees its amount.
	t.Run("refused by the wallet", func(t *testing.T) {
		tx := directAuthorized(t, s, base, 800, coreapi.IntentAuthorize)
		if res, err := md.Void(ctx, connector.DirectOperation{OrderID: *tx.PaymentServiceTransactionID, Reference: "elsewhere"}); err != nil || res.Outcome != coreapi.OutcomeSucceeded {
			t.Fatalf("void at the wallet: %+v %v", res, err)
		}
		got, err := s.CaptureCard(ctx, "default", tx.ID, ptr(int64(100)))
		if err != nil || got.CapturedAmount != 0 || got.CapturePendingAmount != 0 || got.Status != coreapi.TransactionAuthorizationSucceeded {
			t.Fatalf("capture: %+v %v", got, err)
		}
		h := historyOf(t, s, "default", tx.ID)
		if last := h.events[len(h.events)-1]; last.Name != "capture-declined" {
			t.Fatalf("events: %+v", h.events)
		}
	})
}

// runOperations runs captures, voids and refunds of payments authorized
// (by authorized) through the service's reserve and settle, to whatever
// processor holds them: partial and multiple up to the authorized and
// captured amounts; what the state machine refuses is its typed error and
// changes nothing.
func runOperations(t *testing.T, db *postgres.DB, s *transactions.Service, authorized func(amount int64, intent string) *coreapi.Transaction) {
	t.Helper()
	type step struct {
		op       string // capture, void, refund
		amount   *int64
		code     string // the state machine's refusal, or ""
		captured int64
		refunded int64
		status   coreapi.TransactionStatus
	}
	for _, tc := range []struct {
		name   string
		intent string
		amount int64
		steps  []step
	}{
		{"partial captures and refunds", coreapi.IntentAuthorize, 1000, []step{
			{"capture", ptr(int64(400)), "", 400, 0, ""},
			{"capture", ptr(int64(601)), coreapi.CodeCaptureExceedsAuthorized, 400, 0, ""},
			{"void", nil, coreapi.CodeTransactionNotVoidable, 400, 0, ""},
			{"capture", nil, "", 1000, 0, coreapi.TransactionCaptureSucceeded},
			{"capture", nil, coreapi.CodeCaptureExceedsAuthorized, 1000, 0, ""},
			{"refund", ptr(int64(300)), "", 1000, 300, ""},
			{"refund", ptr(int64(701)), coreapi.CodeRefundExceedsCaptured, 1000, 300, ""},
			{"refund", nil, "", 1000, 1000, ""},
		}},
		{"void", coreapi.IntentAuthorize, 500, []step{
			{"void", nil, "", 0, 0, coreapi.TransactionAuthorizationVoided},
			{"capture", nil, coreapi.CodeTransactionNotCapturable, 0, 0, coreapi.TransactionAuthorizationVoided},
			{"refund", ptr(int64(1)), coreapi.CodeTransactionNotRefundable, 0, 0, ""},
		}},
		{"sale refunded", coreapi.IntentCapture, 500, []step{
			{"void", nil, coreapi.CodeTransactionNotVoidable, 500, 0, ""},
			{"refund", ptr(int64(200)), "", 500, 200, ""},
			{"refund", ptr(int64(300)), "", 500, 500, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := authorized(tc.amount, tc.intent)
			for i, st := range tc.steps {
				before := snap(t, db, s, tx.ID)
				var err error
				switch st.op {
				case "capture":
					_, err = s.CaptureCard(ctx, "default", tx.ID, st.amount)
				case "void":
					_, err = s.VoidCard(ctx, "default", tx.ID)
				case "refund":
					var r *coreapi.Refund
					if r, err = s.RefundCard(ctx, "default", tx.ID, coreapi.NewRefund{Amount: st.amount}); err == nil && r.Status != coreapi.OperationSucceeded {
						t.Fatalf("step %d: refund %+v", i, r)
					}
				}
				var te *coreapi.TransitionError
				switch {
				case st.code == "" && err != nil:
					t.Fatalf("step %d %s: %v", i, st.op, err)
				case st.code != "" && (!errors.As(err, &te) || te.Code != st.code):
					t.Fatalf("step %d %s: %v, want %s", i, st.op, err, st.code)
				case st.code != "" && !reflect.DeepEqual(snap(t, db, s, tx.ID), before):
					t.Fatalf("step %d %s: a refusal changed the transaction", i, st.op)
				}
				got, err := s.Get(ctx, "default", tx.ID)
				if err != nil || got.CapturedAmount != st.captured || got.RefundedAmount != st.refunded ||
					got.CapturePendingAmount != 0 || got.RefundPendingAmount != 0 || st.status != "" && got.Status != st.status {
					t.Fatalf("step %d %s: %+v (%v)", i, st.op, got, err)
				}
			}
		})
	}
}
