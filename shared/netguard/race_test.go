//go:build race

package netguard

const raceEnabled = true
