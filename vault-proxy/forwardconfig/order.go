package forwardconfig

import "fmt"

// OrderError is a forward's list of authentication methods that names a
// signature method before an mle method. Signature and MLE are the
// positions (0-based) of the first such pair in the list.
type OrderError struct {
	Signature, MLE int
}

func (e *OrderError) Error() string {
	return fmt.Sprintf("forwarding: signature method %d is listed before mle method %d", e.Signature+1, e.MLE+1)
}

// CheckOrder refuses a list of methods, in the order a forward names them,
// in which a signature method comes before an mle method; mtls methods act
// on the connection and may stand anywhere.
//
// A signature's Content-Digest and the content-type it covers describe the
// body as it is when signed. An mle method applied after it replaces both
// with the JWE, so the request would carry the SHA-256 of the card-bearing
// plaintext outside the encryption (with the rest of the body fixed by the
// merchant's template, a way to test guesses of the card number offline),
// under a signature the target cannot verify. Methods are applied in the
// listed order (docs/vault-forward-authentication.md), so the list is
// refused rather than reordered: what a merchant lists is what is applied,
// and an order that never gave a verifiable request is a clear error, not
// a silent fix.
func CheckOrder(methods []*Opened) error {
	signature := -1
	for i, m := range methods {
		switch m.Kind {
		case KindSignature:
			if signature < 0 {
				signature = i
			}
		case KindMLE:
			if signature >= 0 {
				return &OrderError{Signature: signature, MLE: i}
			}
		}
	}
	return nil
}
