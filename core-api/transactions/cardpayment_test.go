package transactions_test

import (
	"context"
	"errors"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/zone"
)

// recordingCards is a card connector that answers every authorization
// with answer and keeps the last request it was sent.
type recordingCards struct {
	answer coreapi.ConnectorResult
	last   connector.CardAuthorization
}

func (c *recordingCards) Name() string { return "recording" }
func (c *recordingCards) Authorize(_ context.Context, r connector.CardAuthorization) (coreapi.ConnectorResult, error) {
	c.last = r
	return c.answer, nil
}
func (c *recordingCards) Capture(context.Context, connector.CardOperation) (coreapi.ConnectorResult, error) {
	return coreapi.ConnectorResult{}, errors.New("not here")
}
func (c *recordingCards) Void(context.Context, connector.CardOperation) (coreapi.ConnectorResult, error) {
	return coreapi.ConnectorResult{}, errors.New("not here")
}
func (c *recordingCards) Refund(context.Context, connector.CardOperation) (coreapi.ConnectorResult, error) {
	return coreapi.ConnectorResult{}, errors.New("not here")
}
func (c *recordingCards) Lookup(context.Context, connector.CardLookup) (connector.CardState, error) {
	return connector.CardState{}, errors.New("not here")
}

// heldCodes is vault-proxy's word on which tokens' security codes it
// holds; err fails every question.
type heldCodes struct {
	held    map[string]bool
	heldFor map[string]bool // token|transaction id: kept for a challenge
	asked   int
	err     error
}

func (v *heldCodes) Card(_ context.Context, _, token string) (*zone.CardMetadata, error) {
	v.asked++
	if v.err != nil {
		return nil, v.err
	}
	return &zone.CardMetadata{ID: token, SecurityCodeHeld: v.held[token]}, nil
}

func (v *heldCodes) SecurityCodeHeldFor(_ context.Context, _, token, id string) (bool, error) {
	v.asked++
	if v.err != nil {
		return false, v.err
	}
	return v.heldFor[token+"|"+id], nil
}

func (v *heldCodes) ForgetSecurityCodeFor(_ context.Context, _, token, id string) error {
	delete(v.heldFor, token+"|"+id)
	return v.err
}

func approval(sti string) coreapi.ConnectorResult {
	return coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "auth-1", RawResponseCode: "00", SchemeTransactionID: sti}
}

// The connector is told a security code is held only when the request
// says so and vault-proxy confirms it; a failed confirmation goes
// without.
func TestSecurityCodeHeldIsConfirmedWithVaultProxy(t *testing.T) {
	db := postgrestest.New(t)
	pm := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "visa", Label: "1111"})
	for _, tc := range []struct {
		name      string
		hint      bool
		vault     *heldCodes
		want      bool
		wantAsked int
	}{
		{"no hint: vault-proxy is not asked", false, &heldCodes{held: map[string]bool{pm: true}}, false, 0},
		{"hint confirmed", true, &heldCodes{held: map[string]bool{pm: true}}, true, 1},
		{"hint denied", true, &heldCodes{held: map[string]bool{}}, false, 1},
		{"vault-proxy unreachable", true, &heldCodes{err: errors.New("down")}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cards := &recordingCards{answer: approval("")}
			s, _ := routedTo(t, db, cards)
			s.VaultProxy = tc.vault
			if _, err := s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "EUR", PaymentMethodID: &pm, SecurityCodeHeld: tc.hint}); err != nil {
				t.Fatal(err)
			}
			if cards.last.SecurityCodeHeld != tc.want || tc.vault.asked != tc.wantAsked {
				t.Fatalf("SecurityCodeHeld %v after %d questions, want %v after %d", cards.last.SecurityCodeHeld, tc.vault.asked, tc.want, tc.wantAsked)
			}
		})
	}
}

// A payment with store stores its payment method and records the scheme
// transaction id of its approved customer-initiated authorization; a
// merchant-initiated payment sends that id (the request's wins) and counts
// a use but no customer-initiated one; a decline counts nothing; the same
// answer settled twice counts once. A card given for one payment takes no
// second until stored.
func TestPaymentsUseAndStoreTheirPaymentMethod(t *testing.T) {
	db := postgrestest.New(t)
	cards := &recordingCards{}
	s, _ := routedTo(t, db, cards)
	pm := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "mastercard", Label: "4444", SinglePayment: true})
	read := func() *coreapi.PaymentMethod {
		t.Helper()
		got, err := db.PaymentMethod(ctx, "default", pm)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	pay := func(n coreapi.NewTransaction, answer coreapi.ConnectorResult) (*coreapi.Transaction, error) {
		cards.answer = answer
		n.Amount, n.Currency, n.PaymentMethodID = 100, "EUR", &pm
		return s.PayByCard(ctx, "default", n)
	}
	var ve *coreapi.ValidationError

	declined := coreapi.ConnectorResult{Outcome: coreapi.OutcomeDeclined, ErrorCode: "do_not_honor", RawResponseCode: "05"}
	if _, err := pay(coreapi.NewTransaction{Store: true}, declined); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Usage.UsageCount != 0 || !got.SinglePayment || got.SchemeTransactionID != nil {
		t.Fatalf("after a decline: %+v", got)
	}
	if _, err := pay(coreapi.NewTransaction{}, approval("")); !errors.As(err, &ve) || ve.Problems[0].Pointer != "/payment_method/id" ||
		ve.Problems[0].Type != "value_error.payment_method.not_stored" {
		t.Fatalf("a second payment with a card given for one: %v", err)
	}

	// The answer of a payment with store is lost, and settled later: the
	// transaction remembers store, and the settlement stores the card.
	pm2 := postgrestest.StorePaymentMethod(t, db, &coreapi.PaymentMethod{Method: coreapi.MethodCard, Scheme: "mastercard", Label: "4444", SinglePayment: true})
	cards.answer = coreapi.ConnectorResult{Outcome: coreapi.OutcomePending}
	tx, err := s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "EUR", PaymentMethodID: &pm2, Store: true})
	if err != nil || tx.Status != coreapi.TransactionProcessing {
		t.Fatalf("lost answer: %+v %v", tx, err)
	}
	if got, _ := db.PaymentMethod(ctx, "default", pm2); !got.SinglePayment || got.Usage.UsageCount != 0 {
		t.Fatalf("stored before the answer: %+v", got)
	}
	if tx, _, err = s.ApplyAuthorization(ctx, "default", tx.ID, approval("MCCABCDEF0101")); err != nil || tx.Status != coreapi.TransactionAuthorizationSucceeded {
		t.Fatalf("settle: %+v %v", tx, err)
	}
	got, err := db.PaymentMethod(ctx, "default", pm2)
	if err != nil || got.SinglePayment || got.Usage.UsageCount != 1 || got.Usage.CITUsageCount != 1 || got.Usage.LastUsedAt == nil ||
		got.SchemeTransactionID == nil || *got.SchemeTransactionID != "MCCABCDEF0101" || *got.SchemeTransactionIDScheme != "mastercard" {
		t.Fatalf("stored payment method: %+v %v", got, err)
	}
	if _, _, err := s.ApplyAuthorization(ctx, "default", tx.ID, approval("MCCABCDEF0101")); err != nil {
		t.Fatal(err)
	}
	if again, _ := db.PaymentMethod(ctx, "default", pm2); again.Usage.UsageCount != 1 {
		t.Fatalf("an answer settled twice counted twice: %+v", again.Usage)
	}

	mit := coreapi.TransactionDetails{PaymentSource: coreapi.PaymentSourceRecurring, MerchantInitiated: true, IsSubsequentPayment: true}
	cards.answer = approval("MCCZZZZZZ0202")
	if _, err := s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "EUR", PaymentMethodID: &pm2, Store: true, TransactionDetails: mit}); err != nil {
		t.Fatal(err)
	}
	if cards.last.PreviousSchemeTransactionID != "MCCABCDEF0101" || cards.last.SecurityCodeHeld || !cards.last.MerchantInitiated {
		t.Fatalf("merchant-initiated request: %+v", cards.last)
	}
	got, _ = db.PaymentMethod(ctx, "default", pm2)
	if got.Usage.UsageCount != 2 || got.Usage.CITUsageCount != 1 || *got.SchemeTransactionID != "MCCABCDEF0101" {
		t.Fatalf("after a merchant-initiated payment: %+v", got)
	}
	if _, err := s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "EUR", PaymentMethodID: &pm2,
		PreviousSchemeTransactionID: ptr("123456789012345"), TransactionDetails: mit}); err != nil || cards.last.PreviousSchemeTransactionID != "123456789012345" {
		t.Fatalf("the request's previous scheme transaction id: %+v %v", cards.last, err)
	}
	if _, err := s.PayByCard(ctx, "default", coreapi.NewTransaction{Amount: 100, Currency: "EUR", PaymentMethodID: &pm2}); err != nil ||
		cards.last.PreviousSchemeTransactionID != "" {
		t.Fatalf("a customer-initiated payment sent a previous scheme transaction id: %+v %v", cards.last, err)
	}
}
