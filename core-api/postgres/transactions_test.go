package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/pagination"
)

// newTransaction stores a transaction of amount in merchant m; mod
// changes it first.
func newTransaction(t *testing.T, db *postgres.DB, m string, amount int64, mod func(*coreapi.Transaction)) *coreapi.Transaction {
	t.Helper()
	tx := &coreapi.Transaction{MerchantAccountID: m, TransactionState: coreapi.TransactionState{Amount: amount},
		Intent: coreapi.IntentAuthorize, Currency: "EUR", TransactionDetails: coreapi.TransactionDetails{PaymentSource: coreapi.PaymentSourceECommerce},
		PaymentMethod: coreapi.TransactionPaymentMethod{Method: "gcash"}}
	if mod != nil {
		mod(tx)
	}
	if err := db.CreateTransaction(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	return tx
}

// step applies op to transaction id as the transactions service does: the
// state machine on the locked row, its writes in the same transaction.
func step(t *testing.T, db *postgres.DB, m, id string, op coreapi.TransactionOperation) *coreapi.Transaction {
	t.Helper()
	var out *coreapi.Transaction
	err := db.InTx(context.Background(), func(tx *postgres.Tx) error {
		tr, now, err := tx.LockTransaction(context.Background(), m, id)
		if err != nil {
			return err
		}
		next, ev, err := tr.Advance(coreapi.Step{Operation: op}, now)
		if err != nil {
			return err
		}
		out = next
		return tx.RecordTransition(context.Background(), coreapi.Transition{Transaction: next, Event: ev})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func createMerchant(t *testing.T, db *postgres.DB, id string) {
	t.Helper()
	if err := db.InTx(context.Background(), func(tx *postgres.Tx) error {
		_, err := tx.CreateMerchantAccount(context.Background(), coreapi.NewMerchantAccount{ID: &id, DisplayName: &id})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// walk lists transactions matching f, limit at a time, following the
// next cursors to the end, and returns their amounts in list order.
func walk(t *testing.T, db *postgres.DB, m string, f coreapi.TransactionFilter, limit string) []int64 {
	t.Helper()
	codec := pagination.RandomCodec("core-api")
	bind := pagination.Binding(m)
	q := url.Values{"limit": {limit}}
	var got []int64
	for range 100 {
		page, err := codec.ParseRequest(q, "transactions", bind)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.ListTransactions(context.Background(), m, f, page)
		if err != nil {
			t.Fatal(err)
		}
		env := pagination.Build(page, rows, func(tx coreapi.Transaction) pagination.Key {
			return pagination.Key{Time: tx.CreatedAt, ID: tx.ID}
		})
		for _, tx := range env.Items {
			if tx.MerchantAccountID != m {
				t.Fatalf("listed another account's transaction: %+v", tx)
			}
			got = append(got, tx.Amount)
		}
		if env.NextCursor == nil {
			return got
		}
		q.Set("cursor", *env.NextCursor)
	}
	t.Fatal("the walk does not end")
	return nil
}

// The list is newest first, by pages that follow one another without gap
// or repetition, in one merchant account, and each filter narrows it.
func TestListTransactions(t *testing.T) {
	db := postgrestest.New(t)
	createMerchant(t, db, "other")
	ctx := context.Background()
	buyer := newBuyer(t, db, "list-buyer")
	pm := newGiftCard(t, db, buyer)
	serviceID := "5a1b0c2d-0000-4000-8000-000000000001"

	var stored []*coreapi.Transaction
	for i, mod := range []func(*coreapi.Transaction){
		nil,
		func(tx *coreapi.Transaction) { tx.BuyerID = &buyer },
		func(tx *coreapi.Transaction) { tx.PaymentMethod.ID = &pm; tx.BuyerID = &buyer },
		func(tx *coreapi.Transaction) { tx.ExternalIdentifier = ptr("order-7") },
		func(tx *coreapi.Transaction) { tx.PaymentServiceID = &serviceID },
		nil,
		nil,
	} {
		stored = append(stored, newTransaction(t, db, "default", int64(100*(i+1)), mod))
	}
	newTransaction(t, db, "other", 50, func(tx *coreapi.Transaction) { tx.BuyerID = &buyer })
	step(t, db, "default", stored[1].ID, coreapi.OpAuthorizationSucceeded)
	step(t, db, "default", stored[5].ID, coreapi.OpAuthorizationDeclined)
	from, to := stored[2].CreatedAt, stored[4].CreatedAt

	for _, tc := range []struct {
		name string
		f    coreapi.TransactionFilter
		want []int64
	}{
		{"all", coreapi.TransactionFilter{}, []int64{700, 600, 500, 400, 300, 200, 100}},
		{"status", coreapi.TransactionFilter{Statuses: []coreapi.TransactionStatus{coreapi.TransactionAuthorizationSucceeded, coreapi.TransactionAuthorizationDeclined}}, []int64{600, 200}},
		{"created-range", coreapi.TransactionFilter{CreatedAtGTE: &from, CreatedAtLTE: &to}, []int64{500, 400, 300}},
		{"amount-range", coreapi.TransactionFilter{AmountGTE: ptr(int64(250)), AmountLTE: ptr(int64(500))}, []int64{500, 400, 300}},
		{"buyer", coreapi.TransactionFilter{BuyerID: buyer}, []int64{300, 200}},
		{"external-identifier", coreapi.TransactionFilter{ExternalIdentifier: "order-7"}, []int64{400}},
		{"payment-method", coreapi.TransactionFilter{PaymentMethodID: pm}, []int64{300}},
		{"payment-service", coreapi.TransactionFilter{PaymentServiceID: serviceID}, []int64{500}},
		{"together", coreapi.TransactionFilter{BuyerID: buyer, AmountGTE: ptr(int64(250))}, []int64{300}},
		{"buyer-not-a-uuid", coreapi.TransactionFilter{BuyerID: "nope"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []string{"2", "100"} {
				if got := walk(t, db, "default", tc.f, limit); !slices.Equal(got, tc.want) {
					t.Fatalf("limit %s: %v; want %v", limit, got, tc.want)
				}
			}
		})
	}
	if got := walk(t, db, "other", coreapi.TransactionFilter{}, "2"); !slices.Equal(got, []int64{50}) {
		t.Fatalf("the other account lists %v", got)
	}
	if _, err := db.Transaction(ctx, "other", stored[0].ID); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("another account's transaction: %v", err)
	}
}

// A transaction's events are listed newest first, by pages, in the order
// they happened; another account's are not.
func TestListTransactionEvents(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	tx := newTransaction(t, db, "default", 1000, nil)
	step(t, db, "default", tx.ID, coreapi.OpAuthorizationSucceeded)
	step(t, db, "default", tx.ID, coreapi.OpVoidRequested)
	step(t, db, "default", tx.ID, coreapi.OpVoidSucceeded)

	var names []string
	page := pagination.Page{Limit: 1}
	for {
		evs, err := db.ListTransactionEvents(ctx, "default", tx.ID, page)
		if err != nil {
			t.Fatal(err)
		}
		env := pagination.Build(page, evs, func(e coreapi.TransactionEvent) pagination.Key { return pagination.Key{Time: e.CreatedAt, ID: e.ID} })
		for _, e := range env.Items {
			names = append(names, e.Name+":"+string(e.StatusBefore)+">"+string(e.StatusAfter))
		}
		if len(evs) <= page.Limit {
			break
		}
		last := env.Items[len(env.Items)-1]
		page.Boundary = &pagination.Key{Time: last.CreatedAt, ID: last.ID}
	}
	want := []string{"void-succeeded:authorization_void_pending>authorization_voided", "void-requested:authorization_succeeded>authorization_void_pending",
		"authorization-succeeded:processing>authorization_succeeded", "transaction-created:>processing"}
	if !slices.Equal(names, want) {
		t.Fatalf("events %v; want %v", names, want)
	}
	if evs, err := db.ListTransactionEvents(ctx, "other", tx.ID, pagination.Page{Limit: 10}); err != nil || len(evs) != 0 {
		t.Fatalf("another account lists %d events, %v", len(evs), err)
	}
}

// The database itself refuses amounts the state machine never makes: a
// write that skipped it cannot refund more than was captured.
func TestTransactionAmountsChecked(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	tx := newTransaction(t, db, "default", 1000, nil)
	err := db.InTx(ctx, func(ptx *postgres.Tx) error {
		locked, now, err := ptx.LockTransaction(ctx, "default", tx.ID)
		if err != nil {
			return err
		}
		next := *locked
		next.Status, next.AuthorizedAmount, next.CapturedAmount, next.RefundedAmount = coreapi.TransactionCaptureSucceeded, 1000, 500, 501
		return ptx.RecordTransition(ctx, coreapi.Transition{Transaction: &next, Event: &coreapi.TransactionEvent{
			MerchantAccountID: "default", TransactionID: tx.ID, Name: "refund-succeeded", StatusAfter: next.Status, CreatedAt: now}})
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.ConstraintName != "transactions_amounts" {
		t.Fatalf("refunded above captured: %v; want the transactions_amounts check", err)
	}
	got, err := db.Transaction(ctx, "default", tx.ID)
	if err != nil || got.Status != coreapi.TransactionProcessing || got.RefundedAmount != 0 {
		t.Fatalf("after the refused write: %+v, %v", got, err)
	}
}

// Transactions keep their merchant account: it cannot be deleted while it
// has any, and the refusal names them.
func TestMerchantAccountWithTransactionsInUse(t *testing.T) {
	db := postgrestest.New(t)
	createMerchant(t, db, "shop")
	ctx := context.Background()
	newTransaction(t, db, "shop", 1000, nil)
	err := db.InTx(ctx, func(tx *postgres.Tx) error {
		if err := tx.LockMerchantAccount(ctx, "shop"); err != nil {
			return err
		}
		usage, err := tx.MerchantAccountUsage(ctx, "shop")
		if err != nil {
			return err
		}
		if !slices.Equal(usage, []coreapi.RecordCount{{Resource: coreapi.UsageTransactions, Count: 1}}) {
			t.Errorf("usage %+v; want 1 transaction", usage)
		}
		return tx.DeleteMerchantAccount(ctx, "shop")
	})
	var inUse *coreapi.MerchantAccountInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("deleting an account with a transaction: %v", err)
	}
	if err := db.CreateTransaction(ctx, &coreapi.Transaction{MerchantAccountID: "gone", Intent: coreapi.IntentAuthorize, Currency: "EUR",
		TransactionDetails: coreapi.TransactionDetails{PaymentSource: coreapi.PaymentSourceECommerce}, PaymentMethod: coreapi.TransactionPaymentMethod{Method: "card"}}); !errors.Is(err, coreapi.ErrMerchantAccountNotFound) {
		t.Fatalf("a transaction in an account that does not exist: %v", err)
	}
}

// A connector's text reaches the database without card numbers.
func TestTransactionEventsHoldNoCardNumber(t *testing.T) {
	db := postgrestest.New(t)
	ctx := context.Background()
	tx := newTransaction(t, db, "default", 1000, nil)
	const pan = "4111 1111 1111 1111"
	err := db.InTx(ctx, func(ptx *postgres.Tx) error {
		locked, now, err := ptx.LockTransaction(ctx, "default", tx.ID)
		if err != nil {
			return err
		}
		next, ev, err := locked.Advance(coreapi.Step{Operation: coreapi.OpAuthorizationDeclined, Result: &coreapi.ConnectorResult{
			Outcome: coreapi.OutcomeDeclined, RawResponseDescription: "card " + pan + " declined", ErrorCode: pan}}, now)
		if err != nil {
			return err
		}
		return ptx.RecordTransition(ctx, coreapi.Transition{Transaction: next, Event: ev})
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows string
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT json_agg(t)::text FROM transactions t) || (SELECT json_agg(e)::text FROM transaction_events e)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rows, pan) || strings.Contains(rows, strings.ReplaceAll(pan, " ", "")) || !strings.Contains(rows, "REDACTED-PAN") {
		t.Fatalf("stored rows: %s", rows)
	}
}

func ptr[T any](v T) *T { return &v }
