// Package card validates payment card data and carries it in types that
// cannot be printed, logged or serialised by accident.
//
// It is the only place in the product that decides what a valid card number
// (PAN), expiry date and security code are, which scheme a card belongs to
// and which parts of it may be shown (scheme, first 6 or 8, last 4). It does
// no I/O and reads no clock: every function that depends on the date takes
// `now time.Time` from its caller.
//
// # Secret types
//
// [Number] and [SecurityCode] redact themselves in String, GoString, Format
// (every verb), MarshalJSON, MarshalText and slog's LogValue. A Number prints
// as "card(visa ****1111)": scheme and last four, never more, although PCI
// DSS would allow the first six as well. A SecurityCode prints as
// "[REDACTED-CVV]". The only way to the digits is an explicit Reveal.
// Neither type has exported fields or Unmarshal methods, so encoding/gob
// refuses them and encoding/json cannot fill them: card data enters only
// through ParseNumber / ParseSecurityCode (or Validate), which return a
// [FieldError] whose message never repeats the input.
//
// # Why the PAN is a []byte, and what that buys
//
// A Go string is immutable: once a card number is in one, it stays in memory
// until the garbage collector reuses the space, and nothing can overwrite it.
// A Number keeps its digits in a byte array inside one heap object that all
// copies of the Number share, so Zero (on any copy) overwrites the digits
// once the card has been encrypted or substituted into an outbound request,
// and every copy then reads as empty. ParseNumberBytes and
// ParseSecurityCodeBytes take []byte so that a caller who decoded the request
// into its own buffer can clear that buffer too.
//
// This is damage limitation, not a guarantee, and the limits are real:
//
//   - ParseNumber(string) and ParseSecurityCode(string) read from a string
//     that this package cannot clear; prefer the Bytes forms on hot paths.
//   - Everything upstream holds its own copies: the TLS record buffer, the
//     HTTP server's (pooled, in fasthttp's case) body buffer, a JSON decoder's
//     scratch space, the kernel's socket buffers.
//   - The Go runtime and compiler make copies this package never sees: values
//     in registers or spilled to the stack, stacks that are moved when they
//     grow, the old array left behind when a slice is grown by append. Go's
//     collector does not move heap objects today, but the language does not
//     promise that it never will.
//   - Memory can be swapped to disk or written into a core dump (vault-proxy
//     turns core files off for itself, vault-proxy/nodump; swap is the
//     host's to turn off, deploy/production).
//
// So Zero shortens the time a PAN sits in memory this process controls and
// keeps it out of long-lived objects; it does not make a heap dump safe.
// (hashicorp/vault's memzero carries the same caveat.)
//
// # Concurrency
//
// Number and SecurityCode are small handles. Reading them from several
// goroutines is safe; Zero is a write and must not run concurrently with any
// other use of the same value or its copies.
package card
