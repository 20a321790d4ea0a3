package config

import (
	"strconv"
	"strings"
)

// VarError is one problem with one variable. Problem never contains the
// value of a secret.
type VarError struct {
	Name    string
	Problem string
}

func (e *VarError) Error() string { return e.Name + ": " + e.Problem }

// Errors is every problem found by a Loader, in the order found.
type Errors []*VarError

func (es Errors) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if len(es) == 1 {
		b.WriteString(es[0].Error())
		return b.String()
	}
	b.WriteString(strconv.Itoa(len(es)))
	b.WriteString(" problems:")
	for _, e := range es {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find each *VarError.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
