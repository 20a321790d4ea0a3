// Package apierror is the error envelope both services answer with
// (docs/api-conventions.md, "Errors"):
//
//	{"type":"error","code":"bad_request","status":400,"message":"...",
//	 "details":[{"location":"body","pointer":"/display_name","message":"...",
//	             "type":"value_error.any_str.max_length"}],
//	 "request_id":"...","resource_id":"..."}
//
// Errors are two-tier. An *Error is a domain error whose code and message
// are safe to show a client. Anything else is an internal failure: As turns
// it into a generic server_error and keeps the original only as the
// unexported cause, for logging, so a Vault, pgx or processor message is
// never echoed.
package apierror

import (
	"errors"
	"net/http"
	"strconv"
)

// Codes a client can switch on. They are part of the API: never rename one.
const (
	CodeBadRequest           = "bad_request"
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeDuplicateRecord      = "duplicate_record"
	CodeConcurrentRequest    = "concurrent_request"
	CodeTooLarge             = "too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnprocessableEntity  = "unprocessable_entity"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeTooManyRequests      = "too_many_requests"
	CodeServerError          = "server_error"
	CodeBadGateway           = "bad_gateway"
	CodeGatewayTimeout       = "gateway_timeout"
)

// Locations of a Detail.
const (
	LocationBody   = "body"
	LocationQuery  = "query"
	LocationPath   = "path"
	LocationHeader = "header"
)

// Detail points at one problem in the request.
type Detail struct {
	Location string `json:"location"` // body, query, path or header
	Pointer  string `json:"pointer"`  // JSON pointer into the body, or the parameter or header name
	Message  string `json:"message"`
	Type     string `json:"type"` // machine-readable kind, e.g. value_error.any_str.max_length
}

// Error is an API error. Treat values as immutable once built: the With
// methods return copies, so an *Error kept in a package variable can be
// returned from concurrent requests.
type Error struct {
	Status     int
	Code       string
	Message    string
	Details    []Detail
	RequestID  string // omitted from JSON when empty
	ResourceID string // the existing record of a duplicate_record; omitted when empty

	cause error // never serialised
}

// Error returns "code: message". It never includes the cause, so writing
// err.Error() somewhere public cannot leak an internal message either.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>" // a typed nil in an error interface must not panic when logged
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the internal error behind a server_error made by Internal
// or As, for logging and errors.Is. It is nil for domain errors.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.cause
}

// WithRequestID returns a copy of e carrying the request id.
func (e *Error) WithRequestID(id string) *Error {
	c := *e
	c.RequestID = id
	return &c
}

// WithDetails returns a copy of e with details appended.
func (e *Error) WithDetails(details ...Detail) *Error {
	c := *e
	c.Details = append(append([]Detail(nil), e.Details...), details...)
	return &c
}

// As returns the *Error in err's chain, or, for any other error, a
// server_error with a generic message that wraps err as its cause. It
// returns nil for a nil err.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	return Internal(err)
}

// Write sends e as the response: JSON content type, e.Status, e.JSON().
// Call WithRequestID first to include the id in the body.
func (e *Error) Write(w http.ResponseWriter) {
	body := e.JSON()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}
