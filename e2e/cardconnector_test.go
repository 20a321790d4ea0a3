package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// keptAnswers is the stack's vault-proxy client with every answer core-api
// receives kept, to search them for card numbers.
type keptAnswers struct {
	connector.Detokenizer
	mu  sync.Mutex
	all strings.Builder
}

func (k *keptAnswers) Detokenize(ctx context.Context, merchant, actor string, r zone.DetokenizeRequest) (*zone.DetokenizeResponse, error) {
	resp, err := k.Detokenizer.Detokenize(ctx, merchant, actor, r)
	k.mu.Lock()
	defer k.mu.Unlock()
	if resp != nil {
		fmt.Fprintf(&k.all, "%v %s %s\n", resp.Headers, resp.Body, resp.Text)
	}
	if err != nil {
		k.all.WriteString(err.Error() + "\n")
	}
	return resp, err
}

// core-api's mock-card connector, as the core-api app registers it, makes
// card payments with a card vaulted through vault-proxy: approval,
// declines by amount, captures (partial), voids and refunds, the held
// answer that leaves the outcome unknown until the lookup finds the
// charge, one charge for a reference sent twice, and a merchant-initiated
// payment after the first one's scheme transaction id without a security
// code. No card number is in any result, answer, log line or the core
// database.
func TestMockCardConnector(t *testing.T) {
	s := stack.Start(t)
	tok := s.Token(t, "payment-methods.write")
	const pan = "4111111111111111"
	pm := vaultCard(t, s, tok, pan, "123")["id"].(string)
	ctx := context.Background()

	cards, err := s.CoreAPI.Connectors.Cards(connector.MockCardName)
	if err != nil {
		t.Fatalf("the core-api app registers no mock-card connector: %v", err)
	}
	if _, ok := cards.(connector.MockCard); !ok {
		t.Fatalf("registered connector %T", cards)
	}
	kept := &keptAnswers{Detokenizer: s.CoreAPI.VaultProxy}
	mc := connector.MockCard{VaultProxy: kept}
	var results []any
	authorize := func(t *testing.T, c connector.CardConnector, r connector.CardAuthorization) (coreapi.ConnectorResult, error) {
		t.Helper()
		r.MerchantAccountID, r.PaymentMethodID = "default", pm
		if r.Currency == "" {
			r.Currency = "EUR"
		}
		res, err := c.Authorize(ctx, r)
		results = append(results, res)
		return res, err
	}
	step := func(t *testing.T, op func(context.Context, connector.CardOperation) (coreapi.ConnectorResult, error), auth, ref string, amount int64) coreapi.ConnectorResult {
		t.Helper()
		res, err := op(ctx, connector.CardOperation{MerchantAccountID: "default", PaymentMethodID: pm, AuthorizationID: auth, Amount: amount, Reference: ref})
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		results = append(results, res)
		return res
	}
	lookup := func(t *testing.T, ref string) connector.CardState {
		t.Helper()
		st, err := mc.Lookup(ctx, connector.CardLookup{MerchantAccountID: "default", PaymentMethodID: pm, Reference: ref})
		if err != nil {
			t.Fatalf("lookup %s: %v", ref, err)
		}
		results = append(results, st)
		return st
	}

	var first coreapi.ConnectorResult
	t.Run("approval with the held security code, through the registered connector", func(t *testing.T) {
		res, err := authorize(t, cards, connector.CardAuthorization{Reference: "txn-a", Amount: 1299, Intent: coreapi.IntentAuthorize,
			SecurityCodeHeld: true, BillingPostalCode: "10115", Options: connector.Values{"soft_descriptor": "ORDER 1"}})
		if err != nil || res.Outcome != coreapi.OutcomeSucceeded || res.RawResponseCode != "00" || res.RawResponseDescription != "Approved" ||
			res.AVSResponseCode != "Y" || res.CVVResponseCode != "M" || res.ErrorCode != "" || !strings.HasPrefix(res.Reference, "auth_") || res.SchemeTransactionID == "" {
			t.Fatalf("approval: %+v %v", res, err)
		}
		first = res
	})

	t.Run("same reference twice is one charge", func(t *testing.T) {
		// Sent again after a lost answer: the security code was given once.
		res, err := authorize(t, mc, connector.CardAuthorization{Reference: "txn-a", Amount: 1299, Intent: coreapi.IntentAuthorize,
			BillingPostalCode: "10115", Options: connector.Values{"soft_descriptor": "ORDER 1"}})
		if err != nil || res.Reference != first.Reference || res.Outcome != coreapi.OutcomeSucceeded {
			t.Fatalf("resend: %+v %v", res, err)
		}
		if st := mockCardStats(t, s, "txn-a"); st.Charges != 1 || st.Requests != 2 {
			t.Fatalf("mock-card stats: %+v", st)
		}
	})

	t.Run("declined by amount", func(t *testing.T) {
		res, err := authorize(t, mc, connector.CardAuthorization{Reference: "txn-d", Amount: 4051})
		if err != nil || res.Outcome != coreapi.OutcomeDeclined || res.RawResponseCode != "51" || res.ErrorCode != "insufficient_funds" ||
			res.RawResponseDescription != "Not sufficient funds" || res.SchemeTransactionID != "" || res.Reference == "" {
			t.Fatalf("decline: %+v %v", res, err)
		}
	})

	t.Run("capture, partial capture and refund", func(t *testing.T) {
		c1 := step(t, mc.Capture, first.Reference, "txn-a:capture-1", 500)
		c2 := step(t, mc.Capture, first.Reference, "txn-a:capture-2", 0) // the rest
		if c1.Outcome != coreapi.OutcomeSucceeded || !strings.HasPrefix(c1.Reference, "cap_") || c2.Reference == c1.Reference {
			t.Fatalf("captures: %+v %+v", c1, c2)
		}
		over := step(t, mc.Capture, first.Reference, "txn-a:capture-3", 1)
		if over.Outcome != coreapi.OutcomeDeclined || over.ErrorCode != "amount_exceeds_authorized" {
			t.Fatalf("capture beyond the authorization: %+v", over)
		}
		rf := step(t, mc.Refund, first.Reference, "txn-a:refund-1", 200)
		if rf.Outcome != coreapi.OutcomeSucceeded || !strings.HasPrefix(rf.Reference, "ref_") {
			t.Fatalf("refund: %+v", rf)
		}
		st := lookup(t, "txn-a")
		if st.Status != "captured" || st.CapturedAmount != 1299 || st.RefundedAmount != 200 || len(st.Captures) != 2 || len(st.Refunds) != 1 {
			t.Fatalf("after capture and refund: %+v", st)
		}
		if c, ok := connector.Step(st.Captures, "txn-a:capture-1"); !ok || c.ID != c1.Reference || c.Amount != 500 {
			t.Fatalf("capture-1 in the lookup: %+v", st.Captures)
		}
	})

	t.Run("void", func(t *testing.T) {
		a, err := authorize(t, mc, connector.CardAuthorization{Reference: "txn-v", Amount: 700})
		if err != nil || a.Outcome != coreapi.OutcomeSucceeded {
			t.Fatalf("authorize: %+v %v", a, err)
		}
		v := step(t, mc.Void, a.Reference, "txn-v:void-1", 0)
		if v.Outcome != coreapi.OutcomeSucceeded || v.Reference != a.Reference {
			t.Fatalf("void: %+v", v)
		}
		if st := lookup(t, "txn-v"); !st.Voided || st.Status != "voided" {
			t.Fatalf("after the void: %+v", st)
		}
		again := step(t, mc.Void, first.Reference, "txn-a:void-1", 0)
		if again.Outcome != coreapi.OutcomeDeclined || again.ErrorCode != "authorization_not_voidable" {
			t.Fatalf("void of a captured authorization: %+v", again)
		}
	})

	t.Run("held answer: outcome unknown, then the lookup finds the charge", func(t *testing.T) {
		impatient := connector.MockCard{VaultProxy: kept, TimeoutMillis: 500}
		if _, err := mc.Lookup(ctx, connector.CardLookup{MerchantAccountID: "default", PaymentMethodID: pm, Reference: "txn-h"}); !errors.Is(err, connector.ErrNotFound) {
			t.Fatalf("lookup before the charge: %v, want ErrNotFound", err)
		}
		res, err := authorize(t, impatient, connector.CardAuthorization{Reference: "txn-h", Amount: mockcard.AmountHeld, Intent: coreapi.IntentCapture})
		if !errors.Is(err, connector.ErrOutcomeUnknown) || res.Outcome != coreapi.OutcomePending {
			t.Fatalf("held answer: %+v %v, want pending and ErrOutcomeUnknown", res, err)
		}
		st := lookup(t, "txn-h")
		if st.Outcome != coreapi.OutcomeSucceeded || st.Status != "captured" || st.CapturedAmount != mockcard.AmountHeld || st.Reference == "" {
			t.Fatalf("lookup: %+v", st)
		}
		if ks := mockCardStats(t, s, "txn-h"); ks.Charges != 1 {
			t.Fatalf("mock-card stats: %+v", ks)
		}
	})

	t.Run("merchant-initiated payment after the first one, without a security code", func(t *testing.T) {
		res, err := authorize(t, mc, connector.CardAuthorization{Reference: "txn-mit", Amount: 999, MerchantInitiated: true,
			PaymentSource: coreapi.PaymentSourceRecurring, PreviousSchemeTransactionID: first.SchemeTransactionID})
		if err != nil || res.Outcome != coreapi.OutcomeSucceeded || res.CVVResponseCode != "" || res.SchemeTransactionID == "" ||
			res.SchemeTransactionID == first.SchemeTransactionID {
			t.Fatalf("merchant-initiated: %+v %v", res, err)
		}
	})

	all, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	logging.AssertNoPANIn(t, "the connector's results", string(all), pan)
	logging.AssertNoPANIn(t, "the answers core-api gets", kept.all.String(), pan)
	logging.AssertNoPANIn(t, "the core database", s.Dump(t, "core"), pan)
	assertNoCardDataLogged(t, s, pan)
}
