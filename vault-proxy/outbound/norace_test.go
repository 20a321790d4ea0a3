//go:build !race

package outbound

const raceEnabled = false

// raceAllocs: see race_test.go.
const raceAllocs = 0
