package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/payorch/shared/jsonenc"
	"github.com/payorch/shared/logging/panscan"
)

// ErrInvalidEnvelope is returned by Parse for a body that is not an error
// envelope.
var ErrInvalidEnvelope = errors.New("apierror: not an error envelope")

// JSON returns the envelope. It is hand-written for the error path, which
// is hot under attack (floods of 401 and 429), and produces exactly what
// encoding/json would for the same fields. details is always an array.
//
// Every text field is passed through panscan.Redact on the way out: an error
// body is a response of the non-PCI zone, and a message that quoted user
// input must not carry a card number out with it.
func (e *Error) JSON() []byte {
	b := make([]byte, 0, 128+len(e.Message)+len(e.Details)*96)
	b = append(b, `{"type":"error","code":`...)
	b = appendString(b, e.Code)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	b = append(b, `,"details":[`...)
	for i, d := range e.Details {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"location":`...)
		b = appendString(b, d.Location)
		b = append(b, `,"pointer":`...)
		b = appendString(b, d.Pointer)
		b = append(b, `,"message":`...)
		b = appendString(b, d.Message)
		b = append(b, `,"type":`...)
		b = appendString(b, d.Type)
		b = append(b, '}')
	}
	b = append(b, ']')
	if e.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendString(b, e.RequestID)
	}
	if e.ResourceID != "" {
		b = append(b, `,"resource_id":`...)
		b = appendString(b, e.ResourceID)
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with JSON.
func (e *Error) MarshalJSON() ([]byte, error) { return e.JSON(), nil }

// envelope is the wire form, for decoding.
type envelope struct {
	Type       string   `json:"type"`
	Code       string   `json:"code"`
	Status     int      `json:"status"`
	Message    string   `json:"message"`
	Details    []Detail `json:"details"`
	RequestID  string   `json:"request_id"`
	ResourceID string   `json:"resource_id"`
}

// Parse decodes an error body, such as one vault-proxy or core-api sent the
// other. It fails with ErrInvalidEnvelope unless type is "error", status is
// 400-599 and code is set. Details is never nil in the result.
func Parse(body []byte) (*Error, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidEnvelope, err)
	}
	if env.Type != "error" || env.Code == "" || env.Status < 400 || env.Status > 599 {
		return nil, ErrInvalidEnvelope
	}
	if env.Details == nil {
		env.Details = []Detail{}
	}
	return &Error{
		Status: env.Status, Code: env.Code, Message: env.Message, Details: env.Details,
		RequestID: env.RequestID, ResourceID: env.ResourceID,
	}, nil
}

// appendString appends s as a JSON string the way encoding/json does, with
// any card number in it masked first.
func appendString(b []byte, s string) []byte {
	return jsonenc.AppendString(b, panscan.Redact(s))
}
