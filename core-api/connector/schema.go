package connector

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/secret"
)

// Kind is the JSON type of a configuration field.
type Kind string

// The kinds a field may have. Credentials are strings only: a secret is
// a string to the processor, and a string alone can be redacted as such.
const (
	KindString  Kind = "string"
	KindInteger Kind = "integer"
	KindBoolean Kind = "boolean"
)

// Field is one key of a connector's settings, credentials or connection
// options.
type Field struct {
	Name     string
	Kind     Kind
	Required bool
	// Strings: length in characters (MaxLength 0 is coreapi.MaxTextLen),
	// and, when Pattern is set, a pattern every value matches, described
	// for a client by PatternText ("letters, digits and spaces").
	MinLength, MaxLength int
	Pattern              *regexp.Regexp
	PatternText          string
	// Integers: the inclusive range.
	Min, Max int64
}

// Schema is the declarative description of one JSON object a connector
// takes: its fields, every other key refused.
type Schema []Field

// Schemas is what a connector configured by payment services declares:
// the payment methods it processes (the first is the default of a new
// payment service), and the shape of each part of its configuration.
type Schemas struct {
	Methods []string
	// Settings are non-secret and answered; Credentials are secret,
	// stored encrypted and never answered; ConnectionOptions are a
	// transaction's entry for this connector.
	Settings, Credentials, ConnectionOptions Schema
}

// Configurable is a connector that payment services configure.
type Configurable interface {
	Connector
	Schemas() Schemas
}

// Config is a payment service's configuration as a connector receives it
// with every call: its settings and its decrypted credentials. The zero
// Config is the built-in sandbox configuration (no payment service).
type Config struct {
	Settings    Values
	Credentials Secrets
}

// Values are validated settings or connection options: string, int64 or
// bool by their field's kind.
type Values map[string]any

// String is the string value of name, "" when absent.
func (v Values) String(name string) string {
	s, _ := v[name].(string)
	return s
}

// Secrets are validated credentials; each redacts itself in logs and
// encodings.
type Secrets map[string]secret.String

// Names lists the credential fields set, sorted: what a payment service's
// answer says of its credentials.
func (s Secrets) Names() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Validate checks raw (a JSON object; empty is {}) against s, adding each
// problem under pointer (an RFC 6901 pointer such as "/settings"), and
// returns the values it holds. Unknown keys, wrong types, values out of
// range and missing required fields are all reported at once; no message
// repeats a value (credentials are checked here too).
func (s Schema) Validate(pointer string, raw json.RawMessage, v *coreapi.Problems) Values {
	out := Values{}
	fields := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if t[0] != '{' || json.Unmarshal(t, &fields) != nil {
			v.Add(pointer, "must be an object", "type_error.dict")
			return out
		}
	}
	for _, k := range sortedKeys(fields) {
		if !slices.ContainsFunc(s, func(f Field) bool { return f.Name == k }) {
			v.Add(pointer+"/"+escapePointer(k), "is not a field of this connector: "+s.names(), "value_error.extra")
		}
	}
	for _, f := range s {
		p := pointer + "/" + escapePointer(f.Name)
		val, ok := fields[f.Name]
		if !ok || bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
			if f.Required {
				v.Add(p, "is required", "value_error.missing")
			}
			continue
		}
		if x, ok := f.check(p, val, v); ok {
			out[f.Name] = x
		}
	}
	return out
}

// check decodes and checks one present value.
func (f Field) check(p string, raw json.RawMessage, v *coreapi.Problems) (any, bool) {
	switch f.Kind {
	case KindString:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			v.Add(p, "must be a string", "type_error.str")
			return nil, false
		}
		maxLen := f.MaxLength
		if maxLen == 0 {
			maxLen = coreapi.MaxTextLen
		}
		minLen := max(f.MinLength, 1)
		switch n := utf8.RuneCountInString(s); {
		case n < minLen:
			v.Add(p, "must be at least "+strconv.Itoa(minLen)+" characters", "value_error.any_str.min_length")
			return nil, false
		case n > maxLen:
			v.Add(p, "must be at most "+strconv.Itoa(maxLen)+" characters", "value_error.any_str.max_length")
			return nil, false
		}
		if f.Pattern != nil && !f.Pattern.MatchString(s) {
			v.Add(p, "must be "+f.PatternText, "value_error.str.regex")
			return nil, false
		}
		return s, true
	case KindInteger:
		var n int64
		if json.Unmarshal(raw, &n) != nil {
			v.Add(p, "must be an integer", "type_error.integer")
			return nil, false
		}
		if n < f.Min || n > f.Max {
			v.Add(p, "must be from "+strconv.FormatInt(f.Min, 10)+" to "+strconv.FormatInt(f.Max, 10), "value_error.number.range")
			return nil, false
		}
		return n, true
	case KindBoolean:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			v.Add(p, "must be true or false", "type_error.bool")
			return nil, false
		}
		return b, true
	}
	v.Add(p, "has a kind this connector does not declare", "type_error")
	return nil, false
}

func (s Schema) names() string {
	if len(s) == 0 {
		return "it takes none"
	}
	names := make([]string, len(s))
	for i, f := range s {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// ValidateSecrets is Validate for credentials: string values, each
// wrapped so that it redacts itself.
func (s Schema) ValidateSecrets(pointer string, raw json.RawMessage, v *coreapi.Problems) Secrets {
	out := Secrets{}
	for k, x := range s.Validate(pointer, raw, v) {
		if str, ok := x.(string); ok {
			out[k] = secret.New(str)
		}
	}
	return out
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// escapePointer escapes a key as an RFC 6901 reference token.
func escapePointer(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// Schemas returns the schemas of the named connector if payment services
// configure it.
func (r *Registry) Schemas(name string) (Schemas, error) {
	c, ok := r.byName[name].(Configurable)
	if !ok {
		return Schemas{}, ErrUnknown
	}
	return c.Schemas(), nil
}

// Configurable lists the connectors payment services may name, sorted.
func (r *Registry) Configurable() []string {
	var out []string
	for _, n := range r.Names() {
		if _, ok := r.byName[n].(Configurable); ok {
			out = append(out, n)
		}
	}
	return out
}
