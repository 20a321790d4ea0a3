//go:build !race

package pagination

const raceEnabled = false
