// Package config reads service configuration from environment variables,
// strictly: every variable is typed and bounded, a variable without a
// default is required, secrets can come from files (NAME_FILE), unknown
// variables under the service's prefix are errors, and every problem is
// reported at once, before anything starts.
//
// Usage:
//
//	l := config.NewLoader(os.LookupEnv)
//	cfg := Config{
//		Env:     l.Environment("PAYORCH_ENVIRONMENT"),
//		Addr:    l.String("PAYORCH_ADDR", config.Default(":8080")),
//		Workers: l.Int("PAYORCH_WEBHOOK_WORKERS", 1, 64, config.Default("4")),
//		DBURL:   l.URL("PAYORCH_DATABASE_URL", []string{"postgres"}),
//		JWTKey:  l.Secret("PAYORCH_JWT_KEY"), // or PAYORCH_JWT_KEY_FILE
//	}
//	if cfg.Env != config.Development && cfg.KeyBackend == "local" {
//		l.Invalid("PAYORCH_KEY_BACKEND", "local is allowed only in development")
//	}
//	l.RejectUnknown(os.Environ(), "PAYORCH_")
//	if err := l.Err(); err != nil { ... exit, printing err ... }
//	logger.Info("config", "effective", l.Redacted())
//
// The loader never calls os.Getenv itself: the lookup is injected, so tests
// pass a map. A Loader is meant for one goroutine at start-up.
package config

import (
	"os"
	"strings"
)

// Lookup returns the value of a variable and whether it is set; os.LookupEnv
// is one.
type Lookup func(name string) (string, bool)

// MapLookup looks variables up in m.
func MapLookup(m map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// EnvironLookup looks variables up in a list of "NAME=value" entries, the
// form of os.Environ, taking the last entry for a name as the shell does.
func EnvironLookup(environ []string) Lookup {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return MapLookup(m)
}

// Loader reads variables and accumulates every problem it finds.
type Loader struct {
	lookup   Lookup
	readFile func(path string) ([]byte, error)
	errs     Errors
	entries  []Entry
	index    map[string]int // name -> position in entries
	known    map[string]bool
}

// LoaderOption configures a Loader.
type LoaderOption func(*Loader)

// WithReadFile replaces os.ReadFile for NAME_FILE secrets, for tests.
func WithReadFile(readFile func(path string) ([]byte, error)) LoaderOption {
	return func(l *Loader) { l.readFile = readFile }
}

// NewLoader returns a loader reading variables through lookup.
func NewLoader(lookup Lookup, opts ...LoaderOption) *Loader {
	l := &Loader{
		lookup:   lookup,
		readFile: os.ReadFile,
		index:    map[string]int{},
		known:    map[string]bool{},
	}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Invalid records a problem found by a rule across variables, such as a
// setting that is not allowed in production, so it is reported with the
// others.
func (l *Loader) Invalid(name, problem string) {
	l.errs = append(l.errs, &VarError{Name: name, Problem: problem})
}

// Ignore marks names as known without reading them: another service's
// variables that share a prefix with this one's and may share its
// environment.
func (l *Loader) Ignore(names ...string) {
	for _, n := range names {
		l.known[n] = true
		l.known[n+"_FILE"] = true
	}
}

// Refuse records problem when name or name+"_FILE" is set: a variable of
// another command of the same program that this one must never be given
// (a credential only a deploy step holds, say). Its value is not read.
func (l *Loader) Refuse(name, problem string) {
	l.Ignore(name)
	_, set := l.lookup(name)
	_, setFile := l.lookup(name + "_FILE")
	if set || setFile {
		l.Invalid(name, problem)
	}
}

// RejectUnknown records an error for each variable in environ (os.Environ
// form) that starts with one of prefixes but was never read: almost always
// a misspelt name whose value would otherwise be silently ignored. Call it
// after every variable has been read.
func (l *Loader) RejectUnknown(environ []string, prefixes ...string) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if l.known[name] {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				l.Invalid(name, "unknown variable (misspelt?)")
				break
			}
		}
	}
}

// Err returns every problem found so far as Errors, or nil.
func (l *Loader) Err() error {
	if len(l.errs) == 0 {
		return nil
	}
	return append(Errors(nil), l.errs...)
}
