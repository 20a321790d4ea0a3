package logging

import "github.com/payorch/shared/logging/panscan"

// PANMatch is the byte range of one card number found by FindPANs.
type PANMatch = panscan.Match

// ContainsPAN reports whether s holds a run of 12-19 digits (optionally
// separated by single spaces or dashes) that passes the Luhn check, outside
// UUIDs and hex strings. Package panscan has the exact definition; tests
// that scan logs, response bodies or database dumps should use this (or
// LogCatcher / AssertNoPANIn) so they agree with what the redactor masks.
func ContainsPAN(s string) bool { return panscan.Contains(s) }

// FindPANs returns the byte ranges of every card number in s.
func FindPANs(s string) []PANMatch { return panscan.Find(s) }

// Redact returns s with every card number replaced by PANReplacement.
func Redact(s string) string { return panscan.Redact(s) }
