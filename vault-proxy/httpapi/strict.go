package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// jsonValue is gjson's parse of a body, as strictjson walks it: the rules
// are strictjson's, the parse vault-proxy's own (gjson, in place for a
// body holding card data).
type jsonValue gjson.Result

func (v jsonValue) Kind() strictjson.Kind {
	switch r := gjson.Result(v); r.Type {
	case gjson.Null:
		return strictjson.Null
	case gjson.False, gjson.True:
		return strictjson.Bool
	case gjson.Number:
		return strictjson.Number
	case gjson.String:
		return strictjson.String
	default:
		if r.IsArray() {
			return strictjson.Array
		}
		return strictjson.Object
	}
}

func (v jsonValue) Literal() string { return gjson.Result(v).Raw }

func (v jsonValue) Each(visit strictjson.Visitor[jsonValue]) {
	gjson.Result(v).ForEach(func(k, x gjson.Result) bool { return visit.Visit(k.Str, jsonValue(x)) })
}

func (v jsonValue) JSON() []byte { return []byte(gjson.Result(v).Raw) }

// checkBody holds body, a JSON object, to strictjson's rules for schema's
// type and returns its parse by parse.
func checkBody(body []byte, schema *strictjson.Schema, parse func([]byte) gjson.Result) (gjson.Result, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return gjson.Result{}, strictjson.ErrEmpty
	}
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, strictjson.Malformed("request body is not valid JSON")
	}
	// gjson passes invalid UTF-8 through and turns an unpaired surrogate
	// escape into U+FFFD, so a credential would be sealed other than as
	// entered: the body is refused whole, as core-api refuses it, rather
	// than a value being silently changed.
	if err := apierror.CheckJSONText(body); err != nil {
		return gjson.Result{}, err
	}
	root := parse(body)
	if details := strictjson.Check(schema, jsonValue(root)); len(details) > 0 {
		return gjson.Result{}, strictjson.Invalid(details...)
	}
	return root, nil
}

// strictObject checks body against schema (checkBody) and returns its
// top-level members that are not null (null is as if absent).
func strictObject(body []byte, schema *strictjson.Schema) (map[string]gjson.Result, error) {
	return strictFields(body, schema, gjson.ParseBytes)
}

// strictObjectInPlace is strictObject for a body holding card data, which
// the caller clears when done: the results point into body (parseView), so
// the card data is not copied where nothing can clear it, and nothing of
// them may outlive the handler.
func strictObjectInPlace(body []byte, schema *strictjson.Schema) (map[string]gjson.Result, error) {
	return strictFields(body, schema, parseView)
}

func strictFields(body []byte, schema *strictjson.Schema, parse func([]byte) gjson.Result) (map[string]gjson.Result, error) {
	root, err := checkBody(body, schema, parse)
	if err != nil {
		return nil, err
	}
	out := map[string]gjson.Result{}
	root.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Null {
			out[k.Str] = v
		}
		return true
	})
	return out, nil
}

// decodeInternal reads the JSON body of an internal route (core-api's
// calls) into v, a pointer to its zone type, under strictjson's rules: both
// sides are built from the same zone types, so an unknown field is a
// version mismatch to see, not to ignore.
func decodeInternal(ctx *fasthttp.RequestCtx, v any) error {
	body := ctx.Request.Body()
	// The parse is only looked at: it may point into the body.
	if _, err := checkBody(body, strictjson.Of(reflect.TypeOf(v).Elem()), parseView); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return strictjson.Invalid(strictjson.BodyDetail("", "invalid value", "value_error"))
	}
	return nil
}
