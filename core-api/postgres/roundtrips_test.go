package postgres_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
)

// roundTrips counts the round trips a pool's connections make, read
// from what they send: each simple query, and each Sync that closes
// messages executing a statement (one batch, or one extended query). A
// Sync after only Parse and Describe, pgx preparing a statement for its
// cache once per connection, is not counted: it is not part of a
// request's cost once the connection is warm.
type roundTrips struct{ n atomic.Int64 }

func (rt *roundTrips) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, rt: rt}, nil
}

// countingConn parses the frontend messages written to it, which one
// write may split or join.
type countingConn struct {
	net.Conn
	rt        *roundTrips
	mu        sync.Mutex
	hdr       []byte // the header being read: 8 bytes untyped, 5 typed
	skip      int    // bytes of the current message's body still to come
	typed     bool   // past the startup message
	executing bool   // an Execute since the last Sync
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.feed(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countingConn) feed(p []byte) {
	for len(p) > 0 {
		if c.skip > 0 {
			n := min(c.skip, len(p))
			c.skip, p = c.skip-n, p[n:]
			continue
		}
		want := 5
		if !c.typed {
			want = 8
		}
		n := min(want-len(c.hdr), len(p))
		c.hdr, p = append(c.hdr, p[:n]...), p[n:]
		if len(c.hdr) < want {
			return
		}
		if !c.typed {
			// The startup message, or an SSL or GSS encryption request
			// that another untyped message follows.
			code := binary.BigEndian.Uint32(c.hdr[4:8])
			c.typed = code != 80877103 && code != 80877104
			c.skip = int(binary.BigEndian.Uint32(c.hdr[0:4])) - 8
		} else {
			c.skip = int(binary.BigEndian.Uint32(c.hdr[1:5])) - 4
			switch c.hdr[0] {
			case 'Q':
				c.rt.n.Add(1)
			case 'E':
				c.executing = true
			case 'S':
				if c.executing {
					c.rt.n.Add(1)
				}
				c.executing = false
			}
		}
		c.hdr = c.hdr[:0]
	}
}

// openCounting opens a migrated core database whose round trips rt
// counts.
func openCounting(t *testing.T, rt *roundTrips) *postgres.DB {
	t.Helper()
	db, err := postgres.OpenDialing(context.Background(), postgrestest.Migrated(t).CoreDSN, rt.dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	db.Events = httpapi.EventRenderer{Environment: "sandbox"}
	return db
}

// TestRoundTrips bounds the database round trips of the API's writes,
// each with its outbound event: the store calls each request makes,
// through the services where a service makes several (a payment, a
// capture). A change that adds one fails here.
func TestRoundTrips(t *testing.T) {
	ctx := context.Background()
	var rt roundTrips
	db := openCounting(t, &rt)
	svc := &transactions.Service{Store: postgres.TransactionsStore{DB: db}}
	const m = "default"
	ada := "Ada"
	var (
		buyer *coreapi.Buyer
		pm    = &coreapi.PaymentMethod{ID: "0b6a1a4e-7a39-4f5e-9d8e-1c2b3a4d5e6f", MerchantAccountID: m, Method: "card",
			Status: coreapi.StatusSucceeded, Scheme: "visa", Label: "4242", BIN: "424242", ExpirationDate: "12/30"}
		tr *coreapi.Transaction
		c  *coreapi.Capture
	)
	for _, tc := range []struct {
		request string
		max     int64
		do      func() error
	}{
		{"POST /buyers", 1, func() (err error) {
			buyer, err = db.CreateBuyer(ctx, m, coreapi.BuyerFields{DisplayName: coreapi.Some("Ada"),
				ExternalIdentifier: coreapi.Some("rt-1"), BillingDetails: coreapi.Some(coreapi.BillingDetails{FirstName: &ada})})
			return err
		}},
		{"PUT /buyers/{id}", 2, func() (err error) {
			buyer, err = db.UpdateBuyer(ctx, m, buyer.ID, coreapi.BuyerFields{DisplayName: coreapi.Some("Ada L.")})
			return err
		}},
		{"POST /payment-methods-by-token: the store's write", 2, func() error {
			pm.BuyerID = buyer.ID
			return db.CreatePaymentMethod(ctx, pm, nil)
		}},
		{"POST /transactions, stored card: create", 3, func() (err error) {
			tr, err = svc.Create(ctx, m, coreapi.NewTransaction{Amount: 1299, Currency: "EUR", PaymentMethodID: &pm.ID})
			return err
		}},
		{"POST /transactions, stored card: the authorization's answer", 2, func() (err error) {
			tr, _, err = svc.ApplyAuthorization(ctx, m, tr.ID, coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth-1"})
			return err
		}},
		{"POST /transactions/{id}/capture: reserve", 2, func() (err error) {
			tr, c, err = svc.ReserveCapture(ctx, m, tr.ID, nil)
			return err
		}},
		{"POST /transactions/{id}/capture: the capture's answer", 3, func() (err error) {
			tr, c, err = svc.SettleCapture(ctx, m, tr.ID, c.ID, coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "cap-1"})
			return err
		}},
	} {
		before := rt.n.Load()
		if err := tc.do(); err != nil {
			t.Fatalf("%s: %v", tc.request, err)
		}
		got := rt.n.Load() - before
		t.Logf("%s: %d round trips", tc.request, got)
		if got > tc.max {
			t.Errorf("%s: %d round trips, want at most %d", tc.request, got, tc.max)
		}
	}
	if tr.Status != coreapi.TransactionCaptureSucceeded {
		t.Errorf("transaction %s, want capture_succeeded", tr.Status)
	}
	var events int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events`).Scan(&events); err != nil || events != 7 {
		t.Errorf("%d outbound events (%v), want 7: one for each write", events, err)
	}
}
