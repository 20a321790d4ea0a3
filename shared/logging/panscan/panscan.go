// Package panscan finds primary account numbers (card numbers) in free text.
//
// It is the single definition of "looks like a card number" used by the log
// redactor, the request id validator, the error envelope and the test-side
// log catcher, so that what one of them masks the others also recognise.
//
// Definition. Text is split into digit groups (maximal runs of ASCII digits).
// Groups joined by exactly one space or one dash form a run ("4111 1111 1111
// 1111", "4111-1111-1111-1111"); any other character, or two separators in a
// row, ends the run. A candidate is any sequence of whole, consecutive groups
// of one run holding 12 to 19 digits in total (card.MinNumberLen and
// card.MaxNumberLen: the shortest cards, some Maestro, have 12); a
// candidate that passes the Luhn check is a PAN. Candidates never start or
// end inside a group, so a
// 20-digit id is not searched for 16-digit windows: that would flag almost
// every long numeric id while protecting only PANs already glued to other
// digits, which no one writes.
//
// Two exceptions keep identifiers, which fill every log, from being masked
// at random (without them one UUID in 350 is flagged, and tests that scan
// logs fail at random):
//
//   - Digits inside a UUID (8-4-4-4-12 hex digits, not touching other hex
//     digits) are not digits for this purpose.
//   - A candidate with a hex letter (a-f, A-F) directly before it and
//     directly after it lies inside a hex string (a hash, a trace id) and is
//     not a PAN. One side is not enough: a PAN followed by "D2512..." is track
//     2 data and must be found.
//
// Roughly one in ten random 12-19 digit numbers passes Luhn, so an order id
// or a millisecond timestamp of that length is masked one time in ten. That
// false positive is the price of never letting a real card number through.
//
// ContainsSchemePAN is the narrower test for values that are digits by
// nature (phone numbers, card networks' transaction ids), which one time in
// ten pass the Luhn check: the same candidates, each a PAN only when its
// digits are also a card number of a known scheme (package cardscheme).
package panscan

import (
	"unsafe"

	"github.com/payorch/shared/cardscheme"
)

// Replacement is what Redact puts in place of each PAN. It keeps nothing of
// the digits: no BIN, no last four.
const Replacement = "[REDACTED-PAN]"

const (
	minDigits = cardscheme.MinLength
	maxDigits = cardscheme.MaxLength
)

// Match is the byte range s[Start:End] of one PAN, separators included.
// Overlapping or adjacent candidates are merged into one Match.
type Match struct {
	Start, End int
}

// Contains reports whether s holds at least one PAN.
func Contains(s string) bool { return contains(s, cardscheme.Luhn) }

// ContainsSchemePAN reports whether s holds a candidate (as Contains reads
// them: runs of digit groups, UUIDs and hex strings aside) whose digits
// are a card number of a known scheme: IIN range and length as well as
// the Luhn check (cardscheme.IsCardNumber). Whatever it finds, Contains
// finds too.
func ContainsSchemePAN(s string) bool { return contains(s, cardscheme.IsCardNumber) }

func contains(s string, isPAN func(string) bool) bool {
	found := false
	scan(s, isPAN, func(Match) bool {
		found = true
		return false
	})
	return found
}

// InIdentifier reports whether an identifier chosen by a client (a request
// id, a merchant account id, a path segment, a placeholder name) holds a
// PAN, without the exceptions made for free text: digits inside a hex
// string or a UUID ("a<16 digits>a", "<8 digits>-<4>-<4>-<4>-...") are
// digits, and '.' and '_' separate groups as '-' does
// ("4111_1111_1111_1111"). Letters become a non-hex letter and separators
// a space, which the scan reads that way.
//
// Every request without an id of its own pays for this (requestid checks
// the ids it generates), so the identifier is rewritten and scanned only
// when a run of digit groups (joined by one separator) reaches a PAN's 12
// digits, which few UUIDs have; the first pass only counts.
func InIdentifier(id string) bool {
	if !hasLongRun(id, true) {
		return false
	}
	var stack [128]byte
	b := stack[:0]
	if len(id) > len(stack) {
		b = make([]byte, 0, len(id))
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case isDigit(c):
			b = append(b, c)
		case isIdentifierSeparator(c):
			b = append(b, ' ')
		default:
			b = append(b, 'x')
		}
	}
	// b does not outlive the call: the scan keeps nothing.
	return Contains(unsafe.String(&b[0], len(b)))
}

// Find returns every PAN in s in order, or nil.
func Find(s string) []Match {
	var out []Match
	scan(s, cardscheme.Luhn, func(m Match) bool {
		out = append(out, m)
		return true
	})
	return out
}

// Redact returns s with every PAN replaced by Replacement. It returns s
// itself, without allocating, when there is nothing to mask, which is the
// common case on hot logging paths.
func Redact(s string) string {
	matches := Find(s)
	if len(matches) == 0 {
		return s
	}
	buf := make([]byte, 0, len(s)+len(matches)*len(Replacement))
	last := 0
	for _, m := range matches {
		buf = append(buf, s[last:m.Start]...)
		buf = append(buf, Replacement...)
		last = m.End
	}
	buf = append(buf, s[last:]...)
	return string(buf)
}

type group struct{ start, end int }

// span is a byte range of s that the scan treats as containing no digits.
type span struct{ start, end int }

// scan calls yield for each masked region of s, left to right, until yield
// returns false. isPAN says which candidates are PANs: the digits of one
// with its separators (isPAN skips those).
func scan(s string, isPAN func(string) bool, yield func(Match) bool) {
	if !hasEnoughDigits(s) || !hasLongRun(s, false) {
		return
	}
	// Backing arrays on the stack cover every realistic string; only
	// pathological input makes append allocate.
	var uuidBuf [8]span
	var groupBuf [32]group
	var coverBuf [32]bool
	uuids := findUUIDs(s, uuidBuf[:0])
	for i := 0; i < len(s); {
		if len(uuids) > 0 && i == uuids[0].start {
			i = uuids[0].end
			uuids = uuids[1:]
			continue
		}
		if !isDigit(s[i]) {
			i++
			continue
		}
		stop := len(s)
		if len(uuids) > 0 {
			stop = uuids[0].start
		}
		groups, total := readRun(s, i, stop, groupBuf[:0])
		i = groups[len(groups)-1].end
		if total < minDigits {
			continue
		}
		covered := coverBuf[:0]
		for range groups {
			covered = append(covered, false)
		}
		markPANs(s, groups, covered, isPAN)
		if !emit(groups, covered, yield) {
			return
		}
	}
}

// hasEnoughDigits is the cheapest prefilter: most strings have fewer than
// 12 digits in total and are skipped after one pass with no allocation.
func hasEnoughDigits(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
			if n >= minDigits {
				return true
			}
		}
	}
	return false
}

// hasLongRun is the second prefilter, for strings with enough digits: it
// reports whether s has a run of digit groups holding a PAN's 12 digits,
// groups being joined by one separator after a digit: a space or a dash as
// readRun joins them, or with identifier set '.', '_' or '-' as
// InIdentifier does. Dates, timestamps and most UUIDs have no such run and
// skip the scan. The runs the scan reads never cross a UUID's start, so
// they are never longer than the ones counted here.
//
// It does not branch on the bytes: in a UUID or a hash digits and hex
// letters alternate unpredictably, and a branch on each would mispredict
// every few bytes.
func hasLongRun(s string, identifier bool) bool {
	run, prevDigit := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		sep := isSeparator(c)
		if identifier {
			sep = isIdentifierSeparator(c)
		}
		digit := b2i(isDigit(c))
		// A mask, not a multiplication: run is carried from byte to byte
		// and an AND is the cheapest way to zero it. Anything but a digit
		// or one separator after a digit ends the run.
		run = (run + digit) & -(digit | b2i(sep)&prevDigit)
		if run >= minDigits {
			return true
		}
		prevDigit = digit
	}
	return false
}

// findUUIDs returns the UUIDs in s, left to right. A UUID cannot be
// followed by another without a non-hex byte between them, so they never
// overlap.
func findUUIDs(s string, out []span) []span {
	for i := 8; i+28 <= len(s); i++ {
		if s[i] == '-' && isUUIDAt(s, i-8) {
			out = append(out, span{i - 8, i + 28})
			i += 28
		}
	}
	return out
}

func isUUIDAt(s string, k int) bool {
	if k+36 > len(s) || (k > 0 && isHex(s[k-1])) || (k+36 < len(s) && isHex(s[k+36])) {
		return false
	}
	for j := 0; j < 36; j++ {
		c := s[k+j]
		switch j {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

// readRun reads the run of groups starting at the digit s[i]. The run ends
// before stop, where a UUID starts: "1234-<uuid>" must not join the two.
func readRun(s string, i, stop int, groups []group) ([]group, int) {
	total := 0
	for {
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		groups = append(groups, group{start, i})
		total += i - start
		if i+1 < stop && (s[i] == ' ' || s[i] == '-') && isDigit(s[i+1]) {
			i++
			continue
		}
		return groups, total
	}
}

// markPANs marks every group that belongs to at least one candidate that
// isPAN accepts. Marking the union (rather than picking one candidate) is
// what guarantees Redact's output contains no PAN: whatever groups survive
// were part of no valid candidate in the input.
func markPANs(s string, groups []group, covered []bool, isPAN func(string) bool) {
	for a := range groups {
		digits := 0
		for b := a; b < len(groups); b++ {
			digits += groups[b].end - groups[b].start
			if digits > maxDigits {
				break
			}
			if digits >= minDigits && !insideHex(s, groups[a].start, groups[b].end) &&
				isPAN(s[groups[a].start:groups[b].end]) {
				for k := a; k <= b; k++ {
					covered[k] = true
				}
			}
		}
	}
}

// insideHex reports whether s[start:end] has a hex letter on both sides.
func insideHex(s string, start, end int) bool {
	return start > 0 && end < len(s) && isHexLetter(s[start-1]) && isHexLetter(s[end])
}

func emit(groups []group, covered []bool, yield func(Match) bool) bool {
	for k := 0; k < len(groups); k++ {
		if !covered[k] {
			continue
		}
		m := Match{Start: groups[k].start}
		for k+1 < len(groups) && covered[k+1] {
			k++
		}
		m.End = groups[k].end
		if !yield(m) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isSeparator(c byte) bool { return c == ' ' || c == '-' }

// isIdentifierSeparator: InIdentifier reads these as isSeparator's space.
func isIdentifierSeparator(c byte) bool { return c == '.' || c == '_' || c == '-' }

func isHexLetter(c byte) bool { return 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isHex(c byte) bool       { return isDigit(c) || isHexLetter(c) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
