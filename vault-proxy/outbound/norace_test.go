//go:build !race

package outbound

// raceAllocs: see race_test.go.
const raceAllocs = 0
