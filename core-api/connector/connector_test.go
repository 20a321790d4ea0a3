package connector_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/payorch/core-api/connector"
)

func TestRegistryAndMockBank(t *testing.T) {
	r := connector.NewRegistry(connector.MockBank{})
	if got := r.Names(); len(got) != 1 || got[0] != "mock-bank" {
		t.Fatalf("names = %v", got)
	}
	if _, err := r.Mandates("mock-card"); !errors.Is(err, connector.ErrUnknown) {
		t.Fatalf("unknown connector: %v", err)
	}
	mb, err := r.Mandates("mock-bank")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, scheme := range []string{"ach", "sepa", "bacs"} {
		m, err := mb.CreateMandate(ctx, connector.MandateRequest{Scheme: scheme, AccountHolderName: "Jane"})
		if err != nil || m.Status != "active" || !strings.HasPrefix(m.ID, "mbm_") || len(m.ID) != 28 {
			t.Fatalf("%s: %+v %v", scheme, m, err)
		}
		for range 2 { // idempotent
			rv, err := mb.RevokeMandate(ctx, "default", m.ID)
			if err != nil || rv.Status != "revoked" || rv.ID != m.ID {
				t.Fatalf("revoke: %+v %v", rv, err)
			}
		}
	}
	if _, err := mb.CreateMandate(ctx, connector.MandateRequest{Scheme: "swift"}); err == nil {
		t.Fatal("unsupported scheme accepted")
	}
	if m, _ := mb.CreateMandate(ctx, connector.MandateRequest{Scheme: "ach", AccountHolderName: connector.DeclinedHolderName}); m.Status != "failed" {
		t.Fatalf("declined: %+v", m)
	}
	if _, err := mb.RevokeMandate(ctx, "default", "other_1"); !errors.Is(err, connector.ErrMockBankUnknownMandate) {
		t.Fatalf("unknown mandate: %v", err)
	}
}
