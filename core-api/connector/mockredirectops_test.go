package connector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockredirect"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

// The connector's captures, voids and refunds of an approved payment at
// the real mock-redirect: each sent again by its reference is the same
// one; mock-redirect's refusal is a decline with its code; the lookup
// lists them by reference; an unknown payment is ErrNotFound and an
// unreachable simulator an unknown outcome.
func TestMockRedirectOperations(t *testing.T) {
	ctx := context.Background()
	m, err := mockredirect.New(mockredirect.Config{Config: simulator.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0", DeliveryAttempts: 1}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	c := connector.MockRedirect{BaseURL: m.URL()}
	created, err := c.CreatePayment(ctx, connector.RedirectPayment{Reference: "tx-ops", Method: "gcash", Intent: coreapi.IntentAuthorize,
		Amount: 1000, Currency: "PHP", RedirectURL: "https://shop.example/back", NotificationURL: "http://127.0.0.1:1/nobody",
		ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil || created.Outcome != coreapi.OutcomeApprovalRequired {
		t.Fatalf("create: %+v %v", created, err)
	}
	resp, err := http.Post(m.URL()+"/sandbox/payments/"+created.Reference+"/approve", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	op := func(ref string, amount int64) connector.DirectOperation {
		return connector.DirectOperation{OrderID: created.Reference, Reference: ref, Amount: amount, Currency: "PHP"}
	}
	first, err := c.Capture(ctx, op("cap-1", 400))
	if err != nil || first.Outcome != coreapi.OutcomeSucceeded || first.Reference == "" {
		t.Fatalf("capture: %+v %v", first, err)
	}
	for _, tc := range []struct {
		name    string
		do      func() (coreapi.ConnectorResult, error)
		outcome coreapi.Outcome
		code    string
	}{
		{"the same capture", func() (coreapi.ConnectorResult, error) { return c.Capture(ctx, op("cap-1", 400)) }, coreapi.OutcomeSucceeded, ""},
		{"beyond the authorization", func() (coreapi.ConnectorResult, error) { return c.Capture(ctx, op("cap-2", 601)) }, coreapi.OutcomeDeclined, "amount_exceeds_authorized"},
		{"a void after a capture", func() (coreapi.ConnectorResult, error) { return c.Void(ctx, op("void-1", 0)) }, coreapi.OutcomeDeclined, "payment_captured"},
		{"a refund", func() (coreapi.ConnectorResult, error) { return c.Refund(ctx, op("ref-1", 150)) }, coreapi.OutcomeSucceeded, ""},
		{"beyond the captures", func() (coreapi.ConnectorResult, error) { return c.Refund(ctx, op("ref-2", 251)) }, coreapi.OutcomeDeclined, "amount_exceeds_captured"},
	} {
		res, err := tc.do()
		if err != nil || res.Outcome != tc.outcome || res.ErrorCode != tc.code {
			t.Fatalf("%s: %+v %v", tc.name, res, err)
		}
		if tc.name == "the same capture" && res.Reference != first.Reference {
			t.Fatalf("the same capture is another: %s, %s", res.Reference, first.Reference)
		}
	}
	st, err := c.LookupOperations(ctx, created.Reference, connector.Config{})
	if err != nil || len(st.Captures) != 1 || st.Captures[0].Reference != "cap-1" || st.Captures[0].ID != first.Reference ||
		len(st.Refunds) != 1 || st.Refunds[0].Reference != "ref-1" || st.Refunds[0].Amount != 150 || st.Voided {
		t.Fatalf("lookup: %+v %v", st, err)
	}
	if _, err := c.LookupOperations(ctx, "mrp_unknown", connector.Config{}); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("an unknown payment: %v", err)
	}
	gone := connector.MockRedirect{BaseURL: "http://127.0.0.1:1"}
	if res, err := gone.Capture(ctx, op("cap-3", 10)); !errors.Is(err, connector.ErrOutcomeUnknown) || res.Outcome != coreapi.OutcomePending {
		t.Fatalf("unreachable: %+v %v", res, err)
	}
	if _, err := gone.LookupOperations(ctx, created.Reference, connector.Config{}); !errors.Is(err, connector.ErrOutcomeUnknown) {
		t.Fatalf("unreachable lookup: %v", err)
	}
}
