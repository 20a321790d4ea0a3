package strictjson

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/payorch/shared/apierror"
)

// Kind is the JSON type of a value.
type Kind uint8

const (
	Null Kind = iota
	Bool
	Number
	String
	Object
	Array
)

// Value is a parsed JSON value, as a parser gives it: V is the type
// itself (type jsonValue gjson.Result satisfies Value[jsonValue]).
type Value[V any] interface {
	Kind() Kind
	// Literal is a number's text as written.
	Literal() string
	// JSON is the value's JSON text.
	JSON() []byte
	// Each calls visit.Visit with each member of an object (its key, and
	// duplicates too) or each element of an array (key ""), in order,
	// until it returns false.
	Each(visit Visitor[V])
}

// Visitor is what Value.Each calls; Check's walker is one.
type Visitor[V any] interface {
	Visit(key string, v V) bool
}

// Check reports what keeps s's type from holding v, the body: nil when it
// can.
func Check[V Value[V]](s *Schema, v V) []apierror.Detail {
	w := &walker[V]{}
	w.keys, w.steps = w.keyBuf[:0], w.stepBuf[:0]
	w.value(s.root, v)
	return w.r.Details()
}

// walker walks a body along its schema. It allocates little besides
// itself: the pointer of a value is written only when a problem is
// reported there, and the keys of the objects being walked share one
// slice.
type walker[V Value[V]] struct {
	r     Report
	steps []step   // from the body to the value being checked
	keys  []string // of the objects being walked, innermost last
	cur   frame    // of the object or array being walked

	// First backing arrays, enough for most bodies: the walker is the one
	// allocation of a check that finds nothing.
	stepBuf [4]step
	keyBuf  [8]string
}

// step is a member's key, or an element's index when key is not.
type step struct {
	key   string
	index int
	isKey bool
}

// frame is the object or array whose members or elements Visit receives.
type frame struct {
	n     *node
	index int             // of the next element
	keys  int             // where the object's keys start in walker.keys
	many  map[string]bool // the object's keys, once there are many
}

// fewKeys is how many keys of one object are compared one by one for
// duplicates; past it they go in a map.
const fewKeys = 32

func (w *walker[V]) pointer() string {
	var b strings.Builder
	for _, s := range w.steps {
		b.WriteByte('/')
		if s.isKey {
			b.WriteString(apierror.PointerToken(s.key))
		} else {
			b.WriteString(strconv.Itoa(s.index))
		}
	}
	return b.String()
}

func (w *walker[V]) add(msg, typ string) { w.r.Add(w.pointer(), msg, typ) }

func (w *walker[V]) value(n *node, v V) {
	switch n.want {
	case wantAny:
		return
	case wantVia:
		if v.Kind() != Null {
			w.value(n.elem, v)
		}
		return
	case wantUnmarshal:
		if json.Unmarshal(v.JSON(), reflect.New(n.typ).Interface()) != nil {
			w.add("invalid value", "value_error")
		}
		return
	}
	k := v.Kind()
	if k == Null {
		if !n.nullable {
			w.add("must not be null", TypeNull)
		}
		return
	}
	switch n.want {
	case wantString:
		if k != String {
			w.add("must be a string", "type_error.str")
		}
	case wantBytes:
		if k != String {
			w.add("must be a base64 string", "type_error.str")
		}
	case wantBool:
		if k != Bool {
			w.add("must be a boolean", "type_error.bool")
		}
	case wantInt:
		if _, err := strconv.ParseInt(v.Literal(), 10, n.bits); k != Number || err != nil {
			w.add("must be an integer in range", "type_error.integer")
		}
	case wantUint:
		if _, err := strconv.ParseUint(v.Literal(), 10, n.bits); k != Number || err != nil {
			w.add("must be a non-negative integer in range", "type_error.integer")
		}
	case wantFloat:
		if _, err := strconv.ParseFloat(v.Literal(), n.bits); k != Number || err != nil {
			w.add("must be a number", "type_error.float")
		}
	case wantList, wantArray:
		if k != Array {
			w.add("must be an array", "type_error.list")
			return
		}
		if w.descend(n, v) != n.length && n.want == wantArray {
			w.add("must have "+strconv.Itoa(n.length)+" items", "value_error.list")
		}
	case wantMap, wantStruct:
		if k != Object {
			w.add("must be an object", "type_error.dict")
			return
		}
		w.descend(n, v)
	default:
		w.add("unsupported value", "value_error")
	}
}

// descend walks the members or elements of v, of node n, and returns how
// many there were.
func (w *walker[V]) descend(n *node, v V) int {
	if len(w.steps) == MaxDepth {
		w.add("JSON nested too deeply", TypeMalformed)
		return 0
	}
	outer := w.cur
	w.cur = frame{n: n, keys: len(w.keys)}
	v.Each(w)
	count := w.cur.index
	w.keys = w.keys[:w.cur.keys]
	w.cur = outer
	return count
}

// Visit checks one member or element of the object or array being walked.
func (w *walker[V]) Visit(key string, x V) bool {
	f := &w.cur
	n := f.n
	f.index++
	if n.want == wantList || n.want == wantArray {
		w.steps = append(w.steps, step{index: f.index - 1})
		w.value(n.elem, x)
	} else {
		w.steps = append(w.steps, step{key: key, isKey: true})
		w.member(f, key, x)
	}
	w.steps = w.steps[:len(w.steps)-1]
	return true
}

// member checks the member key of f's object: once, a field of a struct,
// of its type.
func (w *walker[V]) member(f *frame, key string, x V) {
	if w.seen(f, key) {
		// Which of two values was meant is not for the service to guess.
		w.add("duplicate field", TypeDuplicate)
		return
	}
	elem := f.n.elem
	if f.n.want == wantStruct {
		var ok bool
		if elem, ok = f.n.fields[key]; !ok {
			w.add("unknown field", TypeUnknown)
			return
		}
	}
	w.value(elem, x)
}

// seen records key among the keys of f's object and reports whether it
// was there before.
func (w *walker[V]) seen(f *frame, key string) bool {
	if f.many == nil {
		keys := w.keys[f.keys:]
		for _, k := range keys {
			if k == key {
				return true
			}
		}
		if len(keys) < fewKeys {
			w.keys = append(w.keys, key)
			return false
		}
		f.many = make(map[string]bool, 2*len(keys))
		for _, k := range keys {
			f.many[k] = true
		}
	}
	if f.many[key] {
		return true
	}
	f.many[key] = true
	return false
}
