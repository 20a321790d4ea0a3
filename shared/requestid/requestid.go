// Package requestid generates, validates and carries the X-Request-Id of a
// request, so that one id ties together log lines, error bodies and the calls
// between vault-proxy and core-api.
//
// It depends only on the standard library and panscan; the fasthttp side
// uses Resolve, WithID and FromContext directly.
package requestid

import (
	"context"
	"crypto/rand"
	"unsafe"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/uuidtext"
)

// Header is the HTTP header that carries the id, in and out.
const Header = "X-Request-Id"

// MaxLen is the longest incoming id that is honoured.
const MaxLen = 128

// Generate returns a new random id: a version 4 UUID from crypto/rand that
// is Valid (about one in a thousand UUIDs has digits that read as a card
// number, and would be replaced by the next hop).
func Generate() string {
	for {
		var b [16]byte
		// crypto/rand.Read never fails on supported platforms (Go 1.24+); it
		// crashes the program rather than return predictable bytes.
		_, _ = rand.Read(b[:])
		b[6] = b[6]&0x0f | 0x40 // version 4
		b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
		var out [36]byte
		if id := string(uuidtext.Append(out[:0], b)); !holdsCardNumber(id) {
			return id
		}
	}
}

// Valid reports whether an incoming id may be honoured: 1 to MaxLen bytes of
// [A-Za-z0-9._-], and no card number. The character set keeps ids safe to
// put in headers, log lines and JSON unescaped. The card number check stops
// a client from planting a PAN that would then be copied into every log
// line, error body and audit row of the request.
func Valid(id string) bool {
	if len(id) == 0 || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !allowed(id[i]) {
			return false
		}
	}
	return !holdsCardNumber(id)
}

// holdsCardNumber is panscan's check without its exceptions for free text:
// an id is chosen by the client, so digits inside a hex string or a UUID
// ("a4111111111111111a", "41111111-1111-1111-...") are digits, and '.' and
// '_' separate groups as '-' does ("4111_1111_1111_1111"). Letters become
// a non-hex letter and separators a space, which panscan reads that way.
//
// Every request without an id of its own pays for this in Generate, so the
// scan is skipped unless a run of digits (groups joined by one separator)
// reaches a card number's 12, which few UUIDs have.
func holdsCardNumber(id string) bool {
	var buf [MaxLen]byte
	b := buf[:0]
	run, longest := 0, 0
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case '0' <= c && c <= '9':
			run++
			longest = max(longest, run)
			b = append(b, c)
		case c == '.' || c == '_' || c == '-':
			if i == 0 || b[len(b)-1] == ' ' || b[len(b)-1] == 'x' {
				run = 0 // two separators in a row, or one after a letter, end a run
			}
			b = append(b, ' ')
		default:
			run = 0
			b = append(b, 'x')
		}
	}
	// b does not outlive the call: panscan keeps nothing.
	return longest >= 12 && panscan.Contains(unsafe.String(&b[0], len(b)))
}

// Resolve returns incoming if it is Valid, else a newly generated id.
func Resolve(incoming string) string {
	if Valid(incoming) {
		return incoming
	}
	return Generate()
}

func allowed(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '.' || c == '_' || c == '-'
}

type ctxKey struct{}

// WithID returns a context carrying id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the id carried by ctx, or "" if there is none.
func FromContext(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}
