package app

import (
	"testing"

	"github.com/payorch/shared/config"
)

// Card payments go to mock-card where the sandbox simulators run, and to
// no connector in production (PayByCard refuses them there).
func TestCardConnectorOfEachEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  config.Environment
		want bool
	}{{config.Development, true}, {config.Sandbox, true}, {config.Production, false}} {
		t.Run(string(tc.env), func(t *testing.T) {
			registry, _ := connectorsOf(tc.env, nil)
			if got := cardsOf(registry) != nil; got != tc.want {
				t.Fatalf("card connector present = %v, want %v", got, tc.want)
			}
		})
	}
}
