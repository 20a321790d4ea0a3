package transactions_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
	"github.com/payorch/shared/pagination"
)

// cards stands in for the processor: mock-card's name and schemas, and
// every call recorded with the configuration it came with and approved.
// (The real connector against the real simulator: e2e.)
type cards struct {
	connector.MockCard
	mu     sync.Mutex
	authz  []connector.CardAuthorization
	others []connector.CardOperation
}

func (c *cards) Authorize(_ context.Context, r connector.CardAuthorization) (coreapi.ConnectorResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.authz = append(c.authz, r)
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth-" + r.Reference}, nil
}

func (c *cards) op(r connector.CardOperation) (coreapi.ConnectorResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.others = append(c.others, r)
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "op-" + r.Reference}, nil
}

func (c *cards) Capture(_ context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error) {
	return c.op(r)
}
func (c *cards) Void(_ context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error) {
	return c.op(r)
}
func (c *cards) Refund(_ context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error) {
	return c.op(r)
}

// routed is the transactions service as app wires it, on the real
// database and Vault: payment services, the registry holding the
// recording connector, and it as the built-in sandbox connector too
// unless production.
func routed(t *testing.T, db *postgres.DB, production bool) (*transactions.Service, *paymentservices.Service, *cards) {
	t.Helper()
	c := &cards{}
	s, pss := routedTo(t, db, c)
	if production {
		s.Cards = nil
	}
	return s, pss, c
}

// routedTo is routed's service with c as the registry's only connector
// and the built-in sandbox one.
func routedTo(t *testing.T, db *postgres.DB, c transactions.CardConnector) (*transactions.Service, *paymentservices.Service) {
	t.Helper()
	reg := connector.NewRegistry(c)
	pss := &paymentservices.Service{Store: postgres.PaymentServicesStore{DB: db}, Connectors: reg, Crypter: vaulttransittest.New(t).Client}
	s := service(db)
	s.PaymentServices, s.Connectors, s.Cards = pss, reg, c
	return s, pss
}

func newPaymentService(t *testing.T, pss *paymentservices.Service, key string, mutate ...func(*coreapi.PaymentServiceFields)) *coreapi.PaymentService {
	t.Helper()
	f := coreapi.PaymentServiceFields{Connector: "mock-card", DisplayName: coreapi.Some("Mock " + key),
		Settings:    json.RawMessage(`{"merchant_descriptor":"SHOP ` + key + `"}`),
		Credentials: json.RawMessage(`{"api_key":"mc_test_key000` + key + `"}`)}
	for _, m := range mutate {
		m(&f)
	}
	ps, err := pss.Create(ctx, "default", f)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func cardPayment(t *testing.T, db *postgres.DB) coreapi.NewTransaction {
	t.Helper()
	pm := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111", BIN: "411111"})
	return coreapi.NewTransaction{Amount: 1000, Currency: "EUR", PaymentMethodID: &pm}
}

// A payment goes to the payment service it names, else the account's
// default for cards, else (outside production) the built-in sandbox
// connector with no configuration; the connector gets its configuration
// and its own entry of the connection options only.
func TestPayByCardRouting(t *testing.T) {
	db := postgrestest.New(t)
	s, pss, c := routed(t, db, false)

	// Neither: the built-in one.
	n := cardPayment(t, db)
	n.ConnectionOptions = map[string]json.RawMessage{"mock-card": json.RawMessage(`{"soft_descriptor":"ORDER 1"}`), "other": json.RawMessage(`{"x":1}`)}
	tx, err := s.PayByCard(ctx, "default", n)
	if err != nil || tx.PaymentServiceID != nil || tx.PaymentService != nil || tx.Status != coreapi.TransactionAuthorizationSucceeded {
		t.Fatalf("built-in: %+v (%v)", tx, err)
	}
	if a := c.authz[0]; len(a.Config.Credentials) != 0 || len(a.Config.Settings) != 0 || !reflect.DeepEqual(a.Options, connector.Values{"soft_descriptor": "ORDER 1"}) {
		t.Fatalf("built-in call: %+v", a)
	}

	// The default.
	other := newPaymentService(t, pss, "a")
	dflt := newPaymentService(t, pss, "b", func(f *coreapi.PaymentServiceFields) { f.Default = coreapi.Some(true) })
	tx, err = s.PayByCard(ctx, "default", cardPayment(t, db))
	if err != nil || tx.PaymentServiceID == nil || *tx.PaymentServiceID != dflt.ID ||
		!reflect.DeepEqual(tx.PaymentService, &coreapi.PaymentServiceSummary{ID: dflt.ID, Connector: "mock-card", DisplayName: dflt.DisplayName}) {
		t.Fatalf("default: %+v (%v)", tx, err)
	}
	if a := c.authz[1]; a.Config.Credentials["api_key"].Reveal() != "mc_test_key000b" || a.Config.Settings.String("merchant_descriptor") != "SHOP b" || len(a.Options) != 0 {
		t.Fatalf("default's call: %+v", a)
	}

	// By id, over the default.
	n = cardPayment(t, db)
	n.PaymentServiceID = &other.ID
	tx, err = s.PayByCard(ctx, "default", n)
	if err != nil || *tx.PaymentServiceID != other.ID || c.authz[2].Config.Credentials["api_key"].Reveal() != "mc_test_key000a" {
		t.Fatalf("by id: %+v (%v)", tx, err)
	}

	// A capture and a refund go to the payment service that authorized,
	// with its configuration, after it is made inactive and deleted.
	deactivated := false
	if _, err := pss.Update(ctx, "default", other.ID, coreapi.PaymentServiceFields{Active: coreapi.Some(deactivated)}); err != nil {
		t.Fatal(err)
	}
	if err := pss.Delete(ctx, "default", other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CaptureCard(ctx, "default", tx.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefundCard(ctx, "default", tx.ID, coreapi.NewRefund{Amount: ptr(int64(100))}); err != nil {
		t.Fatal(err)
	}
	for _, op := range c.others {
		if op.Config.Credentials["api_key"].Reveal() != "mc_test_key000a" || op.AuthorizationID != "auth-"+tx.ID {
			t.Fatalf("operation: %+v", op)
		}
	}
	if got, err := s.Get(ctx, "default", tx.ID); err != nil || got.PaymentService == nil || got.PaymentService.ID != other.ID {
		t.Fatalf("a deleted payment service's transaction: %+v (%v)", got, err)
	}
}

// A payment the routing refuses stores nothing and calls no connector.
func TestPayByCardRefusals(t *testing.T) {
	db := postgrestest.New(t)
	s, pss, c := routed(t, db, false)
	prod, _, _ := routed(t, db, true)
	inactive := newPaymentService(t, pss, "i", func(f *coreapi.PaymentServiceFields) { f.Active = coreapi.Some(false) })
	missing := "00000000-0000-4000-8000-000000000000"
	cases := []struct {
		name    string
		s       *transactions.Service
		mutate  func(*coreapi.NewTransaction)
		want    error
		pointer string // of a validation error
	}{
		{"unknown payment service", s, func(n *coreapi.NewTransaction) { n.PaymentServiceID = &missing }, coreapi.ErrPaymentServiceNotFound, ""},
		{"inactive payment service", s, func(n *coreapi.NewTransaction) { n.PaymentServiceID = &inactive.ID }, coreapi.ErrPaymentServiceInactive, ""},
		{"production without a payment service", prod, func(*coreapi.NewTransaction) {}, coreapi.ErrPaymentServiceUnavailable, ""},
		{"bad connection options of the connector", s, func(n *coreapi.NewTransaction) {
			n.ConnectionOptions = map[string]json.RawMessage{"mock-card": json.RawMessage(`{"soft_descriptor":"{{ CARD_NUMBER_1 }}"}`)}
		}, nil, "/connection_options/mock-card/soft_descriptor"},
		{"unknown connection option", s, func(n *coreapi.NewTransaction) {
			n.ConnectionOptions = map[string]json.RawMessage{"mock-card": json.RawMessage(`{"merchant_id":"x"}`)}
		}, nil, "/connection_options/mock-card/merchant_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := cardPayment(t, db)
			tc.mutate(&n)
			_, err := tc.s.PayByCard(ctx, "default", n)
			var ve *coreapi.ValidationError
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err %v, want %v", err, tc.want)
			case tc.want == nil && (!errors.As(err, &ve) || !slices.ContainsFunc(ve.Problems, func(p coreapi.Problem) bool { return p.Pointer == tc.pointer })):
				t.Fatalf("err %v, want a problem at %s", err, tc.pointer)
			}
		})
	}
	if got, err := s.List(ctx, "default", coreapi.TransactionFilter{}, pagination.Page{Limit: 10}); err != nil || len(got) != 0 || len(c.authz) != 0 {
		t.Fatalf("stored %d transactions, %d calls (%v)", len(got), len(c.authz), err)
	}
}

// A capture, void or refund through the card connector is refused before
// anything is reserved when the transaction is not paid by a stored card,
// or (production) when a payment without a payment service has no
// built-in connector to go to.
func TestCardOperationsRefusedBeforeReserving(t *testing.T) {
	db := postgrestest.New(t)
	withCards, _, _ := routed(t, db, false)
	prod, _, _ := routed(t, db, true)
	ops := map[string]func(s *transactions.Service, id string) error{
		"capture": func(s *transactions.Service, id string) error {
			_, err := s.CaptureCard(ctx, "default", id, nil)
			return err
		},
		"void": func(s *transactions.Service, id string) error { _, err := s.VoidCard(ctx, "default", id); return err },
		"refund": func(s *transactions.Service, id string) error {
			_, err := s.RefundCard(ctx, "default", id, coreapi.NewRefund{})
			return err
		},
	}
	builtIn, err := withCards.PayByCard(ctx, "default", func() coreapi.NewTransaction {
		n := cardPayment(t, db)
		n.Intent = coreapi.IntentCapture
		return n
	}())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    *transactions.Service
		tx   func(t *testing.T) *coreapi.Transaction
		want error
	}{
		{"no card connector", prod, func(*testing.T) *coreapi.Transaction { return builtIn }, coreapi.ErrCardPaymentsUnavailable},
		{"not a card payment", withCards, func(t *testing.T) *coreapi.Transaction {
			// A pix payment: its connector takes no capture, void or refund.
			tx, err := withCards.Create(ctx, "default", coreapi.NewTransaction{Intent: coreapi.IntentCapture, Amount: 1000, Currency: "BRL", Method: ptr(coreapi.MethodPix)})
			if err != nil {
				t.Fatal(err)
			}
			if tx, _, err = withCards.ApplyAuthorization(ctx, "default", tx.ID, answer(coreapi.OutcomeSucceeded)); err != nil {
				t.Fatal(err)
			}
			return tx
		}, coreapi.ErrNotACardPayment},
	} {
		for op, call := range ops {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				tx := tc.tx(t)
				before, err := tc.s.Get(ctx, "default", tx.ID)
				if err != nil {
					t.Fatal(err)
				}
				if err := call(tc.s, tx.ID); !errors.Is(err, tc.want) {
					t.Fatalf("%s = %v, want %v", op, err, tc.want)
				}
				if after, err := tc.s.Get(ctx, "default", tx.ID); err != nil || !reflect.DeepEqual(after.TransactionState, before.TransactionState) {
					t.Fatalf("changed: %+v (%v)", after, err)
				}
			})
		}
	}
}
