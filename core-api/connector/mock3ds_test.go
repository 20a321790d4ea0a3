package connector_test

import (
	"context"
	"encoding/base64"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

func TestECIByScheme(t *testing.T) {
	for _, tc := range []struct{ scheme, status, want string }{
		{"visa", "Y", "05"}, {"visa", "A", "06"}, {"visa", "N", "07"},
		{"mastercard", "Y", "02"}, {"mastercard", "A", "01"}, {"mastercard", "N", "00"},
		{"maestro", "Y", "02"}, {"amex", "Y", "05"},
	} {
		if got := connector.ECI(tc.scheme, tc.status); got != tc.want {
			t.Errorf("ECI(%s, %s) = %s, want %s", tc.scheme, tc.status, got, tc.want)
		}
	}
}

type scenarios coreapi.ThreeDSOutcome

func (s scenarios) Evaluate(context.Context, string, coreapi.ThreeDSPayment) (coreapi.ThreeDSOutcome, string, error) {
	return coreapi.ThreeDSOutcome(s), "", nil
}

func TestMockThreeDSAnswersTheScenario(t *testing.T) {
	for _, tc := range []struct {
		outcome   coreapi.ThreeDSOutcome
		data      bool
		challenge string
	}{
		{coreapi.ThreeDSOutcome{Version: "2.2.0", AuthenticationStatus: "Y"}, true, ""},
		{coreapi.ThreeDSOutcome{Version: "2.1.0", AuthenticationStatus: "A"}, true, ""},
		{coreapi.ThreeDSOutcome{Version: "2.2.0", AuthenticationStatus: "C", ResultStatus: "N"}, false, "N"},
		{coreapi.ThreeDSOutcome{Version: "2.2.0", AuthenticationStatus: "R"}, false, ""},
		{coreapi.ThreeDSOutcome{Version: "2.2.0", AuthenticationStatus: "timeout"}, false, ""},
	} {
		m := connector.MockThreeDS{Scenarios: scenarios(tc.outcome)}
		res, err := m.Authenticate(context.Background(), connector.ThreeDSAuthentication{Scheme: "mastercard"})
		if err != nil || res.Status != tc.outcome.AuthenticationStatus || res.Version != tc.outcome.Version ||
			(res.Data != nil) != tc.data || res.ChallengeResult != tc.challenge {
			t.Fatalf("%+v: %+v %v", tc.outcome, res, err)
		}
		if res.Data != nil {
			raw, err := base64.StdEncoding.DecodeString(res.Data.CAVV)
			if len(res.Data.CAVV) != 28 || err != nil || len(raw) != 20 || res.Data.ECI != connector.ECI("mastercard", res.Status) {
				t.Fatalf("data %+v", res.Data)
			}
		}
	}
}
