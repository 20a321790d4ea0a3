package config

import (
	"slices"
	"strings"

	"github.com/payorch/shared/secret"
)

// Source says where a variable's effective value came from.
type Source string

// Sources of a value.
const (
	SourceEnv     Source = "env"
	SourceFile    Source = "file" // NAME_FILE, for secrets
	SourceDefault Source = "default"
	SourceUnset   Source = "unset"
)

// Entry is one variable of the effective configuration, safe to print:
// Value is secret.Redacted for a secret or sensitive variable that has a
// value, and a URL's password is masked.
type Entry struct {
	Name   string
	Value  string
	Source Source
}

// record notes the effective value of v for Entries; reading a variable
// again replaces its entry.
func (l *Loader) record(v *value, display string, src Source) {
	if display != "" && (v.spec.sensitive || v.spec.noEcho && src != SourceDefault) {
		display = secret.Redacted
	}
	e := Entry{Name: v.name, Value: display, Source: src}
	if i, ok := l.index[v.name]; ok {
		l.entries[i] = e
		return
	}
	l.index[v.name] = len(l.entries)
	l.entries = append(l.entries, e)
}

// Entries returns the variables read so far, sorted by name.
func (l *Loader) Entries() []Entry {
	out := slices.Clone(l.entries)
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Redacted returns the effective configuration, one "NAME=value (source)"
// line per variable, sorted, with secrets masked: what a service logs at
// start-up so an operator can see what it runs with.
func (l *Loader) Redacted() string {
	var b strings.Builder
	for _, e := range l.Entries() {
		b.WriteString(e.Name)
		b.WriteByte('=')
		b.WriteString(e.Value)
		b.WriteString(" (")
		b.WriteString(string(e.Source))
		b.WriteString(")\n")
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
