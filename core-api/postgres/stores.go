package postgres

import (
	"context"

	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/merchants"
	"github.com/payorch/core-api/paymentmethods"
	"github.com/payorch/core-api/transactions"
)

var _ buyers.Store = (*DB)(nil)

// Each service declares the store it needs, with the transaction it works
// in as an interface of its own. DB has every method but InTx, whose fn
// takes that interface: a service's view of DB adds it.

// MerchantsStore is the core database as the merchants service's store.
type MerchantsStore struct{ *DB }

var _ merchants.Store = MerchantsStore{}

// InTx is DB.InTx, its transaction a merchants.Tx.
func (s MerchantsStore) InTx(ctx context.Context, fn func(merchants.Tx) error) error {
	return s.DB.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}

// PaymentMethodsStore is the core database as the payment methods
// service's store.
type PaymentMethodsStore struct{ *DB }

var _ paymentmethods.Store = PaymentMethodsStore{}

// InTx is DB.InTx, its transaction a paymentmethods.Tx.
func (s PaymentMethodsStore) InTx(ctx context.Context, fn func(paymentmethods.Tx) error) error {
	return s.DB.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}

// TransactionsStore is the core database as the transactions service's
// store.
type TransactionsStore struct{ *DB }

var _ transactions.Store = TransactionsStore{}

// InTx is DB.InTx, its transaction a transactions.Tx.
func (s TransactionsStore) InTx(ctx context.Context, fn func(transactions.Tx) error) error {
	return s.DB.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}
