package coreapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
)

func newTransaction(intent string) *coreapi.Transaction {
	return &coreapi.Transaction{ID: "tx", MerchantAccountID: "default", Intent: intent, Currency: "EUR",
		TransactionState: coreapi.TransactionState{Status: coreapi.TransactionProcessing, Amount: 1000}}
}

// Advance is the state machine plus what the record keeps of it: the
// times of the first authorization, capture and void, the authorization's
// answer (and only the authorization's) on the transaction, and an event
// for each step with the amount it moved.
func TestAdvance(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tx := newTransaction(coreapi.IntentAuthorize)
	step := func(st coreapi.Step, at time.Duration) *coreapi.TransactionEvent {
		t.Helper()
		next, ev, err := tx.Advance(st, t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		tx = next
		return ev
	}
	ev := step(coreapi.Step{Operation: coreapi.OpAuthorizationSucceeded, Amount: 5, Result: &coreapi.ConnectorResult{
		Outcome: coreapi.OutcomeSucceeded, Reference: "auth-1", RawResponseCode: "00", RawResponseDescription: "Approved",
		AVSResponseCode: "match", CVVResponseCode: "match", SchemeTransactionID: "123456789012345"}}, 1)
	if ev.Name != "authorization-succeeded" || ev.StatusBefore != coreapi.TransactionProcessing || ev.StatusAfter != coreapi.TransactionAuthorizationSucceeded ||
		ev.Amount != 1000 || !ev.CreatedAt.Equal(t0.Add(1)) || *ev.RawResponseCode != "00" {
		t.Fatalf("event %+v", ev)
	}
	if *tx.PaymentServiceTransactionID != "auth-1" || *tx.RawResponseDescription != "Approved" || *tx.AVSResponseCode != "match" ||
		*tx.SchemeTransactionID != "123456789012345" || !tx.AuthorizedAt.Equal(t0.Add(1)) || !tx.UpdatedAt.Equal(t0.Add(1)) {
		t.Fatalf("after the authorization: %+v", tx)
	}

	ev = step(coreapi.Step{Operation: coreapi.OpCaptureRequested, Amount: 300, CaptureID: "c1"}, 2)
	if ev.Amount != 300 || *ev.CaptureID != "c1" || ev.RefundID != nil || ev.RawResponseCode != nil {
		t.Fatalf("capture requested: %+v", ev)
	}
	step(coreapi.Step{Operation: coreapi.OpCaptureSucceeded, Amount: 300, CaptureID: "c1",
		Result: &coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, Reference: "cap-1", RawResponseCode: "C0"}}, 3)
	step(coreapi.Step{Operation: coreapi.OpCaptureRequested, Amount: 200, CaptureID: "c2"}, 4)
	ev = step(coreapi.Step{Operation: coreapi.OpCaptureSucceeded, Amount: 200, CaptureID: "c2",
		Result: &coreapi.ConnectorResult{Outcome: coreapi.OutcomeSucceeded, RawResponseCode: "C1"}}, 5)
	if *ev.RawResponseCode != "C1" || *tx.RawResponseCode != "00" || *tx.PaymentServiceTransactionID != "auth-1" {
		t.Fatalf("a capture's answer is its event's, not the transaction's: event %+v, transaction %+v", ev, tx)
	}
	if !tx.CapturedAt.Equal(t0.Add(3)) || tx.CapturedAmount != 500 || tx.Status != coreapi.TransactionCaptureSucceeded {
		t.Fatalf("captured at %v (the first capture's), %d, %s", tx.CapturedAt, tx.CapturedAmount, tx.Status)
	}
	if tx.VoidedAt != nil {
		t.Fatal("voided_at set without a void")
	}

	v := newTransaction(coreapi.IntentAuthorize)
	v.TransactionState = coreapi.TransactionState{Status: coreapi.TransactionAuthorizationVoidPending, Amount: 1000, AuthorizedAmount: 1000}
	v, _, err := v.Advance(coreapi.Step{Operation: coreapi.OpVoidSucceeded}, t0)
	if err != nil || !v.VoidedAt.Equal(t0) {
		t.Fatalf("void: %v, voided at %v", err, v.VoidedAt)
	}
}

// A refused step returns the *TransitionError and no record.
func TestAdvanceRefused(t *testing.T) {
	tx := newTransaction(coreapi.IntentAuthorize)
	next, ev, err := tx.Advance(coreapi.Step{Operation: coreapi.OpCaptureRequested, Amount: 1}, time.Now())
	var te *coreapi.TransitionError
	if !errors.As(err, &te) || te.Code != coreapi.CodeTransactionNotCapturable || !te.InFlight || next != nil || ev != nil {
		t.Fatalf("Advance = %v, %v, %v", next, ev, err)
	}
}

// A connector's text is stored without card numbers: free text masked,
// identifiers (used later as they are) dropped when they hold one of a
// known scheme; and what PostgreSQL's text cannot hold is replaced.
func TestAdvanceStoresNoCardData(t *testing.T) {
	const pan = "4111111111111111"
	tx := newTransaction(coreapi.IntentCapture)
	next, ev, err := tx.Advance(coreapi.Step{Operation: coreapi.OpAuthorizationDeclined, Result: &coreapi.ConnectorResult{
		Outcome: coreapi.OutcomeDeclined, Reference: "ref-" + pan, ErrorCode: "card " + pan,
		RawResponseCode: "05\x00", RawResponseDescription: "Do not honor " + pan + strings.Repeat("x", 2000),
		SchemeTransactionID: pan, ApprovalURL: "https://pay.example/" + pan}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*string{"error code": next.ErrorCode, "raw description": next.RawResponseDescription, "event description": ev.RawResponseDescription} {
		if p == nil || strings.Contains(*p, pan) || !strings.Contains(*p, "[REDACTED-PAN]") {
			t.Errorf("%s: %v", name, p)
		}
	}
	if n := len([]rune(*next.RawResponseDescription)); n != 1000 {
		t.Errorf("description of %d characters stored", n)
	}
	if *next.RawResponseCode != "05\uFFFD" {
		t.Errorf("raw code %q", *next.RawResponseCode)
	}
	if next.PaymentServiceTransactionID != nil || next.SchemeTransactionID != nil || next.PaymentMethod.ApprovalURL != nil {
		t.Errorf("identifiers holding a card number kept: %v %v %v", next.PaymentServiceTransactionID, next.SchemeTransactionID, next.PaymentMethod.ApprovalURL)
	}
}

// Each outcome is an operation by what was asked; one that means nothing
// there is an *OutcomeError.
func TestOutcomeOperations(t *testing.T) {
	auth, capture := newTransaction(coreapi.IntentAuthorize), newTransaction(coreapi.IntentCapture)
	for _, tc := range []struct {
		name string
		f    func(coreapi.Outcome) (coreapi.TransactionOperation, error)
		o    coreapi.Outcome
		want coreapi.TransactionOperation
	}{
		{"authorize-succeeded", auth.AuthorizationOperation, coreapi.OutcomeSucceeded, coreapi.OpAuthorizationSucceeded},
		{"capture-intent-succeeded", capture.AuthorizationOperation, coreapi.OutcomeSucceeded, coreapi.OpSaleSucceeded},
		{"capture-intent-capture-pending", capture.AuthorizationOperation, coreapi.OutcomeCapturePending, coreapi.OpSalePending},
		{"authorize-capture-pending", auth.AuthorizationOperation, coreapi.OutcomeCapturePending, ""},
		{"authorize-approval", auth.AuthorizationOperation, coreapi.OutcomeApprovalRequired, coreapi.OpApprovalRequested},
		{"capture-declined", coreapi.CaptureOperation, coreapi.OutcomeDeclined, coreapi.OpCaptureDeclined},
		{"capture-approval", coreapi.CaptureOperation, coreapi.OutcomeApprovalRequired, ""},
		{"void-pending", coreapi.VoidOperation, coreapi.OutcomePending, coreapi.OpVoidPending},
		{"refund-failed", coreapi.RefundOperation, coreapi.OutcomeFailed, coreapi.OpRefundFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := tc.f(tc.o)
			var oe *coreapi.OutcomeError
			if op != tc.want || (tc.want == "") != errors.As(err, &oe) {
				t.Fatalf("= %q, %v; want %q", op, err, tc.want)
			}
		})
	}
}

func TestNewTransactionValidate(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	valid := coreapi.NewTransaction{Amount: 1299, Currency: "USD", Method: s("card")}
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid: %v", err)
	}
	count := int32(0)
	bad := coreapi.NewTransaction{
		Intent: "sale", Amount: -1, Currency: "usd", Country: s("XX"), PaymentMethodID: s("NOT-A-UUID"), Method: s("Card"),
		BuyerID: s("b"), BuyerExternalIdentifier: s(""), PreviousSchemeTransactionID: s(strings.Repeat("1", 201)),
		ConnectionOptions: map[string]json.RawMessage{"Mock Card": json.RawMessage(`{}`), "mock-card": json.RawMessage(` [1]`)},
		PaymentServiceID:  s("p"), TransactionDetails: coreapi.TransactionDetails{PaymentSource: "web", InstallmentCount: &count,
			CartItems:          []coreapi.CartItem{{Name: "", Quantity: 0, UnitAmount: -1, TaxAmount: n(-2), ProductType: s("food"), SellerCountry: s("zz")}},
			ExternalIdentifier: s(""), Metadata: map[string]string{"a/b": strings.Repeat("v", 201), "": "x"}},
	}
	var ve *coreapi.ValidationError
	if err := bad.Validate(); !errors.As(err, &ve) {
		t.Fatalf("Validate = %v", err)
	}
	got := map[string]bool{}
	for _, p := range ve.Problems {
		got[p.Pointer] = true
	}
	for _, p := range []string{"/intent", "/amount", "/currency", "/country", "/payment_method/id", "/payment_method/method",
		"/buyer_id", "/buyer_external_identifier", "/previous_scheme_transaction_id", "/connection_options/Mock Card",
		"/connection_options/mock-card", "/payment_service_id", "/payment_source", "/installment_count",
		"/cart_items/0/name", "/cart_items/0/quantity", "/cart_items/0/unit_amount", "/cart_items/0/tax_amount",
		"/cart_items/0/product_type", "/cart_items/0/seller_country", "/external_identifier", "/metadata/a~1b", "/metadata/"} {
		if !got[p] {
			t.Errorf("no problem at %s (got %v)", p, got)
		}
	}
	for c, ok := range map[int32]bool{1: true, 100: true, 101: false} {
		n := valid
		n.InstallmentCount = &c
		if err := n.Validate(); (err == nil) != ok {
			t.Errorf("installment_count %d: %v", c, err)
		}
	}
	many := valid
	many.ConnectionOptions = map[string]json.RawMessage{}
	for i := range coreapi.MaxConnectionOptions + 1 {
		many.ConnectionOptions[fmt.Sprint("c", i)] = json.RawMessage(`{}`)
	}
	if err := many.Validate(); !errors.As(err, &ve) || ve.Problems[0].Pointer != "/connection_options" {
		t.Errorf("21 connection options: %v", err)
	}
	if err := (coreapi.NewTransaction{Amount: 1, Currency: "USD"}).Validate(); !errors.As(err, &ve) || ve.Problems[0].Pointer != "/payment_method" {
		t.Errorf("no payment method: %v", err)
	}
	if err := (coreapi.NewRefund{Amount: n(0)}).Validate(); !errors.As(err, &ve) || ve.Problems[0].Pointer != "/amount" {
		t.Errorf("refund of 0: %v", err)
	}
	if err := coreapi.ValidateCaptureAmount(n(coreapi.MaxTransactionAmount + 1)); !errors.As(err, &ve) {
		t.Errorf("capture above the maximum: %v", err)
	}
}

// A direct integration (method paypal) needs an integration client, and
// no other payment may name one.
func TestNewTransactionIntegrationClient(t *testing.T) {
	s := func(v string) *string { return &v }
	var ve *coreapi.ValidationError
	for _, tc := range []struct {
		name           string
		method, client *string
		pmID           *string
		want           string // the problem's type; "" valid
	}{
		{"paypal from the web", s("paypal"), s("web"), nil, ""},
		{"paypal from ios", s("paypal"), s("ios"), nil, ""},
		{"paypal from android", s("paypal"), s("android"), nil, ""},
		{"paypal without a client", s("paypal"), nil, nil, "value_error.missing"},
		{"paypal from a desktop app", s("paypal"), s("desktop"), nil, "value_error.const"},
		{"a card with a client", s("card"), s("web"), nil, "value_error.integration_client.method"},
		{"a stored payment method with a client", nil, s("web"), s("6f1c2a5e-0c1d-4d2b-9f1e-2b7d1c3e4f50"), "value_error.integration_client.method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := coreapi.NewTransaction{Amount: 100, Currency: "USD", Method: tc.method, IntegrationClient: tc.client, PaymentMethodID: tc.pmID}
			err := n.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &ve) || ve.Problems[0].Pointer != "/integration_client" || ve.Problems[0].Type != tc.want {
				t.Fatalf("Validate = %v", err)
			}
		})
	}
}
