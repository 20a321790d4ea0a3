package strictjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Schema is what a Go type can hold, compiled once from the type so that a
// check walks the body and a few maps, not the reflect package.
type Schema struct {
	root *node
}

// want is the JSON a node takes.
type want uint8

const (
	wantAny         want = iota // an interface or json.RawMessage: anything
	wantVia                     // a pointer or an optional: null, or elem's
	wantUnmarshal               // a json.Unmarshaler: whatever it takes
	wantString                  // a string
	wantBytes                   // a []byte: a base64 string
	wantBool                    // true or false
	wantInt                     // an integer of bits, signed
	wantUint                    // an integer of bits, unsigned
	wantFloat                   // a number of bits
	wantList                    // an array of elem
	wantArray                   // an array of length elem
	wantMap                     // an object of elem
	wantStruct                  // an object of fields
	wantUnsupported             // a type JSON cannot fill (a channel, a map with other keys)
)

type node struct {
	want     want
	nullable bool
	bits     int
	length   int
	elem     *node
	fields   map[string]*node
	typ      reflect.Type // of a json.Unmarshaler
}

type elemTyper interface{ ElemType() reflect.Type }

var (
	elemTyperType   = reflect.TypeFor[elemTyper]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

var schemas sync.Map // reflect.Type -> *Schema

// For is the schema of T.
func For[T any]() *Schema { return Of(reflect.TypeFor[T]()) }

// Of is the schema of t, compiled on first use.
func Of(t reflect.Type) *Schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*Schema)
	}
	s := &Schema{root: compile(t, map[reflect.Type]*node{})}
	actual, _ := schemas.LoadOrStore(t, s)
	return actual.(*Schema)
}

// compile builds t's node; seen holds the nodes being built, so a
// recursive type refers to itself.
func compile(t reflect.Type, seen map[reflect.Type]*node) *node {
	if n, ok := seen[t]; ok {
		return n
	}
	n := &node{}
	seen[t] = n
	switch {
	case t.Implements(elemTyperType):
		n.want, n.nullable = wantVia, true
		n.elem = compile(reflect.Zero(t).Interface().(elemTyper).ElemType(), seen)
		return n
	case t == rawMessageType || t.Kind() == reflect.Interface:
		n.want = wantAny
		return n
	case t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType):
		n.want, n.typ = wantUnmarshal, t
		return n
	}
	switch t.Kind() {
	case reflect.Pointer:
		n.want, n.nullable, n.elem = wantVia, true, compile(t.Elem(), seen)
	case reflect.String:
		n.want = wantString
	case reflect.Bool:
		n.want = wantBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.want, n.bits = wantInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n.want, n.bits = wantUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		n.want, n.bits = wantFloat, t.Bits()
	case reflect.Slice:
		n.nullable = true
		if t.Elem().Kind() == reflect.Uint8 {
			n.want = wantBytes
		} else {
			n.want, n.elem = wantList, compile(t.Elem(), seen)
		}
	case reflect.Array:
		n.want, n.length, n.elem = wantArray, t.Len(), compile(t.Elem(), seen)
	case reflect.Map:
		n.nullable = true
		if t.Key().Kind() == reflect.String {
			n.want, n.elem = wantMap, compile(t.Elem(), seen)
		} else {
			n.want = wantUnsupported
		}
	case reflect.Struct:
		n.want, n.fields = wantStruct, map[string]*node{}
		for name, ft := range jsonFields(t) {
			n.fields[name] = compile(ft, seen)
		}
	default:
		n.want = wantUnsupported
	}
	return n
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
