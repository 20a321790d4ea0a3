//go:build race

package pagination

// raceAllocs is what the race detector adds to an allocation count: a
// scratch state sync.Pool dropped is remade with its two allocations.
const raceAllocs = 2
