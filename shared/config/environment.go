package config

import "fmt"

// Environment is the deployment environment. It decides what is allowed:
// the local key backend only in development, the sandbox simulators only in
// sandbox. The zero value is not a valid environment, so a service that
// forgot to set one cannot drift into development behaviour.
type Environment string

// The environments.
const (
	Development Environment = "development"
	Sandbox     Environment = "sandbox"
	Production  Environment = "production"
)

// ParseEnvironment accepts exactly "development", "sandbox" or
// "production": no other case, no abbreviation, no surrounding space.
func ParseEnvironment(s string) (Environment, error) {
	switch e := Environment(s); e {
	case Development, Sandbox, Production:
		return e, nil
	}
	return "", fmt.Errorf("config: unknown environment %q: want development, sandbox or production", truncate(s, 32))
}

// Valid reports whether e is one of the three environments.
func (e Environment) Valid() bool {
	_, err := ParseEnvironment(string(e))
	return err == nil
}

func (e Environment) String() string { return string(e) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseEnvironment.
func (e *Environment) UnmarshalText(b []byte) error {
	v, err := ParseEnvironment(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}
