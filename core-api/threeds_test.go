package coreapi_test

import (
	"slices"
	"testing"

	coreapi "github.com/payorch/core-api"
)

func TestThreeDSConditionsMayMatch(t *testing.T) {
	p := coreapi.ThreeDSPayment{FirstName: "Jane", LastName: "Doe", EmailAddress: "Jane.Doe@Example.com", Amount: 1299,
		ExternalIdentifier: "order-1", BIN: "41111111"}
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	// A card number is compared by the simulator, in the PCI zone: to
	// core-api a card condition may always match.
	card := &coreapi.ThreeDSCardCondition{ID: "7f8c2b1e-6d1a-4f4e-9c2a-1b2c3d4e5f60", BIN: "411111", Last4: "1111"}
	for name, tc := range map[string]struct {
		c    coreapi.ThreeDSConditions
		p    coreapi.ThreeDSPayment
		want bool
	}{
		"no condition":           {coreapi.ThreeDSConditions{}, p, true},
		"all hold":               {coreapi.ThreeDSConditions{FirstName: s("Jane"), LastName: s("Doe"), EmailAddress: s("jane.doe@example.COM"), Amount: n(1299), ExternalIdentifier: s("order-1"), BIN: s("411111")}, p, true},
		"first name differs":     {coreapi.ThreeDSConditions{FirstName: s("jane")}, p, false},
		"last name differs":      {coreapi.ThreeDSConditions{LastName: s("Do")}, p, false},
		"e-mail differs":         {coreapi.ThreeDSConditions{EmailAddress: s("jane@example.com")}, p, false},
		"amount differs":         {coreapi.ThreeDSConditions{Amount: n(1300)}, p, false},
		"external id differs":    {coreapi.ThreeDSConditions{ExternalIdentifier: s("order-2")}, p, false},
		"a card condition":       {coreapi.ThreeDSConditions{CardCondition: card}, p, true},
		"bin prefix":             {coreapi.ThreeDSConditions{BIN: s("4")}, p, true},
		"whole bin":              {coreapi.ThreeDSConditions{BIN: s("41111111")}, p, true},
		"other bin":              {coreapi.ThreeDSConditions{BIN: s("5555")}, p, false},
		"bin longer than card's": {coreapi.ThreeDSConditions{BIN: s("41111111")}, coreapi.ThreeDSPayment{BIN: "411111"}, false},
		"one of two fails":       {coreapi.ThreeDSConditions{FirstName: s("Jane"), Amount: n(1)}, p, false},
	} {
		if got := tc.c.MayMatch(tc.p); got != tc.want {
			t.Errorf("%s: MayMatch = %v, want %v", name, got, tc.want)
		}
	}
}

func TestThreeDSCandidatesEndAtTheFirstWithoutACard(t *testing.T) {
	one := int64(1)
	card := &coreapi.ThreeDSCardCondition{ID: "7f8c2b1e-6d1a-4f4e-9c2a-1b2c3d4e5f60", BIN: "411111", Last4: "1111"}
	scenarios := []coreapi.ThreeDSScenario{
		{ID: "a", Conditions: coreapi.ThreeDSConditions{Amount: &one}},
		{ID: "b", Conditions: coreapi.ThreeDSConditions{CardCondition: card}},
		{ID: "c"},
		{ID: "d"},
	}
	ids := func(ss []coreapi.ThreeDSScenario) (out []string) {
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	for _, tc := range []struct {
		amount int64
		want   []string
	}{{1, []string{"a"}}, {2, []string{"b", "c"}}} {
		if got := ids(coreapi.ThreeDSCandidates(scenarios, coreapi.ThreeDSPayment{Amount: tc.amount})); !slices.Equal(got, tc.want) {
			t.Errorf("amount %d: candidates %v, want %v", tc.amount, got, tc.want)
		}
	}
	if got := coreapi.ThreeDSCandidates(nil, coreapi.ThreeDSPayment{}); len(got) != 0 {
		t.Errorf("no scenarios: %v", got)
	}
}
