package connector

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	coreapi "github.com/payorch/core-api"
)

// MockThreeDSName is the sandbox 3-D Secure simulator's connector.
const MockThreeDSName = "mock-3ds"

// ThreeDSAuthentication asks a 3-D Secure connector to authenticate the
// buyer of a card payment.
type ThreeDSAuthentication struct {
	MerchantAccountID string
	Reference         string // the transaction's id
	Amount            int64  // the amount to authenticate (three_d_secure.amount)
	Currency          string
	Scheme            string // the card's scheme: the ECI depends on it
	// Payment is what the buyer, the transaction and the card look like
	// to the simulator's scenarios: display data and the card's
	// fingerprint, never its number.
	Payment coreapi.ThreeDSPayment
}

// ThreeDSResult is a 3-D Secure connector's answer: the protocol version,
// authentication's status and, when the buyer is authenticated (Y, A),
// the data the authorization carries. A challenge (C) comes with the
// result completing it will give.
type ThreeDSResult struct {
	Version         string
	Status          string
	Data            *ThreeDSecureData // Y and A only
	ChallengeResult string            // C only
}

// ThreeDSScenarios evaluates the merchant account's 3-D Secure
// scenarios (threeds.Service).
type ThreeDSScenarios interface {
	Evaluate(ctx context.Context, merchant string, p coreapi.ThreeDSPayment) (coreapi.ThreeDSOutcome, string, error)
}

// MockThreeDS is the sandbox 3-D Secure simulator: it answers what the
// merchant account's scenarios say (docs/three-d-secure.md), with a mock
// CAVV and the ECI of the scheme. It never sees a card number: card
// conditions are matched by fingerprint. Registered outside production
// only.
type MockThreeDS struct {
	Scenarios ThreeDSScenarios
}

// Name is the connector's name.
func (MockThreeDS) Name() string { return MockThreeDSName }

// Authenticate evaluates the scenarios for r.
func (m MockThreeDS) Authenticate(ctx context.Context, r ThreeDSAuthentication) (ThreeDSResult, error) {
	o, _, err := m.Scenarios.Evaluate(ctx, r.MerchantAccountID, r.Payment)
	if err != nil {
		return ThreeDSResult{}, err
	}
	res := ThreeDSResult{Version: o.Version, Status: o.AuthenticationStatus}
	switch o.AuthenticationStatus {
	case coreapi.ThreeDSStatusY, coreapi.ThreeDSStatusA:
		res.Data = AuthenticationData(r.Scheme, o.Version, o.AuthenticationStatus)
	case coreapi.ThreeDSStatusC:
		res.ChallengeResult = o.ResultStatus
	}
	return res, nil
}

// AuthenticationData is the data of an authentication with status (Y or
// A) for a card of scheme: a mock CAVV, 20 random bytes in base64 (28
// characters), and the scheme's ECI.
func AuthenticationData(scheme, version, status string) *ThreeDSecureData {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return &ThreeDSecureData{Version: version, Status: status, CAVV: base64.StdEncoding.EncodeToString(b), ECI: ECI(scheme, status)}
}

// ECI is the electronic commerce indicator of an authentication with
// status for a card of scheme: Mastercard (and Maestro) 02 authenticated,
// 01 attempted, 00 otherwise; Visa and the other schemes 05, 06 and 07.
func ECI(scheme, status string) string {
	eci := [3]string{"05", "06", "07"}
	if scheme == "mastercard" || scheme == "maestro" {
		eci = [3]string{"02", "01", "00"}
	}
	switch status {
	case coreapi.ThreeDSStatusY:
		return eci[0]
	case coreapi.ThreeDSStatusA:
		return eci[1]
	}
	return eci[2]
}
