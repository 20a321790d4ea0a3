package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
)

// optional is a field that may be absent, null or a value: its ElemType
// is what a non-null value is checked as.
type optional[T any] struct {
	Set, Null bool
	Value     T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

func (optional[T]) ElemType() reflect.Type { return reflect.TypeFor[T]() }

type inner struct {
	N *int    `json:"n"`
	S *string `json:"s"`
}

type Embedded struct {
	E string `json:"e"`
}

type sample struct {
	Embedded
	Name   optional[string]  `json:"name"`
	In     optional[inner]   `json:"in"`
	List   []inner           `json:"list"`
	Flag   bool              `json:"flag"`
	Count  uint8             `json:"count"`
	Small  int8              `json:"small"`
	Ratio  float32           `json:"ratio"`
	Tags   map[string]string `json:"tags"`
	Pair   [2]string         `json:"pair"`
	Blob   []byte            `json:"blob"`
	Any    any               `json:"any"`
	Raw    json.RawMessage   `json:"raw"`
	Self   *sample           `json:"self"`
	Hidden string            `json:"-"`
}

type det struct{ pointer, typ string }

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		name    string
		body    string
		details []det // nil: accepted
	}{
		{"ok", `{"name":"a","in":{"n":1},"list":[{"s":"x"}],"flag":true,"count":255,"small":-128,"ratio":1.5,"tags":{"a":"b"},"pair":["a","b"],"blob":"AA==","any":[{"x":null}],"raw":{"y":1},"self":{"e":"x"},"e":"y"}`, nil},
		{"empty", ` `, []det{{"", "value_error.missing"}}},
		{"syntax", `{"name":}`, []det{{"", "value_error.jsondecode"}}},
		{"truncated", `{"name":"a"`, []det{{"", "value_error.jsondecode"}}},
		{"trailing", `{}x`, []det{{"", "value_error.jsondecode"}}},
		{"deep", `{"any":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, []det{{"", "value_error.jsondecode"}}},
		{"unknown at every depth", `{"in":{"n":1,"x":2},"list":[{},{"y":1}],"self":{"self":{"z":0}}}`, []det{
			{"/in/x", "value_error.extra"}, {"/list/1/y", "value_error.extra"}, {"/self/self/z", "value_error.extra"}}},
		{"a tag of -", `{"Hidden":"x"}`, []det{{"/Hidden", "value_error.extra"}}},
		{"types", `{"name":1,"flag":"yes","count":256,"small":128,"ratio":"x","tags":{"a":1},"list":{},"in":[],"blob":1}`, []det{
			{"/name", "type_error.str"}, {"/flag", "type_error.bool"}, {"/count", "type_error.integer"}, {"/small", "type_error.integer"},
			{"/ratio", "type_error.float"}, {"/tags/a", "type_error.str"}, {"/list", "type_error.list"}, {"/in", "type_error.dict"}, {"/blob", "type_error.str"}}},
		{"float for int", `{"in":{"n":1.5}}`, []det{{"/in/n", "type_error.integer"}}},
		{"negative for unsigned", `{"count":-1}`, []det{{"/count", "type_error.integer"}}},
		{"array length", `{"pair":["a"]}`, []det{{"/pair", "value_error.list"}}},
		{"null not allowed", `{"flag":null,"pair":null,"tags":{"a":null}}`, []det{
			{"/flag", "type_error.none.not_allowed"}, {"/pair", "type_error.none.not_allowed"}, {"/tags/a", "type_error.none.not_allowed"}}},
		{"nulls allowed", `{"name":null,"in":null,"list":null,"tags":null,"blob":null,"any":null,"raw":null,"self":null}`, nil},
		{"duplicate", `{"name":"a","name":"b"}`, []det{{"/name", "value_error.duplicate"}}},
		{"duplicate inside anything", `{"any":{"a":1,"a":2}}`, []det{{"/any/a", "value_error.duplicate"}}},
		{"case", `{"NAME":"a"}`, []det{{"/NAME", "value_error.extra"}}},
		{"pointer escapes", `{"tags":{"a/b~c":1}}`, []det{{"/tags/a~1b~0c", "type_error.str"}}},
		{"not object", `"x"`, []det{{"", "type_error.dict"}}},
		{"lone surrogate", `{"name":"\ud800"}`, []det{{"", "value_error.str.encoding"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var dst sample
			assertDetails(t, strictjson.Decode([]byte(tt.body), &dst, nil), tt.details)
		})
	}
}

func TestDecodeFills(t *testing.T) {
	var dst sample
	if err := strictjson.Decode([]byte(`{"name":null,"in":{"n":2},"e":"x"}`), &dst, nil); err != nil {
		t.Fatal(err)
	}
	if !dst.Name.Set || !dst.Name.Null || !dst.In.Set || dst.In.Null || *dst.In.Value.N != 2 || dst.E != "x" {
		t.Fatalf("%+v", dst)
	}
}

// A screen's details refuse the body before its shape is checked.
func TestDecodeScreens(t *testing.T) {
	screen := &strictjson.Screen{
		Key: func(r *strictjson.Report, key, objectPtr, memberPtr string) {
			if key == "bad" {
				r.Add(objectPtr, "a bad key", "value_error.key")
			}
		},
		String: func(r *strictjson.Report, key, value, ptr string) {
			if value == "bad" {
				r.Add(ptr, "a bad value of "+key, "value_error.value")
			}
		},
	}
	var dst sample
	err := strictjson.Decode([]byte(`{"tags":{"bad":"x","k":"bad"},"list":["bad"],"unknown":1}`), &dst, screen)
	assertDetails(t, err, []det{{"/tags", "value_error.key"}, {"/tags/k", "value_error.value"}, {"/list/0", "value_error.value"}})
}

func TestDecodeCapsDetails(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 2 * strictjson.MaxDetails {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"x` + strings.Repeat("y", i) + `":1`)
	}
	b.WriteString("}")
	var dst sample
	var e *apierror.Error
	if err := strictjson.Decode([]byte(b.String()), &dst, nil); !errors.As(err, &e) || len(e.Details) != strictjson.MaxDetails {
		t.Fatalf("%v", err)
	}
}

func assertDetails(t *testing.T, err error, want []det) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != 400 {
		t.Fatalf("err = %v", err)
	}
	if len(e.Details) != len(want) {
		t.Fatalf("details %+v, want %+v", e.Details, want)
	}
	for i, d := range want {
		if e.Details[i].Pointer != d.pointer || e.Details[i].Type != d.typ || e.Details[i].Location != apierror.LocationBody {
			t.Fatalf("detail %d = %+v, want %+v", i, e.Details[i], d)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"name":"a","in":{"n":1},"list":[{"s":"x"}],"tags":{"a":"b"}}`))
	f.Add([]byte(`{"a/b~":[1,{"x":null}],"self":{"self":{"pair":[1]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst sample
		if err := strictjson.Decode(body, &dst, nil); err != nil {
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("not a 400: %v", err)
			}
		}
	})
}
