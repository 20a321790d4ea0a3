package app

import (
	"testing"

	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/config"
)

// Card payments go to mock-card and pix payments to mock-bank where the
// sandbox simulators run, and to no connector in production (PayByCard
// and PayByQR refuse them there).
func TestCardConnectorOfEachEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  config.Environment
		want bool
	}{{config.Development, true}, {config.Sandbox, true}, {config.Production, false}} {
		t.Run(string(tc.env), func(t *testing.T) {
			registry, _ := connectorsOf(tc.env, nil, simulatorURLs{})
			if got := cardsOf(registry) != nil; got != tc.want {
				t.Fatalf("card connector present = %v, want %v", got, tc.want)
			}
			if got := qrsOf(registry) != nil; got != tc.want {
				t.Fatalf("QR connector present = %v, want %v", got, tc.want)
			}
		})
	}
}

// mock-direct's connector is registered where the sandbox simulators run
// and its address is given; never in production.
func TestDirectConnectorOfEachEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  config.Environment
		url  string
		want bool
	}{{config.Sandbox, "http://127.0.0.1:9720", true}, {config.Sandbox, "", false}, {config.Production, "http://127.0.0.1:9720", false}} {
		registry, _ := connectorsOf(tc.env, nil, simulatorURLs{direct: tc.url})
		if _, err := registry.Directs(connector.MockDirectName); (err == nil) != tc.want {
			t.Errorf("%s %q: mock-direct registered = %v, want %v", tc.env, tc.url, err == nil, tc.want)
		}
	}
}

// The 3-D Secure simulator's rule book exists where the sandbox
// simulators run, never in production (its routes are then absent).
func TestThreeDSScenariosOfEachEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  config.Environment
		want bool
	}{{config.Development, true}, {config.Sandbox, true}, {config.Production, false}} {
		m := &Main{Config: Config{Environment: tc.env}}
		if got := m.threeDSScenarios() != nil; got != tc.want {
			t.Errorf("%s: rule book present = %v, want %v", tc.env, got, tc.want)
		}
		if got := m.threeDS(nil).Connector != nil; got != tc.want {
			t.Errorf("%s: mock-3ds present = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// mock-redirect's and mock-antifraud's connectors are registered where
// the sandbox simulators run and their addresses are given; never in
// production.
func TestAddressedConnectorsOfEachEnvironment(t *testing.T) {
	redirect := func(r *connector.Registry) error { _, err := r.Redirects(connector.MockRedirectName); return err }
	antiFraud := func(r *connector.Registry) error { _, err := r.AntiFraud(connector.MockAntiFraudName); return err }
	for _, tc := range []struct {
		name       string
		env        config.Environment
		sims       simulatorURLs
		registered func(*connector.Registry) error
		want       bool
	}{
		{"mock-redirect in the sandbox", config.Sandbox, simulatorURLs{redirect: "http://127.0.0.1:9730"}, redirect, true},
		{"mock-redirect in development", config.Development, simulatorURLs{redirect: "http://127.0.0.1:9730"}, redirect, true},
		{"mock-redirect without an address", config.Sandbox, simulatorURLs{}, redirect, false},
		{"mock-redirect in production", config.Production, simulatorURLs{redirect: "http://127.0.0.1:9730"}, redirect, false},
		{"mock-antifraud in the sandbox", config.Sandbox, simulatorURLs{antiFraud: "http://127.0.0.1:9740"}, antiFraud, true},
		{"mock-antifraud without an address", config.Sandbox, simulatorURLs{}, antiFraud, false},
		{"mock-antifraud in production", config.Production, simulatorURLs{antiFraud: "http://127.0.0.1:9740"}, antiFraud, false},
	} {
		registry, _ := connectorsOf(tc.env, nil, tc.sims)
		if err := tc.registered(registry); (err == nil) != tc.want {
			t.Errorf("%s: registered = %v, want %v", tc.name, err == nil, tc.want)
		}
	}
}
