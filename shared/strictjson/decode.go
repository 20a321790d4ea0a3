package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"

	"github.com/payorch/shared/apierror"
)

// Screen judges the text of a body as Decode parses it, for rules of the
// caller's that are not about the body's shape (core-api's: no U+0000,
// no card number, anywhere). What it reports refuses the body before its
// shape is checked. Either function may be nil.
type Screen struct {
	// Key is called with each object key, the pointer of its object and
	// the pointer of the member it names.
	Key func(r *Report, key, objectPtr, memberPtr string)
	// String is called with each string value, the key of the member it
	// is the value of ("" for an array element or the body) and its
	// pointer.
	String func(r *Report, key, value, ptr string)
}

// Decode reads body, a JSON object, into dst (a pointer) under the
// package's rules, after screen (which may be nil) has passed its text:
// an empty body, invalid UTF-8, a lone surrogate escape, malformed JSON,
// trailing data or nesting deeper than MaxDepth are 400 with a detail at
// the body; every other problem is reported at once, as 400 with a detail
// per problem.
func Decode(body []byte, dst any, screen *Screen) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return ErrEmpty
	}
	if err := apierror.CheckJSONText(body); err != nil {
		return err
	}
	root, err := parseTree(body, screen)
	if err != nil {
		return err
	}
	if details := Check(Of(reflect.TypeOf(dst).Elem()), root); len(details) > 0 {
		return Invalid(details...)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return Invalid(BodyDetail("", "invalid value", "value_error"))
	}
	return nil
}

// tree is a value parsed by encoding/json: nil, bool, string, json.Number,
// []tree or *object.
type tree struct{ v any }

// object is a parsed JSON object, its members in order, each key once.
type object struct {
	keys []string
	vals map[string]tree
}

func (t tree) Kind() Kind {
	switch t.v.(type) {
	case nil:
		return Null
	case bool:
		return Bool
	case json.Number:
		return Number
	case string:
		return String
	case *object:
		return Object
	}
	return Array
}

func (t tree) Literal() string {
	n, _ := t.v.(json.Number)
	return string(n)
}

func (t tree) Each(visit Visitor[tree]) {
	switch v := t.v.(type) {
	case *object:
		for _, k := range v.keys {
			if !visit.Visit(k, v.vals[k]) {
				return
			}
		}
	case []tree:
		for _, x := range v {
			if !visit.Visit("", x) {
				return
			}
		}
	}
}

// JSON marshals the value again: encoding/json writes a parsed value
// faithfully.
func (t tree) JSON() []byte {
	raw, _ := json.Marshal(t.plain())
	return raw
}

func (t tree) plain() any {
	switch v := t.v.(type) {
	case *object:
		m := make(map[string]any, len(v.vals))
		for k, x := range v.vals {
			m[k] = x.plain()
		}
		return m
	case []tree:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = x.plain()
		}
		return out
	}
	return t.v
}

var errTooDeep = errors.New("too deep")

// parseTree parses body, refusing deep nesting and trailing data, and
// reports a key given twice in an object (keeping the first) and what
// screen finds: a body with either is refused before its shape is
// checked.
func parseTree(body []byte, screen *Screen) (tree, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	p := parser{dec: dec, screen: screen}
	if screen == nil {
		p.screen = &Screen{}
	}
	v, err := p.value("", "", 0)
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
		return tree{}, Malformed(msg)
	}
	if d := p.report.Details(); len(d) > 0 {
		return tree{}, Invalid(d...)
	}
	return v, nil
}

type parser struct {
	dec    *json.Decoder
	screen *Screen
	report Report
}

// value reads the value at ptr, that of the member key ("" for an array
// element or the body).
func (p *parser) value(key, ptr string, depth int) (tree, error) {
	if depth > MaxDepth {
		return tree{}, errTooDeep
	}
	tok, err := p.dec.Token()
	if err != nil {
		return tree{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]tree{}}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return tree{}, err
				}
				k, _ := kt.(string)
				mp := Member(ptr, k)
				if p.screen.Key != nil {
					p.screen.Key(&p.report, k, ptr, mp)
				}
				v, err := p.value(k, mp, depth+1)
				if err != nil {
					return tree{}, err
				}
				if _, seen := o.vals[k]; seen {
					p.report.Add(mp, "duplicate field", TypeDuplicate)
					continue
				}
				o.keys = append(o.keys, k)
				o.vals[k] = v
			}
			if _, err := p.dec.Token(); err != nil { // '}'
				return tree{}, err
			}
			return tree{o}, nil
		case '[':
			a := []tree{}
			for i := 0; p.dec.More(); i++ {
				v, err := p.value("", ptr+"/"+strconv.Itoa(i), depth+1)
				if err != nil {
					return tree{}, err
				}
				a = append(a, v)
			}
			if _, err := p.dec.Token(); err != nil { // ']'
				return tree{}, err
			}
			return tree{a}, nil
		}
		return tree{}, errors.New("unexpected delimiter")
	case string:
		if p.screen.String != nil {
			p.screen.String(&p.report, key, t, ptr)
		}
		return tree{t}, nil
	default:
		return tree{t}, nil // nil, bool, json.Number
	}
}
