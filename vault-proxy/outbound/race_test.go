//go:build race

package outbound

// raceAllocs is how many allocations the race detector adds to a CheckURL
// call, on average over many calls. Under the race detector sync.Pool
// drops one object in four that is put back, at random, so fasthttp's
// pooled URI is now and then made afresh (measured: one more per call,
// over 1000 calls, on a quiet machine). On a loaded machine a collection
// during the run empties the pools as well, which costs one more: the
// allowance covers both, and the test without the race detector keeps
// the exact count.
const raceAllocs = 2
