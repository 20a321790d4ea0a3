//go:build !race

package pagination

// raceAllocs is what the race detector adds to an allocation count.
const raceAllocs = 0
