package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"github.com/payorch/shared/logging/panscan"
)

// TestingT is the part of testing.TB the assertions use. Taking an interface
// keeps package testing out of production binaries that import logging.
type TestingT interface {
	Helper()
	Errorf(format string, args ...any)
}

// LogCatcher is an io.Writer that keeps everything written to it, for tests
// that must prove no card number reached a log. Give it to the real logger
// (logging.New(catcher, slog.LevelDebug)) or to anything else that writes
// text. The zero value is ready to use and safe for concurrent use.
type LogCatcher struct {
	mu sync.Mutex
	// chunks hold the writes in order. Fixed-size chunks, not one growing
	// buffer: a benchmark's stack writes tens of megabytes of access lines,
	// and re-copying them at every doubling made a line cost more in the
	// test than it does in a service.
	chunks [][]byte
}

const catcherChunk = 256 << 10

// Write records p. It never fails.
func (c *LogCatcher) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.chunks)
	if n == 0 || cap(c.chunks[n-1])-len(c.chunks[n-1]) < len(p) {
		c.chunks = append(c.chunks, make([]byte, 0, max(catcherChunk, len(p))))
		n++
	}
	c.chunks[n-1] = append(c.chunks[n-1], p...)
	return len(p), nil
}

// String returns everything written so far.
func (c *LogCatcher) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(bytes.Join(c.chunks, nil))
}

// Lines returns what was written so far split into lines, without the line
// terminators. An unterminated last line is included.
func (c *LogCatcher) Lines() []string {
	s := strings.TrimSuffix(c.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Reset discards everything written so far.
func (c *LogCatcher) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunks = nil
}

// AssertNoPAN fails t if any line written so far contains one of pans or
// any Luhn-valid card number. See AssertNoPANIn.
func (c *LogCatcher) AssertNoPAN(t TestingT, pans ...string) {
	t.Helper()
	AssertNoPANIn(t, "log", c.String(), pans...)
}

// AssertNoPANIn fails t for each line of text (a log, a response body, a
// database dump; what names it in the failure) that contains a card number:
//
//   - any of pans, compared on digits only, so a listed PAN written with
//     spaces or dashes in the text still matches, and a PAN embedded in
//     a longer digit string is still found;
//   - any run ContainsPAN recognises, whether or not it was listed.
//
// Failure messages never print the digits: every digit of the offending
// line is shown as '#'.
func AssertNoPANIn(t TestingT, what, text string, pans ...string) {
	t.Helper()
	wanted := make([]string, 0, len(pans))
	for i, p := range pans {
		d := digitsOnly(p)
		if len(d) == 0 {
			t.Errorf("AssertNoPAN: argument %d has no digits", i)
			continue
		}
		wanted = append(wanted, d)
	}
	for n, line := range strings.Split(text, "\n") {
		if m := panscan.Find(line); len(m) > 0 {
			t.Errorf("%s line %d: card number at byte %d: %s", what, n+1, m[0].Start, maskDigits(line))
			continue
		}
		joined := joinDigitRuns(line)
		for i, d := range wanted {
			if strings.Contains(joined, d) {
				t.Errorf("%s line %d: contains PAN argument %d: %s", what, n+1, i, maskDigits(line))
				break
			}
		}
	}
}

func digitsOnly(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isDigitByte(s[i]) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// joinDigitRuns drops single spaces and dashes between digits, the same
// separators panscan accepts.
func joinDigitRuns(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == ' ' || c == '-') && i > 0 && i+1 < len(s) && isDigitByte(s[i-1]) && isDigitByte(s[i+1]) {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func maskDigits(s string) string {
	const max = 500
	if len(s) > max {
		s = s[:max] + "..."
	}
	b := []byte(s)
	for i, c := range b {
		if isDigitByte(c) {
			b[i] = '#'
		}
	}
	return string(b)
}

// LoggedAccess is an access line (see AccessLine) as a test reads it back.
type LoggedAccess struct {
	Msg, Service, RequestID, Method, Path string
	Status                                int
	HasDuration                           bool
}

// OnlyAccessLine decodes the one line written so far as an access line. It
// fails t, and reports false, unless exactly one JSON line was written.
func (c *LogCatcher) OnlyAccessLine(t TestingT) (LoggedAccess, bool) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(c.String()), "\n")
	var got struct {
		Msg, Service, Method, Path string
		RequestID                  string `json:"request_id"`
		Status                     int
		Duration                   *int64
	}
	if len(lines) != 1 {
		t.Errorf("%d log lines, want one access line", len(lines))
		return LoggedAccess{}, false
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Errorf("the access line is not JSON: %v", err)
		return LoggedAccess{}, false
	}
	return LoggedAccess{Msg: got.Msg, Service: got.Service, RequestID: got.RequestID, Method: got.Method, Path: got.Path,
		Status: got.Status, HasDuration: got.Duration != nil}, true
}
