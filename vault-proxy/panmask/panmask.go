// Package panmask masks card numbers in what a third party answered before
// the answer leaves the PCI zone. A processor that echoes the request it
// was sent, or quotes the card number in an error, must not put it into
// core-api's zone; what looks like a card number is what
// shared/logging/panscan finds, and it is replaced by panscan.Replacement.
//
// Every function returns its input itself, without copying, when it holds
// no card number: panscan's prefilters reject most text in one or two
// passes, so an answer without a card number costs a scan and no
// allocation.
package panmask

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/payorch/shared/logging/panscan"
)

// Found is how many card numbers were masked in one answer, and where. It
// is written as it is into the call's audit record: counts, never values.
type Found struct {
	StatusLine int `json:"status_line"` // the reason phrase
	Headers    int `json:"headers"`     // names and values
	Body       int `json:"body"`
}

// Total is the number of card numbers masked.
func (f Found) Total() int { return f.StatusLine + f.Headers + f.Body }

// String returns s with every card number masked, and how many there were.
func String(s string) (string, int) {
	// A view, not a copy: Text keeps nothing of it and copies what it
	// masks.
	b, n := Text(unsafe.Slice(unsafe.StringData(s), len(s)))
	if n == 0 {
		return s, 0
	}
	return string(b), n
}

// Text returns b with every card number masked, and how many there were.
// b is never changed: a masked answer is a new slice.
func Text(b []byte) ([]byte, int) {
	return mask(b, false)
}

// JSON is Text for b holding valid JSON, keeping it valid: a card number
// in a string (or a key) is replaced inside the string; a number that is
// one becomes the string panscan.Replacement, sign, fraction and exponent
// included. A card number that starts inside a \u escape is masked with
// the escape, so the escape is never left cut in half.
func JSON(b []byte) ([]byte, int) {
	return mask(b, true)
}

func mask(b []byte, isJSON bool) ([]byte, int) {
	if len(b) == 0 {
		return b, 0
	}
	// A view, not a copy: Find keeps nothing of s, and a body is up to the
	// destination client's 10 MiB.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	matches := panscan.Find(s)
	if len(matches) == 0 {
		return b, 0
	}
	return replace(make([]byte, 0, len(b)+len(matches)*(len(panscan.Replacement)+2)), s, matches, isJSON), len(matches)
}

// replace appends s to out with each match replaced. For JSON it follows
// which bytes are inside strings, from one match to the next, so each
// match is known to be in a string or in a number: the bytes panscan
// matches (digits and single spaces or dashes between them) never hold a
// quote or a backslash, and valid JSON has no run of them outside a string
// that is not within one number.
func replace(out []byte, s string, matches []panscan.Match, isJSON bool) []byte {
	var js jsonState
	last := 0
	for _, m := range matches {
		if m.Start < last { // inside a number already masked whole
			continue
		}
		start, end, quote := m.Start, m.End, false
		if isJSON {
			js.advance(s, m.Start)
			switch {
			case !js.inString:
				start, end, quote = numberStart(s, start), numberEnd(s, end), true
			case js.escapeEnd > m.Start:
				start = js.escapeStart
			}
			js.pos = end
		}
		out = append(out, s[last:start]...)
		if quote {
			out = append(out, '"')
		}
		out = append(out, panscan.Replacement...)
		if quote {
			out = append(out, '"')
		}
		last = end
	}
	return append(out, s[last:]...)
}

// jsonState is where a left-to-right reading of a JSON text is.
type jsonState struct {
	pos      int // read up to here
	inString bool
	// The last escape read in the current string: s[escapeStart:escapeEnd].
	escapeStart, escapeEnd int
}

// advance reads s up to to. An escape may run past to (a match starts
// inside it); the caller then goes on from the match's end, past it.
func (j *jsonState) advance(s string, to int) {
	for i := j.pos; i < to; i++ {
		switch c := s[i]; {
		case c == '"':
			j.inString = !j.inString
		case c == '\\' && j.inString:
			n := 2
			if i+1 < len(s) && s[i+1] == 'u' {
				n = 6
			}
			j.escapeStart, j.escapeEnd = i, min(i+n, len(s))
			i += n - 1
		}
	}
}

// numberStart and numberEnd widen a match outside any string to the JSON
// number holding it. Valid JSON puts none of these bytes right before or
// after a number.
func numberStart(s string, i int) int {
	for i > 0 && isNumberByte(s[i-1]) {
		i--
	}
	return i
}

func numberEnd(s string, i int) int {
	for i < len(s) && isNumberByte(s[i]) {
		i++
	}
	return i
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || strings.IndexByte("+-.eE", c) >= 0
}

// Counter counts, for the process's lifetime, the answers in which card
// numbers were masked and the numbers masked: how often a destination
// sends card data back, for operators and alerts. Safe for concurrent use.
type Counter struct {
	answers, numbers atomic.Uint64
}

// Totals is a Counter's reading.
type Totals struct {
	Answers, Numbers uint64
}

// Add counts one answer's masked numbers; an answer with none is not
// counted.
func (c *Counter) Add(f Found) {
	if n := f.Total(); n > 0 {
		c.answers.Add(1)
		c.numbers.Add(uint64(n))
	}
}

// Load reads the counter.
func (c *Counter) Load() Totals {
	return Totals{Answers: c.answers.Load(), Numbers: c.numbers.Load()}
}
