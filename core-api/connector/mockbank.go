package connector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// MockBankName is the registry name of the bank sandbox simulator.
const MockBankName = "mock-bank"

// MockBank is the connector of mock-bank, the sandbox bank, registered
// as "mock-bank" in the sandbox and development environments only. Its
// instant bank transfers by QR code (QRConnector, mockbankqr.go) go over
// HTTP to the mock-bank simulator at BaseURL (docs/sandbox/mock-bank.md);
// its bank debit mandates (ACH, SEPA, Bacs) are still answered in process.
//
// Mandate behaviour, so tests and merchants in the sandbox can rely on it:
//
//   - CreateMandate answers at once with a new reference "mbm_" + 24 hex
//     characters and status "active" (a real scheme goes through "pending"
//     and activates on the processor's notification; the simulator skips
//     that wait). It refuses a scheme other than ach, sepa and bacs.
//   - A mandate for the account holder name "Mandate Declined" is answered
//     with status "failed", to exercise the failure path.
//   - RevokeMandate answers status "revoked" for any mandate reference it
//     could have issued (prefix "mbm_"), also when it already was revoked
//     (idempotent), and ErrMockBankUnknownMandate for any other reference.
//
// It keeps no state: the core database's mandates table is the record.
type MockBank struct {
	BaseURL string       // the simulator's; "" refuses QR charges
	HTTP    *http.Client // nil: a client with a 30 s timeout
}

// ErrMockBankUnknownMandate is a mandate reference mock-bank never issued.
var ErrMockBankUnknownMandate = errors.New("mock-bank: unknown mandate")

// DeclinedHolderName makes mock-bank fail a mandate.
const DeclinedHolderName = "Mandate Declined"

// Name is "mock-bank".
func (MockBank) Name() string { return MockBankName }

// CreateMandate simulates a mandate set-up.
func (MockBank) CreateMandate(_ context.Context, r MandateRequest) (MandateResult, error) {
	switch r.Scheme {
	case "ach", "sepa", "bacs":
	default:
		return MandateResult{}, errors.New("mock-bank: unsupported scheme")
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	res := MandateResult{ID: "mbm_" + hex.EncodeToString(b), Status: "active"}
	if r.AccountHolderName == DeclinedHolderName {
		res.Status = "failed"
	}
	return res, nil
}

// RevokeMandate simulates a revocation.
func (MockBank) RevokeMandate(_ context.Context, _, mandateID string) (MandateResult, error) {
	if !strings.HasPrefix(mandateID, "mbm_") {
		return MandateResult{}, ErrMockBankUnknownMandate
	}
	return MandateResult{ID: mandateID, Status: "revoked"}, nil
}
