//go:build race

package outbound

// raceAllocs is how many allocations the race detector adds to a CheckURL
// call, on average over many calls. Under the race detector sync.Pool
// drops one object in four that is put back, at random, so fasthttp's
// pooled URI is now and then made afresh (measured: one more per call,
// over 1000 calls, in every run).
const raceAllocs = 1
