package coreapi_test

import (
	"testing"

	coreapi "github.com/payorch/core-api"
)

func TestThreeDSConditionsMatch(t *testing.T) {
	p := coreapi.ThreeDSPayment{FirstName: "Jane", LastName: "Doe", EmailAddress: "Jane.Doe@Example.com", Amount: 1299,
		ExternalIdentifier: "order-1", CardFingerprint: "fp_card", BIN: "41111111"}
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	for name, tc := range map[string]struct {
		c    coreapi.ThreeDSConditions
		p    coreapi.ThreeDSPayment
		want bool
	}{
		"no condition":            {coreapi.ThreeDSConditions{}, p, true},
		"all hold":                {coreapi.ThreeDSConditions{FirstName: s("Jane"), LastName: s("Doe"), EmailAddress: s("jane.doe@example.COM"), Amount: n(1299), ExternalIdentifier: s("order-1"), CardFingerprint: s("fp_card"), BIN: s("411111")}, p, true},
		"first name differs":      {coreapi.ThreeDSConditions{FirstName: s("jane")}, p, false},
		"last name differs":       {coreapi.ThreeDSConditions{LastName: s("Do")}, p, false},
		"e-mail differs":          {coreapi.ThreeDSConditions{EmailAddress: s("jane@example.com")}, p, false},
		"amount differs":          {coreapi.ThreeDSConditions{Amount: n(1300)}, p, false},
		"external id differs":     {coreapi.ThreeDSConditions{ExternalIdentifier: s("order-2")}, p, false},
		"other card":              {coreapi.ThreeDSConditions{CardFingerprint: s("fp_other")}, p, false},
		"card condition, no card": {coreapi.ThreeDSConditions{CardFingerprint: s("fp_card")}, coreapi.ThreeDSPayment{}, false},
		"bin prefix":              {coreapi.ThreeDSConditions{BIN: s("4")}, p, true},
		"whole bin":               {coreapi.ThreeDSConditions{BIN: s("41111111")}, p, true},
		"other bin":               {coreapi.ThreeDSConditions{BIN: s("5555")}, p, false},
		"bin longer than card's":  {coreapi.ThreeDSConditions{BIN: s("41111111")}, coreapi.ThreeDSPayment{BIN: "411111"}, false},
		"one of two fails":        {coreapi.ThreeDSConditions{FirstName: s("Jane"), Amount: n(1)}, p, false},
	} {
		if got := tc.c.Matches(tc.p); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", name, got, tc.want)
		}
	}
}

func TestEvaluateThreeDSFirstMatchWins(t *testing.T) {
	one := int64(1)
	scenarios := []coreapi.ThreeDSScenario{
		{ID: "a", Conditions: coreapi.ThreeDSConditions{Amount: &one}, Outcome: coreapi.ThreeDSOutcome{AuthenticationStatus: "N"}},
		{ID: "b", Outcome: coreapi.ThreeDSOutcome{AuthenticationStatus: "C", ResultStatus: "Y"}},
		{ID: "c", Outcome: coreapi.ThreeDSOutcome{AuthenticationStatus: "R"}},
	}
	if o, s := coreapi.EvaluateThreeDS(scenarios, coreapi.ThreeDSPayment{Amount: 1}); s.ID != "a" || o.AuthenticationStatus != "N" {
		t.Errorf("amount 1: %+v from %v", o, s)
	}
	if o, s := coreapi.EvaluateThreeDS(scenarios, coreapi.ThreeDSPayment{Amount: 2}); s.ID != "b" || o.ResultStatus != "Y" {
		t.Errorf("amount 2: %+v from %v", o, s)
	}
	if o, s := coreapi.EvaluateThreeDS(nil, coreapi.ThreeDSPayment{}); s != nil || o != coreapi.FrictionlessOutcome {
		t.Errorf("no scenarios: %+v from %v", o, s)
	}
}
