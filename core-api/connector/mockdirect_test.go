package connector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockdirect"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/secret"
)

// startMockDirect runs the real simulator on a free loopback port.
func startMockDirect(t *testing.T) string {
	t.Helper()
	m, err := mockdirect.New(mockdirect.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m.URL()
}

// decide acts as the buyer at the simulator.
func decide(t *testing.T, base, order, decision string) {
	t.Helper()
	resp, err := http.Post(base+"/sandbox/orders/"+order+"/"+decision, "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %v %v", decision, resp, err)
	}
	resp.Body.Close()
}

func TestMockDirectOrders(t *testing.T) {
	base := startMockDirect(t)
	reg := connector.NewRegistry(connector.MockDirect{BaseURL: base})
	md, err := reg.Directs(connector.MockDirectName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Cards(connector.MockDirectName); !errors.Is(err, connector.ErrUnknown) {
		t.Fatalf("mock-direct is no card connector: %v", err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, intent, decision string
		want                   coreapi.Outcome
		wantErr                error
	}{
		{"capture approved", coreapi.IntentCapture, "approve", coreapi.OutcomeSucceeded, nil},
		{"authorize approved", coreapi.IntentAuthorize, "approve", coreapi.OutcomeSucceeded, nil},
		{"buyer declined", coreapi.IntentCapture, "decline", coreapi.OutcomeDeclined, nil},
		{"buyer undecided", coreapi.IntentAuthorize, "", "", connector.ErrNotApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := "tx-" + strings.ReplaceAll(tc.name, " ", "-")
			res, err := md.CreateOrder(ctx, connector.DirectOrder{Reference: ref, Amount: 1234, Currency: "USD", Intent: tc.intent})
			if err != nil || res.Outcome != coreapi.OutcomeApprovalRequired || res.Reference == "" || !strings.Contains(res.ApprovalURL, res.Reference) {
				t.Fatalf("create: %+v %v", res, err)
			}
			// The same reference is the same order.
			if again, err := md.CreateOrder(ctx, connector.DirectOrder{Reference: ref, Amount: 1234, Currency: "USD", Intent: tc.intent}); err != nil || again.Reference != res.Reference {
				t.Fatalf("create again: %+v %v", again, err)
			}
			if tc.decision != "" {
				decide(t, base, res.Reference, tc.decision)
			}
			c := connector.DirectCompletion{OrderID: res.Reference, Reference: ref, Intent: tc.intent}
			for range 2 { // idempotent by the reference
				got, err := md.Complete(ctx, c)
				if !errors.Is(err, tc.wantErr) || got.Outcome != tc.want {
					t.Fatalf("complete: %+v %v", got, err)
				}
			}
			look, err := md.LookupOrder(ctx, c)
			want := tc.want
			if want == "" {
				want = coreapi.OutcomeApprovalRequired
			}
			if err != nil || look.Outcome != want || look.Reference != res.Reference {
				t.Fatalf("lookup: %+v %v", look, err)
			}
		})
	}
	if _, err := md.LookupOrder(ctx, connector.DirectCompletion{OrderID: "MDO-NONE"}); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
	// Another client's credentials do not see the sandbox client's orders.
	res, _ := md.CreateOrder(ctx, connector.DirectOrder{Reference: "tx-other", Amount: 1, Currency: "EUR", Intent: coreapi.IntentCapture})
	other := connector.Config{Credentials: connector.Secrets{"client_id": secret.New("another_client"), "client_secret": secret.New("s")}}
	if _, err := md.LookupOrder(ctx, connector.DirectCompletion{OrderID: res.Reference, Config: other}); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("another client's order: %v", err)
	}
	if got := md.Client(other); got.ClientID != "another_client" || got.FundingSource != "paypal" {
		t.Fatalf("client: %+v", got)
	}
}

func TestMockDirectUnreachable(t *testing.T) {
	md := connector.MockDirect{BaseURL: "http://127.0.0.1:1"}
	res, err := md.CreateOrder(context.Background(), connector.DirectOrder{Reference: "x", Amount: 1, Currency: "USD", Intent: coreapi.IntentCapture})
	if !errors.Is(err, connector.ErrOutcomeUnknown) || res.Outcome != coreapi.OutcomePending {
		t.Fatalf("unreachable: %+v %v", res, err)
	}
}
