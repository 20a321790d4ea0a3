package postgres

import (
	"strings"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// The transaction list is an index range scan in both directions, never a
// sort of the account's rows: on (merchant_account_id, created_at, id),
// or with a buyer or a payment method, on that filter's index.
func TestTransactionListUsesTheKeysetIndexes(t *testing.T) {
	db := analyzed(t, `INSERT INTO transactions (merchant_account_id, status, intent, amount, currency,
			payment_method_id, payment_method_method, buyer_id, payment_source, merchant_initiated, is_subsequent_payment, created_at)
		SELECT 'default', 'processing', 'authorize', i, 'EUR', gen_random_uuid(), 'card', gen_random_uuid(), 'ecommerce', false, false,
			now() - i * interval '1 second'
		FROM generate_series(1, 5000) i`, `ANALYZE transactions`)
	boundary := &pagination.Key{Time: time.Now().Add(-time.Hour), ID: "00000000-0000-4000-8000-000000000000"}
	id := "00000000-0000-4000-8000-000000000001"
	for _, tc := range []struct {
		name  string
		f     coreapi.TransactionFilter
		index string
	}{
		{"all", coreapi.TransactionFilter{}, "transactions_list_idx"},
		{"status-and-amount", coreapi.TransactionFilter{Statuses: []coreapi.TransactionStatus{coreapi.TransactionProcessing}, AmountGTE: new(int64)}, "transactions_list_idx"},
		{"buyer", coreapi.TransactionFilter{BuyerID: id}, "transactions_buyer_idx"},
		{"payment-method", coreapi.TransactionFilter{PaymentMethodID: id}, "transactions_payment_method_idx"},
	} {
		for _, page := range []pagination.Page{
			{Limit: 20},
			{Limit: 20, Direction: pagination.Next, Boundary: boundary},
			{Limit: 20, Direction: pagination.Previous, Boundary: boundary},
		} {
			sql, args, _ := transactionListQuery("default", tc.f, page)
			p := explain(t, db, sql, args)
			if !strings.Contains(p, "Index Scan") || !strings.Contains(p, tc.index) || strings.Contains(p, "Sort") {
				t.Errorf("%s, page %+v: plan\n%s", tc.name, page, p)
			}
		}
	}
}
