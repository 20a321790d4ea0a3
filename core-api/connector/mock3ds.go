package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/zone"
)

// MockThreeDSName is the registry name of the sandbox 3-D Secure
// server's connector, and vault-proxy's destination name for the
// simulator.
const MockThreeDSName = "mock-3ds"

// ThreeDSAuthentication asks a 3-D Secure connector to authenticate the
// buyer of a card payment.
type ThreeDSAuthentication struct {
	MerchantAccountID string
	PaymentMethodID   string // the card's token: its number goes as a placeholder
	Reference         string // the transaction's id
	Amount            int64  // the amount to authenticate (three_d_secure.amount)
	Currency          string
	// Payment is what the buyer, the transaction and the card look like
	// to the scenarios' conditions: display data, never a card number.
	Payment coreapi.ThreeDSPayment
}

// ThreeDSResult is a 3-D Secure connector's answer: the protocol version,
// authentication's status and, when the buyer is authenticated (Y, A),
// the data the authorization carries. A challenge (C) comes with the
// result completing it will give (and that result's data when it is Y).
type ThreeDSResult struct {
	Version         string
	Status          string
	Data            *ThreeDSecureData // Y and A only
	ChallengeResult string            // C only
	ChallengeData   *ThreeDSecureData // C with a Y result only
	Scenario        string            // the scenario that matched, "" for none
}

// ThreeDSScenarios are the merchant account's 3-D Secure scenarios that
// may match a payment, in evaluation order (threeds.Service).
type ThreeDSScenarios interface {
	Candidates(ctx context.Context, merchant string, p coreapi.ThreeDSPayment) ([]coreapi.ThreeDSScenario, error)
}

// MockThreeDS is the connector to mock-3ds, the sandbox 3-D Secure server
// (docs/sandbox/mock-3ds.md), registered outside production only. A 3-D
// Secure server receives the card number, so the authentication request
// goes through vault-proxy's detokenized call as mock-card's do: the
// payment's card, and the card number of each candidate scenario's card
// condition (a vaulted record vault-proxy keeps), are placeholders that
// vault-proxy fills in. core-api learns which scenario matched and its
// outcome, never a number.
type MockThreeDS struct {
	VaultProxy Detokenizer
	Scenarios  ThreeDSScenarios
	// TimeoutMillis bounds each call at vault-proxy (at most 60000); 0 is
	// vault-proxy's default (30 s).
	TimeoutMillis int
}

// Name is "mock-3ds".
func (MockThreeDS) Name() string { return MockThreeDSName }

// The actor and purpose vault-proxy's audit log records for an
// authentication, and its route at mock-3ds.
const (
	mock3DSActor           = "connector:" + MockThreeDSName
	purposeAuthentication  = "3ds-authentication"
	mock3DSAuthentications = "/v1/authentications"
)

// maxCardConditions is how many card conditions one authentication
// carries: vault-proxy takes at most 100 tokens, the payment's card
// first.
const maxCardConditions = 99

type mock3DSRequest struct {
	Amount            int64             `json:"amount"`
	Currency          string            `json:"currency"`
	TransactionAmount int64             `json:"transaction_amount"`
	ExternalID        string            `json:"external_identifier,omitempty"`
	Card              mock3DSCard       `json:"card"`
	Buyer             mock3DSBuyer      `json:"buyer"`
	Scenarios         []mock3DSScenario `json:"scenarios"`
}

type mock3DSCard struct {
	Number string `json:"number"`
}

type mock3DSBuyer struct {
	FirstName    string `json:"first_name,omitempty"`
	LastName     string `json:"last_name,omitempty"`
	EmailAddress string `json:"email_address,omitempty"`
}

type mock3DSScenario struct {
	ID         string            `json:"id"`
	Conditions mock3DSConditions `json:"conditions"`
	Outcome    mock3DSOutcome    `json:"outcome"`
}

type mock3DSConditions struct {
	FirstName          *string `json:"first_name,omitempty"`
	LastName           *string `json:"last_name,omitempty"`
	EmailAddress       *string `json:"email_address,omitempty"`
	Amount             *int64  `json:"amount,omitempty"`
	ExternalIdentifier *string `json:"external_identifier,omitempty"`
	CardNumber         *string `json:"card_number,omitempty"`
	BIN                *string `json:"bin,omitempty"`
}

type mock3DSStatus struct {
	TransactionStatus string `json:"transaction_status"`
}

type mock3DSOutcome struct {
	Version        string         `json:"version"`
	Authentication mock3DSStatus  `json:"authentication"`
	Result         *mock3DSStatus `json:"result,omitempty"`
}

type mock3DSData struct {
	AuthenticationValue string `json:"authentication_value"`
	ECI                 string `json:"eci"`
}

type mock3DSAnswer struct {
	Type              string       `json:"type"`
	ScenarioID        *string      `json:"scenario_id"`
	Version           string       `json:"version"`
	TransactionStatus string       `json:"transaction_status"`
	Result            *mock3DSData `json:"result"`
	Challenge         *struct {
		TransactionStatus string       `json:"transaction_status"`
		Result            *mock3DSData `json:"result"`
	} `json:"challenge"`
}

// Authenticate sends POST /v1/authentications through vault-proxy with
// the candidate scenarios.
func (m MockThreeDS) Authenticate(ctx context.Context, r ThreeDSAuthentication) (ThreeDSResult, error) {
	candidates, err := m.Scenarios.Candidates(ctx, r.MerchantAccountID, r.Payment)
	if err != nil {
		return ThreeDSResult{}, err
	}
	p := r.Payment
	in := mock3DSRequest{Amount: r.Amount, Currency: r.Currency, TransactionAmount: p.Amount, ExternalID: p.ExternalIdentifier,
		Card:  mock3DSCard{Number: "{{ CARD_NUMBER_1 }}"},
		Buyer: mock3DSBuyer{FirstName: p.FirstName, LastName: p.LastName, EmailAddress: p.EmailAddress},
	}
	tokens := []string{r.PaymentMethodID}
	for _, s := range candidates {
		c := s.Conditions
		// A scenario's id is sent as MockCardKey writes a UUID: its digits
		// could read as a card number, which vault-proxy masks in the
		// answer.
		out := mock3DSScenario{ID: MockCardKey(s.ID), Conditions: mock3DSConditions{FirstName: c.FirstName, LastName: c.LastName,
			EmailAddress: c.EmailAddress, Amount: c.Amount, ExternalIdentifier: c.ExternalIdentifier, BIN: c.BIN},
			Outcome: mock3DSOutcome{Version: s.Outcome.Version, Authentication: mock3DSStatus{s.Outcome.AuthenticationStatus}}}
		if s.Outcome.ResultStatus != "" {
			out.Outcome.Result = &mock3DSStatus{s.Outcome.ResultStatus}
		}
		if c.CardCondition != nil {
			if len(tokens) > maxCardConditions {
				return ThreeDSResult{}, fmt.Errorf("mock-3ds: more than %d card conditions may match the payment", maxCardConditions)
			}
			tokens = append(tokens, c.CardCondition.ID)
			ph := "{{ CARD_NUMBER_" + strconv.Itoa(len(tokens)) + " }}"
			out.Conditions.CardNumber = &ph
		}
		in.Scenarios = append(in.Scenarios, out)
	}
	body, err := json.Marshal(in)
	if err != nil {
		return ThreeDSResult{}, err
	}
	resp, err := m.VaultProxy.Detokenize(ctx, r.MerchantAccountID, mock3DSActor, zone.DetokenizeRequest{
		Destination: MockThreeDSName, Method: http.MethodPost, Path: mock3DSAuthentications,
		Headers: map[string]string{"content-type": "application/json"}, Body: string(body),
		PaymentMethod: tokens, Purpose: purposeAuthentication, TimeoutMillis: m.TimeoutMillis,
	})
	if err != nil {
		return ThreeDSResult{}, fmt.Errorf("mock-3ds authentication: %w", err)
	}
	return parseMock3DS(resp)
}

// parseMock3DS maps mock-3ds's answer.
func parseMock3DS(resp *zone.DetokenizeResponse) (ThreeDSResult, error) {
	var a mock3DSAnswer
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &a) != nil || a.Type != "authentication" {
		return ThreeDSResult{}, &ProcessorError{Connector: MockThreeDSName, Status: resp.Status, Code: "unreadable_answer"}
	}
	res := ThreeDSResult{Version: a.Version, Status: a.TransactionStatus, Data: a.Result.data(a.Version, a.TransactionStatus)}
	if a.ScenarioID != nil {
		res.Scenario = mockCardReference(*a.ScenarioID)
	}
	switch {
	case (a.TransactionStatus == coreapi.ThreeDSStatusY || a.TransactionStatus == coreapi.ThreeDSStatusA) && res.Data == nil,
		a.TransactionStatus == coreapi.ThreeDSStatusC && a.Challenge == nil:
		return ThreeDSResult{}, &ProcessorError{Connector: MockThreeDSName, Status: resp.Status, Code: "incomplete_answer"}
	}
	if a.TransactionStatus == coreapi.ThreeDSStatusC {
		res.ChallengeResult = a.Challenge.TransactionStatus
		res.ChallengeData = a.Challenge.Result.data(a.Version, a.Challenge.TransactionStatus)
		if res.ChallengeResult == coreapi.ThreeDSStatusY && res.ChallengeData == nil {
			return ThreeDSResult{}, &ProcessorError{Connector: MockThreeDSName, Status: resp.Status, Code: "incomplete_answer"}
		}
	}
	return res, nil
}

func (d *mock3DSData) data(version, status string) *ThreeDSecureData {
	if d == nil {
		return nil
	}
	return &ThreeDSecureData{Version: version, Status: status, CAVV: d.AuthenticationValue, ECI: d.ECI}
}
