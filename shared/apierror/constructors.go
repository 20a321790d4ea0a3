package apierror

import "net/http"

// New returns an error with the given status, code and message. An empty
// message becomes the status text; a status outside 400-599 becomes 500,
// since a success status in an error body would mislead every client. An
// empty code becomes the standard code for the status.
func New(status int, code, message string, details ...Detail) *Error {
	if status < 400 || status > 599 {
		status, code = http.StatusInternalServerError, CodeServerError
	}
	if code == "" {
		code = codeFor(status)
	}
	if message == "" {
		message = defaultMessage(status)
	}
	return &Error{Status: status, Code: code, Message: message, Details: details}
}

// BadRequest (400): malformed JSON, bad values, unknown fields.
func BadRequest(message string, details ...Detail) *Error {
	return New(http.StatusBadRequest, CodeBadRequest, message, details...)
}

// Unauthorized (401): missing, expired or badly signed credentials.
func Unauthorized(message string) *Error {
	return New(http.StatusUnauthorized, CodeUnauthorized, message)
}

// Forbidden (403): valid credentials without the needed scope.
func Forbidden(message string) *Error {
	return New(http.StatusForbidden, CodeForbidden, message)
}

// NotFound (404), also for a resource of another merchant account.
func NotFound(message string) *Error {
	return New(http.StatusNotFound, CodeNotFound, message)
}

// MethodNotAllowed (405). The caller sets the Allow header.
func MethodNotAllowed(message string) *Error {
	return New(http.StatusMethodNotAllowed, CodeMethodNotAllowed, message)
}

// DuplicateRecord (409) names the existing record in resource_id.
func DuplicateRecord(message, resourceID string) *Error {
	e := New(http.StatusConflict, CodeDuplicateRecord, message)
	e.ResourceID = resourceID
	return e
}

// ConcurrentRequest (409): the same idempotency key is still being
// processed.
func ConcurrentRequest(message string) *Error {
	return New(http.StatusConflict, CodeConcurrentRequest, message)
}

// TooLarge (413): the request body exceeds the limit.
func TooLarge(message string) *Error {
	return New(http.StatusRequestEntityTooLarge, CodeTooLarge, message)
}

// UnsupportedMediaType (415).
func UnsupportedMediaType(message string) *Error {
	return New(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, message)
}

// Unprocessable (422): well-formed input that breaks a business rule.
func Unprocessable(message string, details ...Detail) *Error {
	return New(http.StatusUnprocessableEntity, CodeUnprocessableEntity, message, details...)
}

// IdempotencyKeyReused (422): the same key with a different payload.
func IdempotencyKeyReused(message string) *Error {
	return New(http.StatusUnprocessableEntity, CodeIdempotencyKeyReused, message)
}

// TooManyRequests (429). The caller sets Retry-After.
func TooManyRequests(message string) *Error {
	return New(http.StatusTooManyRequests, CodeTooManyRequests, message)
}

// Internal (500) is the answer for any failure that is not a domain error.
// The message is always the generic one; cause is kept for logging only.
func Internal(cause error) *Error {
	e := New(http.StatusInternalServerError, CodeServerError, "")
	e.cause = cause
	return e
}

// BadGateway (502): an upstream (processor, Vault, the other zone) failed.
// Give a message of your own, never the upstream's text.
func BadGateway(message string) *Error {
	return New(http.StatusBadGateway, CodeBadGateway, message)
}

// GatewayTimeout (504): an upstream did not answer in time.
func GatewayTimeout(message string) *Error {
	return New(http.StatusGatewayTimeout, CodeGatewayTimeout, message)
}

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeDuplicateRecord
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return CodeUnprocessableEntity
	case http.StatusTooManyRequests:
		return CodeTooManyRequests
	case http.StatusBadGateway:
		return CodeBadGateway
	case http.StatusGatewayTimeout:
		return CodeGatewayTimeout
	}
	if status >= 500 {
		return CodeServerError
	}
	return CodeBadRequest
}

// defaultMessage is the lower-case status text ("not found"); for 500 it
// is "internal server error", the only message a server_error ever has
// unless the code chose one.
func defaultMessage(status int) string {
	t := http.StatusText(status)
	if t == "" {
		return "error"
	}
	b := []byte(t)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
