package coreapi

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Optional is one field of a partial update (PUT): absent (Set false:
// leave the stored value alone), null (Set true, Null true: clear it) or a
// value (Set true, Null false).
type Optional[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// Ptr is the field as a pointer: nil when absent or null.
func (o Optional[T]) Ptr() *T {
	if !o.Set || o.Null {
		return nil
	}
	v := o.Value
	return &v
}

// UnmarshalJSON records that the field was present. encoding/json calls it
// for an explicit null too, which is how null and absent differ.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		var zero T
		o.Value = zero
		return nil
	}
	o.Null = false
	return json.Unmarshal(b, &o.Value)
}

// MarshalJSON writes null unless a value is set.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// ElemType lets strict decoders check the value's JSON against T (and allow
// null).
func (Optional[T]) ElemType() reflect.Type { return reflect.TypeFor[T]() }
