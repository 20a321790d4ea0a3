package signing

// CodeAuthenticationFailed is the error code a forward reports when an
// authentication method cannot be applied. It is the same code the mle
// package uses; each package defines its own Error so that neither depends
// on the other.
const CodeAuthenticationFailed = "authentication_failed"

// Error is returned for every failure of this package. Message is safe to
// show to the merchant and to log: it names the method, the field or the
// component at fault, but never carries key material, and for that reason
// the underlying parser errors are deliberately not wrapped (their text is
// not under our control).
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func failf(msg string) *Error {
	return &Error{Code: CodeAuthenticationFailed, Message: "signature method: " + msg}
}
