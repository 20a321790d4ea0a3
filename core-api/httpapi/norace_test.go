//go:build !race

package httpapi_test

// raceAllocs is what the race detector adds to an allocation count.
const raceAllocs = 0
