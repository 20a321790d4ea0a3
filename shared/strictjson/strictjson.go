// Package strictjson is the one definition of a strict JSON request body,
// for both services: which fields a body may have, at every depth (those
// of a Go type's json tags, matched exactly, embedded structs flattened),
// which JSON values each may hold, and how every problem is reported: an
// apierror.Detail at location body with the RFC 6901 pointer of the value
// and one of these types:
//
//   - value_error.extra: a field the type does not have;
//   - value_error.duplicate: a field given twice in one object;
//   - type_error.str, type_error.integer, type_error.bool,
//     type_error.float, type_error.dict, type_error.list: a value of the
//     wrong JSON type (or an integer out of the field's range);
//   - type_error.none.not_allowed: null for a field that is not nullable.
//
// Nullable are pointers, slices, maps, interfaces and types with an
// `ElemType() reflect.Type` method (an optional value such as core-api's
// Optional), whose non-null values are checked as that type. Other
// json.Unmarshaler types are checked by unmarshalling the value alone,
// so their errors carry the right pointer too. Value rules (lengths,
// formats, required fields) are the domain's: this package checks only
// that the type can hold the body. Every problem is reported at once, up
// to MaxDetails.
//
// The rules are applied by one walker, Check, to any parse of the body
// that implements Value. Decode parses with encoding/json (core-api);
// vault-proxy walks gjson's parse of its bodies, in place for those
// holding card data, which no copy may outlive.
package strictjson

import (
	"github.com/payorch/shared/apierror"
)

// MaxDepth bounds the nesting of a body; MaxDetails bounds the details of
// one error.
const (
	MaxDepth   = 32
	MaxDetails = 50
)

// Detail types of the problems this package reports.
const (
	TypeUnknown   = "value_error.extra"
	TypeDuplicate = "value_error.duplicate"
	TypeNull      = "type_error.none.not_allowed"
	TypeMalformed = "value_error.jsondecode"
	TypeMissing   = "value_error.missing"
)

// Invalid is the 400 for a body with the problems details name.
func Invalid(details ...apierror.Detail) error {
	return apierror.BadRequest("invalid request body", details...)
}

// Malformed is the 400 for a body that is not JSON, msg saying why.
func Malformed(msg string) error {
	return apierror.BadRequest(msg, BodyDetail("", msg, TypeMalformed))
}

// ErrEmpty is the 400 for an empty body (or one of white space only)
// where a JSON object is required.
var ErrEmpty = apierror.BadRequest("request body is required", BodyDetail("", "a JSON object is required", TypeMissing))

// BodyDetail is a detail of the body at pointer.
func BodyDetail(pointer, msg, typ string) apierror.Detail {
	return apierror.Detail{Location: apierror.LocationBody, Pointer: pointer, Message: msg, Type: typ}
}

// Report collects the details of one body's problems, at most MaxDetails.
type Report struct {
	details []apierror.Detail
}

// Add reports a problem at pointer.
func (r *Report) Add(pointer, msg, typ string) {
	if len(r.details) < MaxDetails {
		r.details = append(r.details, BodyDetail(pointer, msg, typ))
	}
}

// Details returns what was reported, nil for nothing.
func (r *Report) Details() []apierror.Detail { return r.details }

// Member is the pointer of the member key of the object at pointer.
func Member(pointer, key string) string {
	return pointer + "/" + apierror.PointerToken(key)
}
