// Package requestid generates, validates and carries the X-Request-Id of a
// request, so that one id ties together log lines, error bodies and the calls
// between vault-proxy and core-api.
//
// It depends only on the standard library and panscan; the fasthttp side
// uses Resolve, WithID and FromContext directly.
package requestid

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/uuidtext"
)

// Header is the HTTP header that carries the id, in and out.
const Header = "X-Request-Id"

// MaxLen is the longest incoming id that is honoured.
const MaxLen = 128

// Generate returns a new random id: a version 4 UUID that is Valid (about
// one in a thousand UUIDs has digits that read as a card number, and would
// be replaced by the next hop).
//
// An id is echoed to the client and written to every log line: it must be
// unique, not secret. math/rand/v2's generator (ChaCha8, seeded by the
// runtime from the operating system) gives 122 random bits without the
// getrandom system call crypto/rand makes, on every request that comes
// without an id of its own.
func Generate() string {
	for {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
		b[6] = b[6]&0x0f | 0x40 // version 4
		b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
		var out [36]byte
		if id := string(uuidtext.Append(out[:0], b)); !panscan.InIdentifier(id) {
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
	return !panscan.InIdentifier(id)
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
