package connector_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/zone"
)

// candidates stands in for the scenarios' store.
type candidates []coreapi.ThreeDSScenario

func (c candidates) Candidates(context.Context, string, coreapi.ThreeDSPayment) ([]coreapi.ThreeDSScenario, error) {
	return c, nil
}

const (
	scenarioA = "0b6f3c1e-2d4a-4e8f-9a1b-3c5d7e9f1a2b"
	scenarioB = "5d2e8f4a-1c3b-4a6d-8e9f-0a1b2c3d4e5f"
	condB     = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
	pmToken   = "3f0c2a57-8a4e-4c55-9d5c-4f8e1f7d9a10"
)

func TestMockThreeDSSendsPlaceholdersForEveryCard(t *testing.T) {
	email, one := "jane@example.com", int64(1500)
	rec := &recorder{answer: &zone.DetokenizeResponse{Status: 200, Body: []byte(`{"type":"authentication","scenario_id":null,"version":"2.2.0","transaction_status":"Y","result":{"authentication_value":"AAAAAAAAAAAAAAAAAAAAAAAAAAA=","eci":"05"},"challenge":null}`)}}
	m := connector.MockThreeDS{VaultProxy: rec, Scenarios: candidates{
		{ID: scenarioA, Conditions: coreapi.ThreeDSConditions{EmailAddress: &email, Amount: &one},
			Outcome: coreapi.ThreeDSOutcome{Version: "2.1.0", AuthenticationStatus: "N"}},
		{ID: scenarioB, Conditions: coreapi.ThreeDSConditions{CardCondition: &coreapi.ThreeDSCardCondition{ID: condB, BIN: "411111", Last4: "1111"}},
			Outcome: coreapi.ThreeDSOutcome{Version: "2.2.0", AuthenticationStatus: "C", ResultStatus: "Y"}},
	}}
	_, err := m.Authenticate(context.Background(), connector.ThreeDSAuthentication{MerchantAccountID: "m-1", PaymentMethodID: pmToken,
		Reference: "txn-1", Amount: 2000, Currency: "EUR", Payment: coreapi.ThreeDSPayment{EmailAddress: email, Amount: 1500, BIN: "41111111"}})
	if err != nil {
		t.Fatal(err)
	}
	got := rec.got
	if rec.merchant != "m-1" || rec.actor != "connector:mock-3ds" || got.Destination != "mock-3ds" || got.Method != "POST" ||
		got.Path != "/v1/authentications" || got.Purpose != "3ds-authentication" || !slices.Equal(got.PaymentMethod, []string{pmToken, condB}) {
		t.Fatalf("call %+v by %s/%s", got, rec.merchant, rec.actor)
	}
	want := `{"amount":2000,"currency":"EUR","transaction_amount":1500,"card":{"number":"{{ CARD_NUMBER_1 }}"},` +
		`"buyer":{"email_address":"jane@example.com"},"scenarios":[` +
		`{"id":"` + connector.MockCardKey(scenarioA) + `","conditions":{"email_address":"jane@example.com","amount":1500},"outcome":{"version":"2.1.0","authentication":{"transaction_status":"N"}}},` +
		`{"id":"` + connector.MockCardKey(scenarioB) + `","conditions":{"card_number":"{{ CARD_NUMBER_2 }}"},"outcome":{"version":"2.2.0","authentication":{"transaction_status":"C"},"result":{"transaction_status":"Y"}}}]}`
	if got.Body != want {
		t.Fatalf("body\n%s\nwant\n%s", got.Body, want)
	}
	// Nothing the scenarios hold of a card goes but its placeholder.
	if strings.Contains(got.Body, condB) || strings.Contains(got.Body, "411111") {
		t.Fatalf("the body names the card condition: %s", got.Body)
	}
}

func TestMockThreeDSReadsTheAnswer(t *testing.T) {
	cavv := "q8U2Zx1y0b3Tn4Rk8sV5Wc7Ye9A="
	for _, tc := range []struct {
		name, body string
		want       connector.ThreeDSResult
		err        bool
	}{
		{"frictionless, no scenario", `{"type":"authentication","scenario_id":null,"version":"2.2.0","transaction_status":"Y","result":{"authentication_value":"` + cavv + `","eci":"02"}}`,
			connector.ThreeDSResult{Version: "2.2.0", Status: "Y", Data: &connector.ThreeDSecureData{Version: "2.2.0", Status: "Y", CAVV: cavv, ECI: "02"}}, false},
		{"a scenario's rejection", `{"type":"authentication","scenario_id":"` + connector.MockCardKey(scenarioA) + `","version":"2.1.0","transaction_status":"R","result":null}`,
			connector.ThreeDSResult{Version: "2.1.0", Status: "R", Scenario: scenarioA}, false},
		{"a challenge", `{"type":"authentication","scenario_id":"` + connector.MockCardKey(scenarioB) + `","version":"2.2.0","transaction_status":"C","challenge":{"transaction_status":"Y","result":{"authentication_value":"` + cavv + `","eci":"05"}}}`,
			connector.ThreeDSResult{Version: "2.2.0", Status: "C", Scenario: scenarioB, ChallengeResult: "Y",
				ChallengeData: &connector.ThreeDSecureData{Version: "2.2.0", Status: "Y", CAVV: cavv, ECI: "05"}}, false},
		{"Y without data", `{"type":"authentication","version":"2.2.0","transaction_status":"Y"}`, connector.ThreeDSResult{}, true},
		{"C without its result", `{"type":"authentication","version":"2.2.0","transaction_status":"C"}`, connector.ThreeDSResult{}, true},
		{"not an authentication", `{"type":"error","code":"invalid_card"}`, connector.ThreeDSResult{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := connector.MockThreeDS{VaultProxy: &recorder{answer: &zone.DetokenizeResponse{Status: 200, Body: json.RawMessage(tc.body)}}, Scenarios: candidates{}}
			res, err := m.Authenticate(context.Background(), connector.ThreeDSAuthentication{PaymentMethodID: pmToken})
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			var pe *connector.ProcessorError
			if tc.err && !errors.As(err, &pe) {
				t.Fatalf("err %T %v, want a *ProcessorError", err, err)
			}
			g, w := res, tc.want
			if g.Version != w.Version || g.Status != w.Status || g.Scenario != w.Scenario || g.ChallengeResult != w.ChallengeResult ||
				!eqData(g.Data, w.Data) || !eqData(g.ChallengeData, w.ChallengeData) {
				t.Fatalf("result %+v, want %+v", g, w)
			}
		})
	}
}

func eqData(a, b *connector.ThreeDSecureData) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func TestMockThreeDSVaultProxyRefusal(t *testing.T) {
	m := connector.MockThreeDS{VaultProxy: &recorder{err: coreapi.ErrVaultProxyNotFound}, Scenarios: candidates{}}
	if _, err := m.Authenticate(context.Background(), connector.ThreeDSAuthentication{PaymentMethodID: pmToken}); !errors.Is(err, coreapi.ErrVaultProxyNotFound) {
		t.Fatalf("err %v", err)
	}
}
