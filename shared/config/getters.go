package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/secret"
)

// Option adjusts how one variable is read.
type Option func(*spec)

type spec struct {
	def       string
	hasDef    bool
	optional  bool
	sensitive bool   // mask the value everywhere
	noEcho    bool   // keep the raw text out of errors and Redacted (URLs)
	alt       string // another variable that can provide the value
}

func alternative(name string) Option { return func(s *spec) { s.alt = name } }

func noEcho() Option { return func(s *spec) { s.noEcho = true } }

// Default gives the value to use when the variable is unset, written as the
// variable itself would be ("30s", "8080"), so it is parsed and checked by
// the same rules. A variable with a default is optional.
func Default(text string) Option {
	return func(s *spec) { s.def, s.hasDef = text, true }
}

// Optional lets the variable be unset; the getter then returns the zero
// value (nil for URL). Without Default or Optional a variable is required.
func Optional() Option { return func(s *spec) { s.optional = true } }

// Sensitive masks the value in Redacted and in error messages. Secret
// values, URLs (which may hold a password) and variables whose name looks
// secret (see logging.IsSensitiveKey) are masked without it.
func Sensitive() Option { return func(s *spec) { s.sensitive = true } }

// value is one variable being read.
type value struct {
	name string
	text string
	src  Source
	spec spec
}

// begin looks name up and records it. It returns false when there is
// nothing to parse: unset and optional, or a problem already recorded.
func (l *Loader) begin(name string, opts []Option) (*value, bool) {
	v := &value{name: name}
	for _, o := range opts {
		o(&v.spec)
	}
	if logging.IsSensitiveKey(name) {
		v.spec.sensitive = true
	}
	l.known[name] = true
	text, set := l.lookup(name)
	switch {
	case set && text == "":
		hint := "unset it or give a value"
		if v.spec.hasDef {
			hint = "unset it to use the default"
		}
		l.Invalid(name, "is set but empty; "+hint)
		return v, false
	case set:
		v.text, v.src = text, SourceEnv
	case v.spec.hasDef:
		v.text, v.src = v.spec.def, SourceDefault
	case v.spec.optional:
		l.record(v, "", SourceUnset)
		return v, false
	default:
		problem := "is required but not set"
		if v.spec.alt != "" {
			problem += " (nor is " + v.spec.alt + ")"
		}
		l.Invalid(name, problem)
		return v, false
	}
	l.record(v, v.text, v.src)
	return v, true
}

// bad records that v's text does not parse. The text is quoted for a
// non-sensitive variable, since seeing it is the fastest way to the fix.
func (l *Loader) bad(v *value, problem string) {
	switch {
	case v.spec.sensitive || v.spec.noEcho:
	case v.src == SourceDefault:
		problem += fmt.Sprintf(" (the default %q is invalid)", v.text)
	default:
		problem += fmt.Sprintf(" (got %q)", truncate(v.text, 64))
	}
	l.Invalid(v.name, problem)
}

// String reads a string.
func (l *Loader) String(name string, opts ...Option) string {
	v, ok := l.begin(name, opts)
	if !ok {
		return ""
	}
	return v.text
}

// Int reads a base-10 integer from min to max inclusive.
func (l *Loader) Int(name string, min, max int, opts ...Option) int {
	v, ok := l.begin(name, opts)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v.text)
	if err != nil || n < min || n > max {
		l.bad(v, fmt.Sprintf("must be an integer from %d to %d", min, max))
		return 0
	}
	return n
}

// Duration reads a Go duration ("250ms", "30s", "24h") from min to max
// inclusive. A bare number is rejected: "30" could mean anything.
func (l *Loader) Duration(name string, min, max time.Duration, opts ...Option) time.Duration {
	v, ok := l.begin(name, opts)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v.text)
	if err != nil || d < min || d > max || strings.Trim(v.text, "0123456789") == "" {
		l.bad(v, fmt.Sprintf("must be a duration such as 30s or 5m, from %s to %s", min, max))
		return 0
	}
	return d
}

// Bool reads exactly one of true, false, 1 or 0. strconv.ParseBool's "T",
// "f" and "True" are refused so that one spelling is used everywhere.
func (l *Loader) Bool(name string, opts ...Option) bool {
	v, ok := l.begin(name, opts)
	if !ok {
		return false
	}
	switch v.text {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	l.bad(v, "must be true or false")
	return false
}

// OneOf reads a value that must equal one of allowed, exactly.
func (l *Loader) OneOf(name string, allowed []string, opts ...Option) string {
	v, ok := l.begin(name, opts)
	if !ok {
		return ""
	}
	if !slices.Contains(allowed, v.text) {
		l.bad(v, "must be one of "+strings.Join(allowed, ", "))
		return ""
	}
	return v.text
}

// Environment reads the deployment environment (see ParseEnvironment).
func (l *Loader) Environment(name string, opts ...Option) Environment {
	v, ok := l.begin(name, opts)
	if !ok {
		return ""
	}
	e, err := ParseEnvironment(v.text)
	if err != nil {
		l.bad(v, "must be one of development, sandbox, production")
		return ""
	}
	return e
}

// URL reads an absolute URL with a host, whose scheme is one of schemes
// (any scheme when schemes is empty). A URL may carry a password, so its
// text never appears in errors and Redacted shows it with the password
// masked.
func (l *Loader) URL(name string, schemes []string, opts ...Option) *url.URL {
	v, ok := l.begin(name, append(opts, noEcho()))
	if !ok {
		return nil
	}
	u, err := url.Parse(v.text)
	switch {
	case err != nil || u.Host == "" || strings.TrimSpace(v.text) != v.text:
		l.bad(v, "must be an absolute URL such as https://host:port/path")
		return nil
	case len(schemes) > 0 && !slices.Contains(schemes, u.Scheme):
		l.bad(v, "scheme must be one of "+strings.Join(schemes, ", "))
		return nil
	}
	// Parsed, the URL can be shown with its password masked.
	l.record(&value{name: name, spec: spec{sensitive: v.spec.sensitive}}, u.Redacted(), v.src)
	return u
}

// Secret reads a secret from name, or from the file named by name+"_FILE"
// (the convention of Docker and Kubernetes secrets; one trailing newline is
// removed). Setting both is an error, so there is never a question of which
// one won. A secret cannot have a Default: a missing secret must stop the
// service, never fall back to a built-in one.
func (l *Loader) Secret(name string, opts ...Option) secret.String {
	fileVar := name + "_FILE"
	l.known[fileVar] = true
	var sp spec
	for _, o := range opts {
		o(&sp)
	}
	if sp.hasDef {
		l.Invalid(name, "a secret cannot have a default")
		return secret.String{}
	}
	_, inEnv := l.lookup(name)
	path, inFile := l.lookup(fileVar)
	switch {
	case inEnv && inFile:
		l.known[name] = true
		l.Invalid(name, "both "+name+" and "+fileVar+" are set; set only one")
		return secret.String{}
	case !inFile:
		v, ok := l.begin(name, append(opts, Sensitive(), alternative(fileVar)))
		if !ok {
			return secret.String{}
		}
		return secret.New(v.text)
	}
	l.known[name] = true
	if path == "" {
		l.Invalid(fileVar, "is set but empty; give the path of the secret file")
		return secret.String{}
	}
	data, err := l.readFile(path)
	if err != nil {
		l.Invalid(fileVar, "cannot read the secret file: "+err.Error())
		return secret.String{}
	}
	text := string(data)
	clear(data) // the string is the one copy kept
	if t, ok := strings.CutSuffix(text, "\n"); ok {
		text = strings.TrimSuffix(t, "\r")
	}
	if text == "" {
		l.Invalid(fileVar, "the secret file "+path+" is empty")
		return secret.String{}
	}
	l.record(&value{name: name, spec: spec{sensitive: true}}, text, SourceFile)
	return secret.New(text)
}
