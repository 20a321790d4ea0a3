package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/pgtext"
	"github.com/payorch/shared/zone"
)

// MaxBodyBytes bounds a JSON request body.
const MaxBodyBytes = 1 << 20

// maxDepth bounds nesting; maxDetails bounds the details of one error.
const (
	maxDepth   = 32
	maxDetails = 50
)

// DecodeStrict reads r's JSON body into dst (a pointer), strictly:
//
//   - Content-Type must be application/json (or a +json type), charset
//     utf-8 if given, else 415 unsupported_media_type;
//   - a body over MaxBodyBytes is 413 too_large;
//   - an empty body, invalid UTF-8, malformed JSON or trailing data is 400;
//   - every problem with the shape is reported at once, as 400 bad_request
//     with one detail per problem, location "body" and an RFC 6901 pointer:
//     unknown fields ("/billing_details/address/foo", type
//     value_error.extra), duplicate fields (value_error.duplicate), wrong
//     types (type_error.str, type_error.integer, type_error.bool,
//     type_error.float, type_error.dict, type_error.list) and null for a
//     field that is not nullable (type_error.none.not_allowed).
//
// Field names match the json tags exactly (encoding/json's case-insensitive
// matching is never reached). Nullable are pointers, slices, maps,
// interfaces and types with an `ElemType() reflect.Type` method such as
// coreapi.Optional, whose non-null values are checked as that type. Other
// json.Unmarshaler types are checked by unmarshalling the value alone, so
// their errors carry the right pointer too. Value rules (lengths, formats)
// are the domain's; DecodeStrict checks only that dst can hold the body.
func DecodeStrict(r *http.Request, dst any) error {
	if err := apierror.CheckJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.ContentLength > MaxBodyBytes {
		return errTooLarge
	}
	if r.Body == nil {
		return errEmptyBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errTooLarge
		}
		return apierror.BadRequest("could not read the request body")
	}
	if len(body) > MaxBodyBytes {
		return errTooLarge
	}
	return DecodeStrictBytes(body, dst)
}

// DecodeStrictBytes is DecodeStrict for a body already read.
func DecodeStrictBytes(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errEmptyBody
	}
	if err := apierror.CheckJSONText(body); err != nil {
		return err
	}
	tree, err := parseTree(body)
	if err != nil {
		return err
	}
	var c checker
	c.check(tree, reflect.TypeOf(dst).Elem(), "", 0)
	if len(c.details) > 0 {
		return apierror.BadRequest("invalid request body", c.details...)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return apierror.BadRequest("invalid request body", bodyDetail("", "invalid value", "value_error"))
	}
	return nil
}

var (
	errTooLarge  = apierror.TooLarge("request body exceeds 1 MiB")
	errEmptyBody = apierror.BadRequest("request body is required", bodyDetail("", "a JSON object is required", "value_error.missing"))
)

func bodyDetail(pointer, msg, typ string) apierror.Detail {
	return apierror.Detail{Location: apierror.LocationBody, Pointer: pointer, Message: msg, Type: typ}
}

// object is a parsed JSON object with its keys in order.
type object struct {
	keys []string
	vals map[string]any
}

// parseTree parses body into nil, bool, string, json.Number, []any and
// *object, refusing duplicate keys, U+0000 in a key or a string, deep
// nesting and trailing data.
func parseTree(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var problems []apierror.Detail
	v, err := parseValue(dec, "", "", 0, &problems)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON value")
		}
	}
	if err != nil {
		msg := "malformed JSON"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg += " at byte " + strconv.FormatInt(se.Offset, 10)
		} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			msg += ": unexpected end of input"
		} else if errors.Is(err, errTooDeep) {
			msg = "JSON nested too deeply"
		}
		return nil, apierror.BadRequest(msg, bodyDetail("", msg, "value_error.jsondecode"))
	}
	if len(problems) > 0 {
		return nil, apierror.BadRequest("invalid request body", problems...)
	}
	return v, nil
}

// nulDetail reports a key or string holding U+0000 (JSON's "\u0000"):
// PostgreSQL's text and jsonb cannot store it, so it is refused here, with
// its pointer, rather than failing the insert.
func nulDetail(problems *[]apierror.Detail, pointer string) {
	if len(*problems) < maxDetails {
		*problems = append(*problems, bodyDetail(pointer, "must not contain the NUL character (U+0000)", "value_error.str.encoding"))
	}
}

// cardDetail reports a value (or a field name) holding a card number:
// core-api stores no card number in any field, whatever a client puts
// where (zone.HoldsCardNumber).
func cardDetail(problems *[]apierror.Detail, pointer, what string) {
	if len(*problems) < maxDetails {
		*problems = append(*problems, bodyDetail(pointer, what+"looks like a card number; card data are accepted only by vault-proxy", "value_error.card_data"))
	}
}

var errTooDeep = errors.New("too deep")

// parseValue reads the value at ptr, that of the member key ("" for an
// array element or the body).
func parseValue(dec *json.Decoder, key, ptr string, depth int, problems *[]apierror.Detail) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				p := ptr + "/" + apierror.PointerToken(k)
				if !pgtext.Storable(k) {
					nulDetail(problems, p)
				}
				if panscan.Contains(k) {
					cardDetail(problems, ptr, "a field name ") // the pointer would repeat it
				}
				v, err := parseValue(dec, k, p, depth+1, problems)
				if err != nil {
					return nil, err
				}
				if _, seen := o.vals[k]; seen {
					if len(*problems) < maxDetails {
						*problems = append(*problems, bodyDetail(p, "duplicate field", "value_error.duplicate"))
					}
					continue
				}
				o.keys = append(o.keys, k)
				o.vals[k] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for i := 0; dec.More(); i++ {
				v, err := parseValue(dec, "", ptr+"/"+strconv.Itoa(i), depth+1, problems)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return a, nil
		}
		return nil, errors.New("unexpected delimiter")
	case string:
		if !pgtext.Storable(t) {
			nulDetail(problems, ptr)
		}
		if zone.HoldsCardNumber(key, t) {
			cardDetail(problems, ptr, "")
		}
		return t, nil
	default:
		return t, nil // nil, bool, json.Number
	}
}

// toPlain turns a tree back into values json.Marshal writes faithfully.
func toPlain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.vals))
		for k, x := range t.vals {
			m[k] = toPlain(x)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = toPlain(x)
		}
		return out
	}
	return v
}

type elemTyper interface{ ElemType() reflect.Type }

var (
	elemTyperType   = reflect.TypeFor[elemTyper]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

type checker struct {
	details []apierror.Detail
}

func (c *checker) add(ptr, msg, typ string) {
	if len(c.details) < maxDetails {
		c.details = append(c.details, bodyDetail(ptr, msg, typ))
	}
}

func (c *checker) check(v any, t reflect.Type, ptr string, depth int) {
	if depth > maxDepth {
		return
	}
	if t.Implements(elemTyperType) {
		if v == nil {
			return
		}
		c.check(v, reflect.Zero(t).Interface().(elemTyper).ElemType(), ptr, depth+1)
		return
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		raw, err := json.Marshal(toPlain(v))
		if err == nil {
			err = json.Unmarshal(raw, reflect.New(t).Interface())
		}
		if err != nil {
			c.add(ptr, "invalid value", "value_error")
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v != nil {
			c.check(v, t.Elem(), ptr, depth+1)
		}
		return
	case reflect.Slice, reflect.Map:
		if v == nil {
			return
		}
	}
	if v == nil {
		c.add(ptr, "must not be null", "type_error.none.not_allowed")
		return
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.add(ptr, "must be a string", "type_error.str")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.add(ptr, "must be a boolean", "type_error.bool")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if ok {
			_, err := strconv.ParseInt(string(n), 10, t.Bits())
			ok = err == nil
		}
		if !ok {
			c.add(ptr, "must be an integer in range", "type_error.integer")
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if ok {
			_, err := strconv.ParseUint(string(n), 10, t.Bits())
			ok = err == nil
		}
		if !ok {
			c.add(ptr, "must be a non-negative integer in range", "type_error.integer")
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if ok {
			_, err := strconv.ParseFloat(string(n), t.Bits())
			ok = err == nil
		}
		if !ok {
			c.add(ptr, "must be a number", "type_error.float")
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			if _, ok := v.(string); !ok {
				c.add(ptr, "must be a base64 string", "type_error.str")
			}
			return
		}
		a, ok := v.([]any)
		if !ok {
			c.add(ptr, "must be an array", "type_error.list")
			return
		}
		if t.Kind() == reflect.Array && len(a) != t.Len() {
			c.add(ptr, "must have "+strconv.Itoa(t.Len())+" items", "value_error.list")
		}
		for i, x := range a {
			c.check(x, t.Elem(), ptr+"/"+strconv.Itoa(i), depth+1)
		}
	case reflect.Map:
		o, ok := v.(*object)
		if !ok || t.Key().Kind() != reflect.String {
			c.add(ptr, "must be an object", "type_error.dict")
			return
		}
		for _, k := range o.keys {
			c.check(o.vals[k], t.Elem(), ptr+"/"+apierror.PointerToken(k), depth+1)
		}
	case reflect.Struct:
		o, ok := v.(*object)
		if !ok {
			c.add(ptr, "must be an object", "type_error.dict")
			return
		}
		fields := jsonFields(t)
		for _, k := range o.keys {
			p := ptr + "/" + apierror.PointerToken(k)
			ft, ok := fields[k]
			if !ok {
				c.add(p, "unknown field", "value_error.extra")
				continue
			}
			c.check(o.vals[k], ft, p, depth+1)
		}
	default:
		c.add(ptr, "unsupported value", "value_error")
	}
}

// jsonFields maps the JSON names of t's fields (as encoding/json sees them,
// embedded structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if _, dup := out[name]; !dup {
			out[name] = f.Type
		}
	}
	return out
}
