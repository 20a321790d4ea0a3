//go:build race

package pagination

const raceEnabled = true
