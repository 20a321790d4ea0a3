package networktoken

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/card"
)

func cardData(pan string) CardData {
	return CardData{MerchantAccountID: "m1", PaymentMethodID: uuid.New(), Scheme: card.DetectScheme([]byte(pan)),
		Number: []byte(pan), Expiry: card.Expiry{Month: 12, Year: 2030}}
}

func TestSandboxTokensKeepTheSchemeAndAreNotTheCard(t *testing.T) {
	now := time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)
	sb := &Sandbox{Now: func() time.Time { return now }}
	for _, tc := range []struct{ pan, prefix string }{
		{"4111111111111111", "489537"},
		{"5555555555554444", "520473"},
		{"2223003122003222", "520473"}, // mastercard 2-series
		{"378282246310005", "374501"},
		{"6011111111111117", "601156"},
	} {
		seen := map[string]bool{}
		for range 20 {
			tok, exp, ref, err := sb.Provision(context.Background(), cardData(tc.pan))
			if err != nil {
				t.Fatalf("%s: %v", tc.pan[:6], err)
			}
			s := string(tok)
			if s == tc.pan || len(s) != len(tc.pan) || !strings.HasPrefix(s, tc.prefix) || !card.Luhn(tok) ||
				card.DetectScheme(tok) != card.DetectScheme([]byte(tc.pan)) {
				t.Fatalf("%s: token %s... is not a %d-digit Luhn-valid number of the card's scheme", tc.pan[:6], s[:6], len(tc.pan))
			}
			if seen[s] {
				t.Fatalf("%s: the same token twice", tc.pan[:6])
			}
			seen[s] = true
			if exp != (card.Expiry{Month: 5, Year: 2029}) {
				t.Fatalf("expiry %v, want 05/29", exp)
			}
			if _, err := sandboxScheme(ref); err != nil || !strings.HasPrefix(ref, "sbx_"+string(card.DetectScheme([]byte(tc.pan)))+"_") {
				t.Fatalf("reference %q", ref)
			}
		}
	}
}

func TestSandboxTestCardsFailProvisioning(t *testing.T) {
	sb := &Sandbox{}
	reasons := map[string]bool{}
	for pan, tc := range card.TestCards() {
		if tc.NetworkTokenRefusal == "" {
			continue
		}
		reasons[tc.NetworkTokenRefusal] = true
		_, _, _, err := sb.Provision(context.Background(), cardData(pan))
		var pe *ProvisioningError
		if !errors.As(err, &pe) || pe.Reason != tc.NetworkTokenRefusal || !errors.Is(err, ErrProvisioning) {
			t.Fatalf("%s...: %v, want %s", pan[:6], err, tc.NetworkTokenRefusal)
		}
		if strings.Contains(err.Error()+pe.Message, pan) {
			t.Fatal("the error echoes the card number")
		}
	}
	// A scheme the sandbox does not serve.
	_, _, _, err := sb.Provision(context.Background(), cardData("3530111333300000"))
	var pe *ProvisioningError
	if !errors.As(err, &pe) || pe.Reason != ReasonSchemeNotSupported {
		t.Fatalf("jcb: %v", err)
	}
	// The refusals of the table are the documented ones.
	if len(reasons) != 2 || !reasons[ReasonDeclined] || !reasons[ReasonNotEligible] {
		t.Fatalf("test card table reasons %v", reasons)
	}
}

func TestSandboxCryptogramsAreFreshAnd28Chars(t *testing.T) {
	sb := &Sandbox{}
	_, _, ref, err := sb.Provision(context.Background(), cardData("4111111111111111"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 50 {
		c, eci, err := sb.Cryptogram(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(string(c))
		if len(c) != 28 || err != nil || len(raw) != 20 || eci != "07" {
			t.Fatalf("cryptogram %q (%v), eci %q", c, err, eci)
		}
		if seen[string(c)] {
			t.Fatal("a cryptogram was repeated")
		}
		seen[string(c)] = true
	}
	for _, bad := range []string{"", "sbx_visa_", "sbx_jcb_00000000000000000000000000000000", "sbx_visa_zz000000000000000000000000000000", "vts_123"} {
		if _, _, err := sb.Cryptogram(context.Background(), bad); !errors.Is(err, ErrUnknownReference) {
			t.Fatalf("reference %q: %v", bad, err)
		}
		if err := sb.Suspend(context.Background(), bad); !errors.Is(err, ErrUnknownReference) {
			t.Fatalf("suspend %q: %v", bad, err)
		}
	}
	for _, op := range []func(context.Context, string) error{sb.Suspend, sb.Resume, sb.Delete} {
		if err := op(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRegistry(t *testing.T) {
	var r Registry
	if _, ok := r.For(card.SchemeVisa); ok {
		t.Fatal("an empty registry serves visa")
	}
	sb := &Sandbox{}
	r.Register(sb, SandboxSchemes...)
	if p, ok := r.For(card.SchemeMastercard); !ok || p != sb {
		t.Fatal("mastercard not served")
	}
	if _, ok := r.For(card.SchemeJCB); ok {
		t.Fatal("jcb served")
	}
	if p, ok := r.ByName("sandbox"); !ok || p != sb {
		t.Fatal("ByName")
	}
	var nilReg *Registry
	if _, ok := nilReg.For(card.SchemeVisa); ok {
		t.Fatal("nil registry")
	}
}
