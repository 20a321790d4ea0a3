//go:build race

package pagination

// raceAllocs is what the race detector adds to an allocation count: it
// makes sync.Pool drop some of what it is given back, and its heavier
// allocations bring more collections, which empty the pool; each scratch
// HMAC state remade costs two allocations. Measured at 2 to 3 on average,
// on a loaded machine.
const raceAllocs = 4
