package transactions_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
)

// giftCards stands in for a gift card processor (mock-card's name and
// schemas): redemptions approved unless declined names the amount, and
// balances by token. (The real connector against the real simulator:
// e2e.)
type giftCards struct {
	connector.MockCard
	mu        sync.Mutex
	redeemed  []connector.GiftCardRedemption
	refunds   []connector.CardOperation
	balances  map[string]int64 // by token; absent: invalid_pin; -1: never answers
	declineAt int64
	lostAt    int64 // the amount whose redemption's answer is lost (recorded all the same)
}

func (g *giftCards) Redeem(_ context.Context, r connector.GiftCardRedemption) (coreapi.ConnectorResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.redeemed = append(g.redeemed, r)
	if r.Amount == g.lostAt {
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}, fmt.Errorf("%w: no answer", connector.ErrOutcomeUnknown)
	}
	if r.Amount == g.declineAt {
		return coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, Reference: "red-" + r.Reference, ErrorCode: "insufficient_balance"}, nil
	}
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "red-" + r.Reference}, nil
}

func (g *giftCards) RefundRedemption(_ context.Context, r connector.CardOperation) (coreapi.ConnectorResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refunds = append(g.refunds, r)
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "rf-" + r.Reference}, nil
}

// LookupRedemption finds every redemption sent: approved unless declined.
func (g *giftCards) LookupRedemption(_ context.Context, r connector.CardLookup) (connector.CardState, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, red := range g.redeemed {
		if red.Reference == r.Reference {
			return connector.CardState{ConnectorResult: coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "red-" + r.Reference},
				AuthorizedAmount: red.Amount, CapturedAmount: red.Amount}, nil
		}
	}
	return connector.CardState{}, connector.ErrNotFound
}

func (g *giftCards) Balance(ctx context.Context, r connector.GiftCardBalanceQuery) (int64, error) {
	b, ok := g.balances[r.PaymentMethodID]
	switch {
	case !ok:
		return 0, &connector.ProcessorError{Connector: "mock-card", Status: 422, Code: "invalid_pin"}
	case b < 0:
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return b, nil
}

func giftCardService(t *testing.T, db *postgres.DB) (*transactions.Service, *paymentservices.Service, *giftCards) {
	t.Helper()
	g := &giftCards{declineAt: 4051, lostAt: 4098, balances: map[string]int64{}}
	reg := connector.NewRegistry(g)
	pss := &paymentservices.Service{Store: postgres.PaymentServicesStore{DB: db}, Connectors: reg, Crypter: vaulttransittest.New(t).Client}
	s := service(db)
	s.PaymentServices, s.Connectors, s.Cards = pss, reg, g
	return s, pss, g
}

func giftCardPayment(t *testing.T, db *postgres.DB, amount int64) coreapi.NewTransaction {
	t.Helper()
	pm := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodGiftCard, Scheme: "gift-card", Label: "4242", BIN: "603571"})
	return coreapi.NewTransaction{Amount: amount, Currency: "USD", PaymentMethodID: &pm, Intent: coreapi.IntentAuthorize}
}

// A stored gift card pays by a redemption: a sale (intent capture,
// whatever was asked), captured at once, counted as a use of the gift card
// in the same database transaction; nothing is left to capture or void,
// which the state machine refuses before any call; a refund goes to the
// redemption. A declined redemption counts no use.
func TestGiftCardPayment(t *testing.T) {
	db := postgrestest.New(t)
	s, _, g := giftCardService(t, db)

	n := giftCardPayment(t, db, 600)
	tx, err := s.PayByCard(ctx, "default", n)
	if err != nil {
		t.Fatal(err)
	}
	if tx.Status != coreapi.TransactionCaptureSucceeded || tx.Intent != coreapi.IntentCapture || tx.CapturedAmount != 600 || tx.AuthorizedAmount != 600 ||
		tx.PaymentMethod.Method != coreapi.MethodGiftCard || deref(tx.PaymentServiceTransactionID) != "red-"+tx.ID {
		t.Fatalf("redeemed: %+v", tx)
	}
	if r := g.redeemed[0]; r.PaymentMethodID != *n.PaymentMethodID || r.Reference != tx.ID || r.Amount != 600 || r.Currency != "USD" {
		t.Fatalf("redemption sent: %+v", r)
	}
	pm, err := s.Store.PaymentMethod(ctx, "default", *n.PaymentMethodID)
	if err != nil || pm.Usage.UsageCount != 1 || pm.Usage.CITUsageCount != 1 || pm.Usage.LastUsedAt == nil {
		t.Fatalf("usage after a redemption: %+v (%v)", pm.Usage, err)
	}

	var te *coreapi.TransitionError
	if _, err := s.CaptureCard(ctx, "default", tx.ID, nil); !errors.As(err, &te) || te.Code != coreapi.CodeCaptureExceedsAuthorized {
		t.Fatalf("capture of a redemption: %v", err)
	}
	if _, err := s.VoidCard(ctx, "default", tx.ID); !errors.As(err, &te) || te.Code != coreapi.CodeTransactionNotVoidable {
		t.Fatalf("void of a redemption: %v", err)
	}
	amount := int64(200)
	r, err := s.RefundCard(ctx, "default", tx.ID, coreapi.NewRefund{Amount: &amount})
	if err != nil || r.Status != coreapi.OperationSucceeded || len(g.refunds) != 1 || g.refunds[0].AuthorizationID != "red-"+tx.ID || g.refunds[0].Amount != 200 {
		t.Fatalf("refund: %+v (%v), sent %+v", r, err, g.refunds)
	}

	d := giftCardPayment(t, db, 4051)
	tx, err = s.PayByCard(ctx, "default", d)
	if err != nil || tx.Status != coreapi.TransactionAuthorizationDeclined || deref(tx.ErrorCode) != "insufficient_balance" {
		t.Fatalf("declined: %+v (%v)", tx, err)
	}
	if pm, _ := s.Store.PaymentMethod(ctx, "default", *d.PaymentMethodID); pm.Usage.UsageCount != 0 {
		t.Fatalf("a declined redemption counted a use: %+v", pm.Usage)
	}

	// A redemption whose answer was lost stays processing; its lookup
	// settles it as the sale it was, and counts the use then.
	l := giftCardPayment(t, db, 4098)
	tx, err = s.PayByCard(ctx, "default", l)
	if err != nil || tx.Status != coreapi.TransactionProcessing {
		t.Fatalf("lost answer: %+v (%v)", tx, err)
	}
	if tx, err = s.Sync(ctx, "default", tx.ID); err != nil || tx.Status != coreapi.TransactionCaptureSucceeded || tx.CapturedAmount != 4098 {
		t.Fatalf("synced: %+v (%v)", tx, err)
	}
	if pm, _ := s.Store.PaymentMethod(ctx, "default", *l.PaymentMethodID); pm.Usage.UsageCount != 1 {
		t.Fatalf("a synced redemption counted %d uses", pm.Usage.UsageCount)
	}

	// A gift card is no card: asking for a card payment with it is refused.
	card := coreapi.MethodCard
	n = giftCardPayment(t, db, 100)
	n.Method = &card
	if _, err := s.PayByCard(ctx, "default", n); err == nil {
		t.Fatal("a gift card paid as a card")
	}
}

// Balances are asked of the gift card connector for each card: a refusal
// is the processor's code, a connector that does not answer in time
// balance_timeout, and without a gift card connector every card is
// balance_unavailable.
func TestGiftCardBalances(t *testing.T) {
	db := postgrestest.New(t)
	s, _, g := giftCardService(t, db)
	g.balances = map[string]int64{"a": 1000, "slow": -1}
	cards := []coreapi.PaymentMethod{{ID: "a"}, {ID: "refused"}, {ID: "slow"}}
	start := time.Now()
	got := s.GiftCardBalances(ctx, "default", cards)
	if got[0].Balance == nil || *got[0].Balance != 1000 || got[0].ErrorCode != "" ||
		got[1].Balance != nil || got[1].ErrorCode != "invalid_pin" ||
		got[2].Balance != nil || got[2].ErrorCode != transactions.BalanceTimeout {
		t.Fatalf("balances = %+v", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("balances took %v", d)
	}

	s.Cards = nil // production: no built-in connector, no default
	for _, b := range s.GiftCardBalances(ctx, "default", cards[:1]) {
		if b.Balance != nil || b.ErrorCode != transactions.BalanceUnavailable {
			t.Fatalf("without a connector: %+v", b)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
