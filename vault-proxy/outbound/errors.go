package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/valyala/fasthttp"
)

// Stable error codes. The HTTP layer puts Code in the error envelope's
// "code"; a client may switch on it.
const (
	// CodeHostNotAllowed: the destination is refused by policy: not in the
	// allowed hosts, http where https is required, a forbidden name, or an
	// address (literal or resolved) in a forbidden range. Nothing was sent.
	CodeHostNotAllowed = "forward_host_not_allowed"
	// CodeInvalidURL: the destination URL is malformed or uses a form this
	// package refuses (scheme, userinfo, non-canonical IP, zone, port).
	// Nothing was sent.
	CodeInvalidURL = "forward_invalid_url"
	// CodeTimeout: the call's deadline passed (resolution, connect, TLS,
	// writing the request or reading the response).
	CodeTimeout = "forward_timeout"
	// CodeTLSFailed: the TLS handshake failed or the destination rejected
	// the connection with a TLS alert (untrusted or mismatched certificate,
	// client certificate refused).
	CodeTLSFailed = "forward_tls_failed"
	// CodeConnectionRefused: every checked address of the destination
	// refused the TCP connection. Nothing was sent.
	CodeConnectionRefused = "forward_connection_refused"
	// CodeResponseTooLarge: the response body exceeds
	// Policy.MaxResponseBytes. The request was sent.
	CodeResponseTooLarge = "forward_response_too_large"
	// CodeRequestTooLarge: the request body exceeds Policy.MaxRequestBytes.
	// Nothing was sent.
	CodeRequestTooLarge = "forward_request_too_large"
	// CodeFailed: any other failure (resolution failed, the connection was
	// closed or reset, a malformed response). Whether the destination
	// received the request is unknown; it is never sent again.
	CodeFailed = "forward_failed"
)

// Error is every error Client.Do returns. Message is safe to show a client:
// it never contains request bodies, header values, card data or resolved
// addresses. Rule (set for CodeHostNotAllowed and CodeInvalidURL) names the
// check that refused the destination, for logs and audit records. Err is
// the underlying cause, for logs only; it may name addresses.
type Error struct {
	Code    string
	Message string
	Rule    string
	Err     error
}

// Sentinels for errors.Is: errors.Is(err, outbound.ErrTimeout) matches any
// *Error with that Code.
var (
	ErrHostNotAllowed    = &Error{Code: CodeHostNotAllowed, Message: "destination is not allowed"}
	ErrInvalidURL        = &Error{Code: CodeInvalidURL, Message: "destination URL is not valid"}
	ErrTimeout           = &Error{Code: CodeTimeout, Message: "destination did not answer in time"}
	ErrTLSFailed         = &Error{Code: CodeTLSFailed, Message: "TLS connection to the destination failed"}
	ErrConnectionRefused = &Error{Code: CodeConnectionRefused, Message: "destination refused the connection"}
	ErrResponseTooLarge  = &Error{Code: CodeResponseTooLarge, Message: "destination response is too large"}
	ErrRequestTooLarge   = &Error{Code: CodeRequestTooLarge, Message: "request to the destination is too large"}
	ErrFailed            = &Error{Code: CodeFailed, Message: "request to the destination failed"}
)

const (
	msgClosedNoResponse = "destination closed the connection without a response; it may have received the request"
	msgResolveFailed    = "destination host could not be resolved"
	msgAddressRefused   = "destination address is not allowed"
	msgNameRefused      = "destination host is not allowed"
)

func (e *Error) Error() string {
	s := "outbound: " + e.Code + ": " + e.Message
	if e.Rule != "" {
		s += " (" + e.Rule + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// RefusalRule is Rule, for callers that see the error through an interface
// (the forward engine's audit record).
func (e *Error) RefusalRule() string { return e.Rule }

// Is matches any *Error with the same Code, so the sentinels above work
// with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Status is the HTTP status this package suggests for the error envelope:
// 400 for an invalid URL, 403 for a refused destination, 413 for a request
// too large, 504 for a timeout and 502 for every other upstream failure.
func (e *Error) Status() int {
	switch e.Code {
	case CodeInvalidURL:
		return http.StatusBadRequest
	case CodeHostNotAllowed:
		return http.StatusForbidden
	case CodeRequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// Code returns the code of the *Error in err's chain, or CodeFailed.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeFailed
}

func newError(code, msg string, r rule, err error) *Error {
	e := &Error{Code: code, Message: msg, Err: err}
	if r != ruleOK {
		e.Rule = r.String()
	}
	return e
}

// refused builds the error for a rule that refused a destination.
func refused(r rule) *Error {
	switch {
	case r >= ruleURLMalformed && r <= ruleURLTarget:
		return newError(CodeInvalidURL, urlMessage(r), r, nil)
	case r == ruleURLBodyStream:
		return newError(CodeFailed, "streamed request bodies are not supported", r, nil)
	case r == ruleHTTPSRequired:
		return newError(CodeHostNotAllowed, "destination must use https", r, nil)
	case r == ruleAllowList, r == ruleAllowListRequired:
		return newError(CodeHostNotAllowed, "destination host is not in the allowed hosts", r, nil)
	case r.isAddressRule():
		return newError(CodeHostNotAllowed, msgAddressRefused, r, nil)
	}
	return newError(CodeHostNotAllowed, msgNameRefused, r, nil)
}

func urlMessage(r rule) string {
	switch r {
	case ruleURLScheme:
		return "destination URL must use http or https"
	case ruleURLUserinfo:
		return "destination URL must not contain user information"
	case ruleURLEmptyHost:
		return "destination URL has no host"
	case ruleURLNonASCIIHost:
		return "destination host must be ASCII (use the punycode form)"
	case ruleURLNonCanonicalIP:
		return "destination host is not a valid name or canonical IPv4 address"
	case ruleURLZone:
		return "destination IPv6 address must not have a zone"
	case ruleURLPort:
		return "destination port is not valid"
	case ruleURLTarget:
		return "destination path or query contains characters that must be percent-encoded"
	}
	return "destination URL is not valid"
}

// classify turns whatever fasthttp, the dialer or crypto/tls returned into
// an *Error. It never reads request or response contents.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return newError(CodeResponseTooLarge, ErrResponseTooLarge.Message, ruleOK, err)
	case isTimeout(err):
		return newError(CodeTimeout, ErrTimeout.Message, ruleOK, err)
	case isTLSError(err):
		return newError(CodeTLSFailed, ErrTLSFailed.Message, ruleOK, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return newError(CodeConnectionRefused, ErrConnectionRefused.Message, ruleOK, err)
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return newError(CodeFailed, msgClosedNoResponse, ruleOK, err)
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return newError(CodeFailed, "too many concurrent requests to the destination", ruleOK, err)
	}
	return newError(CodeFailed, ErrFailed.Message, ruleOK, err)
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, fasthttp.ErrTLSHandshakeTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// isTLSError recognises TLS failures that surface after the handshake the
// dialer ran (in TLS 1.3 a server rejects a client certificate only after
// the client considers the handshake done, with an alert on the first
// read) and, defensively, verification errors.
func isTLSError(err error) bool {
	var (
		op    *net.OpError
		alert tls.AlertError
		cve   *tls.CertificateVerificationError
		rhe   tls.RecordHeaderError
		uae   x509.UnknownAuthorityError
		he    x509.HostnameError
		cie   x509.CertificateInvalidError
	)
	if errors.As(err, &op) && op.Op == "remote error" {
		return true // crypto/tls reports a peer's alert as OpError{Op: "remote error"}
	}
	return errors.As(err, &alert) || errors.As(err, &cve) || errors.As(err, &rhe) ||
		errors.As(err, &uae) || errors.As(err, &he) || errors.As(err, &cie)
}
